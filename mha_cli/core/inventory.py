"""The weight inventory: every weight tensor of a model, its shape on one tensor-parallel rank and how it splits.

``model_tensors(spec, tp, rank)`` lists, once, what the decoder ``mha_cli.nn.model.build_model`` builds (its
parameter names, Llama's: ``model.layers.N.self_attn.q_proj.weight``) and what a serving engine loads on each rank
(vLLM's and Megatron's layout). Parameter counts, per-rank counts, the matrices a weight format prices and
``verify``'s sharding all read it, so a new tensor is written here and nowhere else. How each ``Split`` cuts a
whole tensor into rank ``rank``'s part:

- ``column``: a contiguous block of dim 0, 1 / tp of it (q/gate/up projections, MLA's up projections, a gate per
  head, attention sinks: everything laid out by query head or MLP column);
- ``kv_heads``: the rank's KV heads of dim 0: a block of n_kv / tp heads, or the one head ``rank // (tp / n_kv)``
  replicated when tp > n_kv;
- ``row``: a contiguous block of the last dim (o_proj, down_proj: their inputs are the rank's heads or columns);
- ``fused_halves``: dim 1 holds the gate half then the up half (routed experts' ``gate_up_proj``); each half's block;
- ``expert_column``: a contiguous block of dim 1 (plain routed experts' ``up_proj`` (E, f, d), Nemotron-H's);
- ``vocab``: the rank's block of rows of the vocabulary padded to a multiple of ``vocab_padding``;
- ``replicated``: whole on every rank (norms, routers, biases added after the all-reduce, MLA's down projections);
- ``unsharded``: a fixed-state mixer's weights, which no tensor-parallel layout here splits (an engine's is not
  modelled: counts divide their total evenly over the ranks).

Pure Python. The contract test (``tests/test_inventory.py``) builds every preset and family fixture on the meta
device at tp 1, 2 and 4, every rank, and requires exactly these names and shapes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Literal, NamedTuple

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import BIASED_CHOICE, ModelSpec, MoESpec, RecurrentSpec
from mha_cli.core.tensor_parallel import (
    ExpertLayout,
    built_vocab_padding,
    expert_width_per_rank,
    kv_heads_per_rank,
    local_experts,
    tp_shard_problem,
    vocab_rows_per_rank,
)
from mha_cli.core.vision_tower import tower_tensors

Split = Literal["column", "kv_heads", "row", "fused_halves", "expert_column", "vocab", "replicated", "unsharded"]
TensorKind = Literal[
    "embedding", "position", "token_type", "embedding_norm", "embedding_projection", "per_layer_embedding",
    "per_layer_input",
    "attention", "attention_gate", "sink", "qk_norm", "latent", "indexer",
    "norm", "mlp", "activation", "router", "moe_norm", "expert", "shared_expert", "mixer",
    "head", "head_transform", "vision",
]  # fmt: skip
"""What a tensor is. ``attention``: q/k/v/o and MLA's projections; ``latent``: MLA's latent norms; ``router``: an
MoE router, Gemma 4's router scales and Qwen2-MoE's gate of the shared expert; ``moe_norm``: A.X K1's norm of the MoE
block's output and Gemma 4's norms of its two branches;
``expert``: the routed experts (one fused tensor per layer); ``shared_expert``: the shared experts, fused into one
MLP; ``vision``: a multimodal model's vision encoder and projector (``core.vision_tower``), listed with the input side
(the torch decoder does not build them); ``per_layer_embedding``: Gemma 4's per-layer token table;
``per_layer_input``: its projection of the token embeddings and each layer's gate and projection of its inputs."""

ATTENTION_KINDS = frozenset({"attention", "attention_gate", "sink", "qk_norm", "latent", "indexer"})
"""The kinds of one attention layer's weights (``ParamBreakdown.attention_per_layer``)."""


class Tensor(NamedTuple):
    """One weight tensor as rank ``rank`` holds it."""

    name: str
    """``build_model``'s parameter name, e.g. ``model.layers.3.mlp.down_proj.weight``."""
    shape: tuple[int, ...]
    """On this rank: (out, in) for a linear layer's weight, (E, out, in) for fused experts."""
    kind: TensorKind
    split: Split
    layer: int | None
    """0-based decoder layer; None for the embeddings, the final norm and the head."""
    buffer: bool = False
    """A persistent buffer saved with the weights but not trained (DeepSeek-V3's expert-choice correction bias,
    xIELU's constants): in the state dict, not counted as a parameter."""

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def part(self) -> str:
        """The tensor's own name within its module, e.g. ``q_proj`` for ``model.layers.3.self_attn.q_proj.weight``."""
        parts = self.name.split(".")
        return parts[-2] if parts[-1] in ("weight", "bias") and len(parts) > 1 else parts[-1]


class _Ranks(NamedTuple):
    """What one rank holds of the heads, widths and experts."""

    tp: int
    heads: int
    kv_heads: int
    experts: ExpertLayout
    vocab_rows: int
    vocab_padding: int
    """The multiple every vocabulary is padded to before it is split (the per-layer table's too)."""


def model_tensors(
    spec: ModelSpec, tp: int = 1, rank: int = 0, *, vocab_padding: int | None = None,
    experts: ExpertLayout | None = None,
) -> list[Tensor]:  # fmt: skip
    """Every weight tensor rank ``rank`` of ``tp`` holds, in ``build_model``'s order of layers.

    ``vocab_padding``: the vocabulary is padded to a multiple of it before it is split (default: what
    ``build_model`` builds, none on one rank and vLLM's 64 over several); ``experts``: how the routed experts spread
    (default: every expert's width split over the tp ranks). Raises ``BadInputError`` when ``tp`` does not shard
    the model or ``rank`` is not one of its ranks."""
    return [t for layer in _layer_range(spec) for t in tensors_of(spec, layer, tp, rank, vocab_padding, experts)]


class Group(NamedTuple):
    """Tensors that recur alike: the input side, the layers that share one layout, or the output side."""

    tensors: list[Tensor]
    """Those of the group's first place (its names)."""
    places: list[int | None]
    """The layers (0-based) holding the same shapes, kinds and splits; ``[None]`` and ``[-1]`` for the sides."""


def tensor_groups(
    spec: ModelSpec, tp: int = 1, rank: int = 0, *, vocab_padding: int | None = None,
    experts: ExpertLayout | None = None,
) -> list[Group]:  # fmt: skip
    """``model_tensors`` without the per-layer copies, for counting: each distinct layer layout listed once, with
    the layers that have it (a layer's tensors depend only on whether it is a mixer layer, its feed-forward (dense,
    MoE or none), whether it is the first (its input norm) or the last (GPT-NeoX-Japanese's o bias), whether it
    is a global layer with its own head geometry (Gemma 4's) and whether it reuses an earlier layer's K/V (Gemma 4's
    hold no k/v projections, E2B's a wider MLP))."""
    ranks = _ranks(spec, tp, rank, vocab_padding, experts)
    layouts: dict[tuple[bool, str, bool, bool, bool, bool], Group] = {}
    for i in range(spec.n_layers):
        own_geometry = spec.attention.per_kind_geometry and spec.layer_kind(i) == "global"
        layout = (spec.layer_kind(i) == "linear", spec.mlp_kind(i), i == 0, i == spec.n_layers - 1, own_geometry,
                  spec.shares_kv(i))  # fmt: skip
        if layout not in layouts:
            layouts[layout] = Group(list(_layer(spec, i, ranks)), [])
        layouts[layout].places.append(i)
    sides = Group(list(_input_side(spec, ranks)), [None]), Group(list(_output_side(spec, ranks)), [-1])
    return [sides[0], *layouts.values(), sides[1]]


def _layer_range(spec: ModelSpec) -> list[int | None]:
    """The order tensors are listed in: the embeddings (None), the layers, the final parts (None again, once)."""
    return [None, *range(spec.n_layers), -1]


def tensors_of(
    spec: ModelSpec, layer: int | None, tp: int = 1, rank: int = 0, vocab_padding: int | None = None,
    experts: ExpertLayout | None = None,
) -> list[Tensor]:  # fmt: skip
    """The tensors of one decoder layer (0-based), of the input side (``None``) or of the output side (``-1``)."""
    ranks = _ranks(spec, tp, rank, vocab_padding, experts)
    if layer is None:
        return list(_input_side(spec, ranks))
    if layer == -1:
        return list(_output_side(spec, ranks))
    return list(_layer(spec, layer, ranks))


def _ranks(spec: ModelSpec, tp: int, rank: int, vocab_padding: int | None, experts: ExpertLayout | None) -> _Ranks:
    if not 0 <= rank < tp:
        raise BadInputError(f"rank ({rank}) must lie in [0, tp={tp})")
    problem = tp_shard_problem(spec, tp, experts)
    if problem is not None:
        raise BadInputError(problem)
    padding = built_vocab_padding(tp) if vocab_padding is None else vocab_padding
    layout = ExpertLayout(tp) if experts is None else experts
    kv_heads = (
        kv_heads_per_rank(spec, tp, mla_cache="decompressed")
        if spec.attention.mla is None
        else spec.attention.n_heads // tp
    )
    return _Ranks(
        tp,
        spec.attention.n_heads // tp,
        kv_heads,
        layout,
        vocab_rows_per_rank(spec.embeddings.vocab_size, tp, padding),
        padding,
    )


# The input and output sides ---------------------------------------------------------------------------------------


def _norm(spec: ModelSpec, name: str, width: int, layer: int | None, kind: TensorKind = "norm", *,
          weights: bool | None = None) -> Iterator[Tensor]:  # fmt: skip
    """A norm of the model's kind over ``width`` values: an RMSNorm's weight; a LayerNorm's weight and, with
    ``norm_bias``, bias; nothing for a norm without weights (OLMo's)."""
    if not (spec.block.norm_weights if weights is None else weights):
        return
    yield Tensor(f"{name}.weight", (width,), kind, "replicated", layer)
    if spec.block.norm == "layernorm" and spec.block.norm_bias:
        yield Tensor(f"{name}.bias", (width,), kind, "replicated", layer)


def _input_side(spec: ModelSpec, ranks: _Ranks) -> Iterator[Tensor]:
    """The token embedding (the rank's vocabulary rows), learned positions and token types, the embedding
    projection (ELECTRA), the embedding norm (BLOOM, BERT) and a vision tower: what a first pipeline stage holds."""
    width = spec.embeddings.width or spec.d_model
    yield Tensor("model.embed_tokens.weight", (ranks.vocab_rows, width), "embedding", "vocab", None)
    if spec.embeddings.positions:
        yield Tensor("model.embed_positions.weight", (spec.embeddings.positions, width), "position", "replicated", None)
    if spec.embeddings.token_types:
        types = (spec.embeddings.token_types, width)
        yield Tensor("model.embed_token_types.weight", types, "token_type", "replicated", None)
    if spec.embeddings.width is not None:
        yield Tensor("model.embed_project.weight", (spec.d_model, width), "embedding_projection", "replicated", None)
        yield Tensor("model.embed_project.bias", (spec.d_model,), "embedding_projection", "replicated", None)
    if spec.embeddings.normed:
        yield from _norm(spec, "model.embed_norm", width, None, "embedding_norm", weights=True)
    per_layer = spec.embeddings.per_layer_inputs
    if per_layer is not None:  # Gemma 4: the per-layer table (vLLM: vocabulary-parallel), its projection (column)
        rows = vocab_rows_per_rank(per_layer.vocab_size, ranks.tp, ranks.vocab_padding)
        total = spec.n_layers * per_layer.width
        yield Tensor("model.embed_tokens_per_layer.weight", (rows, total), "per_layer_embedding", "vocab", None)
        yield Tensor(
            "model.per_layer_model_projection.weight", (total // ranks.tp, spec.d_model), "per_layer_input", "column",
            None,
        )  # fmt: skip
        yield from _norm(spec, "model.per_layer_projection_norm", per_layer.width, None)
    if spec.vision is not None:  # the vision encoder and projector, on the stage that embeds the prompt
        for tower in tower_tensors(spec.vision, ranks.tp):
            yield Tensor(tower.name, tower.shape, "vision", tower.split, None)


def _output_side(spec: ModelSpec, ranks: _Ranks) -> Iterator[Tensor]:
    """The final norm, the LM head (the rank's vocabulary rows; a bias of its own when tied, CTRL's) and BERT's
    head transform: what a last pipeline stage holds."""
    if spec.embeddings.final_norm:
        yield from _norm(spec, "model.norm", spec.d_model, None)
    head_width = spec.embeddings.lm_head_size or spec.embeddings.width or spec.d_model
    if not spec.embeddings.tied:
        yield Tensor("lm_head.weight", (ranks.vocab_rows, head_width), "head", "vocab", None)
    if spec.embeddings.lm_head_bias:
        yield Tensor("lm_head.bias", (ranks.vocab_rows,), "head", "vocab", None)
    if spec.embeddings.lm_head_transform is not None:
        yield Tensor("head_transform.dense.weight", (head_width, spec.d_model), "head_transform", "replicated", None)
        if spec.embeddings.lm_head_transform_bias:
            yield Tensor("head_transform.dense.bias", (head_width,), "head_transform", "replicated", None)
        yield from _norm(spec, "head_transform.norm", head_width, None, "head_transform", weights=True)


# One decoder layer ------------------------------------------------------------------------------------------------


def _layer(spec: ModelSpec, i: int, ranks: _Ranks) -> Iterator[Tensor]:
    """Layer ``i``'s norms, attention (or fixed-state mixer), a mixer beside attention, and MLP or MoE (neither, nor
    the norm before them, on a layer without a feed-forward)."""
    prefix = f"model.layers.{i}"
    post_norms = spec.block.norm_placement == "post"  # OLMo 2: no input norm, each sublayer's output normed
    if not post_norms and (i > 0 or spec.block.first_input_norm):
        yield from _norm(spec, f"{prefix}.input_layernorm", spec.d_model, i)
    if spec.layer_kind(i) == "linear":
        assert spec.recurrent is not None
        yield from _mixer(spec.recurrent, spec.d_model, f"{prefix}.self_attn", i, ffn_width=spec.block.d_ff)
    elif spec.attention.mla is not None:
        yield from _mla(spec, f"{prefix}.self_attn", i, ranks)
    else:
        yield from _attention(spec, f"{prefix}.self_attn", i, ranks)
    if spec.recurrent is not None and spec.recurrent.on_attention_layers and spec.layer_kind(i) != "linear":
        yield from _mixer(spec.recurrent, spec.d_model, f"{prefix}.mixer", i)  # Falcon-H1: beside attention
    per_layer = spec.embeddings.per_layer_inputs
    if per_layer is not None:  # Gemma 4: the layer's gate and projection of its inputs (vLLM: replicated linears)
        yield from _linear(f"{prefix}.per_layer_input_gate", per_layer.width, spec.d_model, "per_layer_input",
                           "replicated", i)  # fmt: skip
        yield from _linear(f"{prefix}.per_layer_projection", spec.d_model, per_layer.width, "per_layer_input",
                           "replicated", i)  # fmt: skip
        yield from _norm(spec, f"{prefix}.post_per_layer_input_norm", spec.d_model, i)
    if not spec.has_mlp(i):  # Nemotron-H's mixer-only block: its one norm, its mixer
        return
    if spec.block.n_norms >= 2:
        yield from _norm(spec, f"{prefix}.post_attention_layernorm", spec.d_model, i)
    if spec.block.n_norms == 4:
        yield from _norm(spec, f"{prefix}.pre_feedforward_layernorm", spec.d_model, i)
    if post_norms or spec.block.n_norms == 4:
        yield from _norm(spec, f"{prefix}.post_feedforward_layernorm", spec.d_model, i)
    if spec.mlp_kind(i) == "moe":
        yield from _moe(spec, prefix, i, ranks)
    else:
        width = spec.mlp_width(i) // ranks.tp
        yield from _mlp(spec, f"{prefix}.mlp", i, width, spec.block.mlp == "gated", spec.block.mlp_bias, "mlp")
        if spec.block.activation == "xielu":  # Apertus: the activation's own two weights
            for part in ("alpha_p", "alpha_n"):
                yield Tensor(f"{prefix}.mlp.act_fn.{part}", (1,), "activation", "replicated", i)
            for constant in ("beta", "eps"):
                yield Tensor(f"{prefix}.mlp.act_fn.{constant}", (), "activation", "replicated", i, True)


def _linear(name: str, out: int, inp: int, kind: TensorKind, split: Split, layer: int, *, bias: bool = False,
            bias_split: Split | None = None) -> Iterator[Tensor]:  # fmt: skip
    """A linear layer's weight (out, in) and, with ``bias``, its bias (out,): split as the weight's rows, or
    replicated for a row-parallel layer (added once, after the all-reduce)."""
    yield Tensor(f"{name}.weight", (out, inp), kind, split, layer)
    if bias:
        split_of_bias = bias_split or ("replicated" if split == "row" else split)
        yield Tensor(f"{name}.bias", (out,), kind, split_of_bias, layer)


def _attention(spec: ModelSpec, prefix: str, i: int, ranks: _Ranks) -> Iterator[Tensor]:
    """q (with Qwen3-Next's gate, each head's query then its gate), k, v by KV heads, o by rows; q/k norms per head
    (replicated) or over the projection; gpt-oss's sinks and Laguna's gate by query heads. A global layer with its
    own head geometry (Gemma 4) has its heads' width and KV heads, and no v_proj under ``global_k_eq_v``; a layer
    reusing an earlier one's K/V without projections of its own (Gemma 4's) has no k_proj, v_proj or k norm."""
    kind = spec.layer_kind(i)
    d, h = spec.d_model, spec.attention.head_dim_of(kind)
    kv_heads = ranks.kv_heads if kind != "global" else kv_heads_per_rank(spec, ranks.tp, "decompressed", kind)
    q_width = ranks.heads * h
    q_out = 2 * q_width if spec.attention.output_gate else q_width
    bias = spec.attention.qkv_bias
    projects_kv = spec.layers.shared_kv_projections or not spec.shares_kv(i)  # Gemma 4's sharing layers: q and o
    yield from _linear(f"{prefix}.q_proj", q_out, d, "attention", "column", i, bias=bias)
    if projects_kv:
        yield from _linear(f"{prefix}.k_proj", kv_heads * h, d, "attention", "kv_heads", i, bias=bias)
    if projects_kv and not (spec.attention.global_k_eq_v and kind == "global"):
        yield from _linear(f"{prefix}.v_proj", kv_heads * h, d, "attention", "kv_heads", i, bias=bias)
    o_bias = spec.attention.o_bias or (
        spec.attention.last_o_bias and i == spec.n_layers - 1
    )  # GPT-NeoX-Japanese: the last layer's
    yield from _linear(f"{prefix}.o_proj", d, q_width, "attention", "row", i, bias=o_bias)
    if spec.attention.qk_norm:
        if spec.attention.qk_norm_type == "layernorm":  # Persimmon: per-head LayerNorms, weight and bias
            for norm in ("q_norm", "k_norm"):
                yield Tensor(f"{prefix}.{norm}.weight", (h,), "qk_norm", "replicated", i)
                yield Tensor(f"{prefix}.{norm}.bias", (h,), "qk_norm", "replicated", i)
        elif spec.attention.qk_norm_span == "projection":  # OLMo 2: over the whole projection (tp 1 only in torch)
            yield Tensor(f"{prefix}.q_norm.weight", (spec.attention.n_heads * h,), "qk_norm", "replicated", i)
            yield Tensor(f"{prefix}.k_norm.weight", (spec.attention.kv_heads_of(kind) * h,), "qk_norm", "replicated", i)
        else:
            yield Tensor(f"{prefix}.q_norm.weight", (h,), "qk_norm", "replicated", i)
            if projects_kv:
                yield Tensor(f"{prefix}.k_norm.weight", (h,), "qk_norm", "replicated", i)
    if spec.attention.sinks:  # one logit per query head
        yield Tensor(f"{prefix}.sinks", (ranks.heads,), "sink", "column", i)
    if spec.attention.softplus_gate is not None:  # Laguna's g_proj: a gate per head or per element of each head
        gate_width = ranks.heads if spec.attention.softplus_gate == "head" else q_width
        yield from _linear(f"{prefix}.g_proj", gate_width, d, "attention_gate", "column", i)


def _mla(spec: ModelSpec, prefix: str, i: int, ranks: _Ranks) -> Iterator[Tensor]:
    """MLA: the down projections and latent norms whole on every rank, the up projections and o by heads, and
    DeepSeek-V3.2's indexer (replicated: every rank scores every key)."""
    mla, d = spec.attention.mla, spec.d_model
    assert mla is not None
    q_out = ranks.heads * mla.qk_head_dim
    if mla.q_lora_rank is None:
        yield from _linear(f"{prefix}.q_proj", q_out, d, "attention", "column", i)
    else:
        yield from _linear(
            f"{prefix}.q_a_proj", mla.q_lora_rank, d, "attention", "replicated", i, bias=spec.attention.qkv_bias
        )
        yield Tensor(f"{prefix}.q_a_layernorm.weight", (mla.q_lora_rank,), "latent", "replicated", i)
        yield from _linear(f"{prefix}.q_b_proj", q_out, mla.q_lora_rank, "attention", "column", i)
    kv_down = mla.kv_lora_rank + mla.qk_rope_head_dim
    yield from _linear(
        f"{prefix}.kv_a_proj_with_mqa", kv_down, d, "attention", "replicated", i, bias=spec.attention.qkv_bias
    )
    yield Tensor(f"{prefix}.kv_a_layernorm.weight", (mla.kv_lora_rank,), "latent", "replicated", i)
    kv_up = ranks.heads * (mla.qk_nope_head_dim + mla.v_head_dim)
    yield from _linear(f"{prefix}.kv_b_proj", kv_up, mla.kv_lora_rank, "attention", "column", i)
    yield from _linear(
        f"{prefix}.o_proj", d, ranks.heads * mla.v_head_dim, "attention", "row", i, bias=spec.attention.o_bias
    )
    indexer = mla.indexer
    if indexer is not None and indexer.index_n_heads is not None:
        width, heads = indexer.index_head_dim, indexer.index_n_heads
        q_in = mla.q_lora_rank or d
        yield from _linear(f"{prefix}.indexer.wq_b", heads * width, q_in, "indexer", "replicated", i)
        yield from _linear(f"{prefix}.indexer.wk", width, d, "indexer", "replicated", i)
        yield Tensor(f"{prefix}.indexer.k_norm.weight", (width,), "indexer", "replicated", i)
        yield Tensor(f"{prefix}.indexer.k_norm.bias", (width,), "indexer", "replicated", i)
        yield from _linear(f"{prefix}.indexer.weights_proj", heads, d, "indexer", "replicated", i)


def _mlp(spec: ModelSpec, prefix: str, i: int, width: int, gated: bool, bias: bool,
         kind: TensorKind) -> Iterator[Tensor]:  # fmt: skip
    """gate (if gated) and up by columns at the rank's ``width``, down by rows (its bias replicated)."""
    d = spec.d_model
    if gated:
        yield from _linear(f"{prefix}.gate_proj", width, d, kind, "column", i, bias=bias)
    yield from _linear(f"{prefix}.up_proj", width, d, kind, "column", i, bias=bias)
    yield from _linear(f"{prefix}.down_proj", d, width, kind, "row", i, bias=bias)


class _MoeNames(NamedTuple):
    """Where one layer's MoE tensors sit: the block, its router, routed experts and shared experts."""

    block: str
    router: str
    experts: str
    shared: str


def _moe_names(moe: MoESpec, layer: str) -> _MoeNames:
    """Llama-style names under ``{layer}.mlp`` (DeepSeek's ``shared_experts``, Qwen2-MoE's ``shared_expert``); Gemma 4's
    block (``branch_norms``) as transformers 5.24's ``Gemma4TextDecoderLayer`` names it, beside its dense MLP: the
    router ``{layer}.router.proj``, the experts ``{layer}.experts``, the dense MLP ``{layer}.mlp``, the norms on the
    layer; so a checkpoint's ignore list (``layers.N.mlp*``: the dense MLP, not the experts) names the same modules."""
    if moe.branch_norms:
        return _MoeNames(layer, f"{layer}.router.proj", f"{layer}.experts", f"{layer}.mlp")
    shared = f"{layer}.mlp.shared_expert" if moe.shared_expert_gate else f"{layer}.mlp.shared_experts"
    return _MoeNames(f"{layer}.mlp", f"{layer}.mlp.gate", f"{layer}.mlp.experts", shared)


def _moe(spec: ModelSpec, layer: str, i: int, ranks: _Ranks) -> Iterator[Tensor]:
    """The router (replicated, with gpt-oss's bias), the routed experts fused (E, 2f, d) (plain experts: (E, f, d))
    and (E, d, f) in the rank's layout, the shared experts as one MLP n_shared x d_ff_shared wide (by columns), of
    the model's MLP kind, Qwen2-MoE's gate of the shared expert, A.X K1's output norm, Gemma 4's branch norms and
    router scales (replicated); named as ``_moe_names`` says."""
    moe, d = spec.block.moe, spec.d_model
    assert moe is not None
    names = _moe_names(moe, layer)
    if moe.output_norm:
        yield Tensor(f"{names.block}.post_mlp_layernorm.weight", (d,), "moe_norm", "replicated", i)
    for norm in ("pre_feedforward_layernorm_2", "post_feedforward_layernorm_1", "post_feedforward_layernorm_2"):
        if moe.branch_norms:  # Gemma 4: the dense MLP's and the experts' branches normed apart
            yield Tensor(f"{names.block}.{norm}.weight", (d,), "moe_norm", "replicated", i)
    yield Tensor(f"{names.router}.weight", (moe.n_experts, d), "router", "replicated", i)
    if moe.router_scales:  # Gemma 4: the router's input scale and its scale per expert, beside router.proj
        router = names.router.removesuffix(".proj")
        yield Tensor(f"{router}.scale", (d,), "router", "replicated", i)
        yield Tensor(f"{router}.per_expert_scale", (moe.n_experts,), "router", "replicated", i)
    if moe.router_bias:
        yield Tensor(f"{names.router}.bias", (moe.n_experts,), "router", "replicated", i)
    if moe.topk_method in BIASED_CHOICE:  # DeepSeek-V3's correction bias on the choice of experts
        yield Tensor(f"{names.router}.e_score_correction_bias", (moe.n_experts,), "router", "replicated", i, True)
    n_local, width = local_experts(spec, ranks.experts), expert_width_per_rank(spec, ranks.experts)
    gated = spec.block.mlp == "gated"
    inputs: Split = "replicated" if ranks.experts.whole else "fused_halves" if gated else "expert_column"
    rows: Split = "replicated" if ranks.experts.whole else "row"
    up = "gate_up_proj" if gated else "up_proj"
    yield Tensor(f"{names.experts}.{up}", (n_local, (2 if gated else 1) * width, d), "expert", inputs, i)
    yield Tensor(f"{names.experts}.down_proj", (n_local, d, width), "expert", rows, i)
    if moe.expert_bias:
        yield Tensor(f"{names.experts}.{up}_bias", (n_local, (2 if gated else 1) * width), "expert", inputs, i)
        yield Tensor(f"{names.experts}.down_proj_bias", (n_local, d), "expert", "replicated", i)
    shared = moe.n_shared_experts * (moe.d_ff_shared or moe.d_ff_expert)
    if shared:
        yield from _mlp(spec, names.shared, i, shared // ranks.tp, gated, False, "shared_expert")
        if moe.shared_expert_gate:
            yield Tensor(f"{layer}.mlp.shared_expert_gate.weight", (1, d), "router", "replicated", i)


# Fixed-state mixers -----------------------------------------------------------------------------------------------


def _mixer(state: RecurrentSpec, d: int, prefix: str, i: int, *, ffn_width: int = 0) -> Iterator[Tensor]:
    """A fixed-state mixer's weights as ``nn.mixers`` builds each kind: Gated DeltaNet (Qwen3-Next, Qwen3.5),
    Mamba-1 and -2, MiniMax's lightning attention, Kimi's KDA, LFM2's short convolution; xLSTM's mLSTM and RWKV-4's
    time and channel mix (not built; ``ffn_width``: the channel mix's, the model's d_ff)."""

    def linear(name: str, out: int, inp: int, bias: bool = False) -> Iterator[Tensor]:
        return _linear(f"{prefix}.{name}", out, inp, "mixer", "unsharded", i, bias=bias, bias_split="unsharded")

    def vector(name: str, *shape: int) -> Tensor:
        return Tensor(f"{prefix}.{name}", shape, "mixer", "unsharded", i)

    def conv(name: str, channels: int, bias: bool) -> Iterator[Tensor]:
        yield vector(f"{name}.weight", channels, 1, state.conv_kernel)
        if bias:
            yield vector(f"{name}.bias", channels)

    kind = state.kind
    if kind == "gated_deltanet":
        value_width = state.n_heads * state.state_dim
        key_width = (state.conv_dim - value_width) // 2
        if state.split_projections:  # Qwen3.5
            yield from linear("in_proj_qkv", state.conv_dim, d)
            yield from linear("in_proj_z", value_width, d)
            yield from linear("in_proj_b", state.n_heads, d)
            yield from linear("in_proj_a", state.n_heads, d)
        else:  # Qwen3-Next
            yield from linear("in_proj_qkvz", 2 * key_width + 2 * value_width, d)
            yield from linear("in_proj_ba", 2 * state.n_heads, d)
        yield from conv("conv1d", state.conv_dim, False)
        yield vector("dt_bias", state.n_heads)
        yield vector("A_log", state.n_heads)
        yield vector("norm.weight", state.state_dim)
        yield from linear("out_proj", d, value_width)
    elif kind == "mamba":
        inner, rank = state.n_heads, state.dt_rank or math.ceil(d / 16)
        yield from linear("in_proj", 2 * inner, d, state.in_proj_bias)
        yield from conv("conv1d", inner, state.has_conv_bias)
        yield from linear("x_proj", rank + 2 * state.state_dim, inner)
        yield from linear("dt_proj", inner, rank, True)
        yield vector("A_log", inner, state.state_dim)
        yield vector("D", inner)
        yield from linear("out_proj", d, inner, state.out_proj_bias)
        if state.output_norm and not state.weightless_norms:  # Jamba's dt, B and C norms (Falcon-Mamba's: none)
            yield vector("dt_layernorm.weight", rank)
            yield vector("b_layernorm.weight", state.state_dim)
            yield vector("c_layernorm.weight", state.state_dim)
    elif kind == "mamba2":
        inner = state.conv_dim - 2 * state.n_groups * state.state_dim  # the conv runs over x, B and C
        yield from linear("in_proj", inner + state.conv_dim + state.n_heads, d, state.in_proj_bias)
        yield from conv("conv1d", state.conv_dim, state.has_conv_bias)
        yield vector("dt_bias", state.n_heads)
        yield vector("A_log", state.n_heads)
        yield vector("D", state.n_heads)
        if state.output_norm:
            yield vector("norm.weight", inner)
        yield from linear("out_proj", d, inner, state.out_proj_bias)
    elif kind == "lightning":
        width = state.n_heads * state.head_dim
        yield from linear("qkv_proj", 3 * width, d)
        yield from linear("output_gate", width, d)
        yield vector("norm.weight", width)
        yield from linear("out_proj", d, width)
    elif kind == "kda":
        width, head = state.n_heads * state.head_dim, state.head_dim
        for name in ("q_proj", "k_proj", "v_proj"):
            yield from linear(name, width, d)
        yield from conv("conv1d", 3 * width, False)
        yield from linear("forget_gate.f_a_proj", head, d)
        yield from linear("forget_gate.f_b_proj", width, head)
        yield vector("forget_gate.dt_bias", width)
        yield vector("forget_gate.A_log", 1, 1, state.n_heads, 1)
        yield from linear("b_proj", state.n_heads, d)
        yield from linear("g_a_proj", head, d)
        yield from linear("g_b_proj", width, head)
        yield vector("o_norm.weight", head)
        yield from linear("o_proj", d, width)
    elif kind == "rwkv":  # RWKV-4: the time mix (attention), then ln2 and the channel mix (its feed-forward)
        width = state.n_heads  # channels
        for name in ("time_decay", "time_first"):
            yield vector(f"attention.{name}", width)
        for name in ("key", "value", "receptance"):
            yield vector(f"attention.time_mix_{name}", 1, 1, d)
            yield from linear(f"attention.{name}", width, d)
        yield from linear("attention.output", d, width)
        yield vector("ln2.weight", d)
        yield vector("ln2.bias", d)
        for name in ("key", "receptance"):
            yield vector(f"feed_forward.time_mix_{name}", 1, 1, d)
        yield from linear("feed_forward.key", ffn_width, d)
        yield from linear("feed_forward.receptance", d, d)
        yield from linear("feed_forward.value", d, ffn_width)
    elif kind == "mlstm":  # xLSTM's mLSTM layer: q, k of qk width, v and the output gate of v width, 2 scalar gates
        qk_width, v_width = state.n_heads * state.head_dim, state.n_heads * state.state_dim
        yield from linear("q", qk_width, d)
        yield from linear("k", qk_width, d)
        yield from linear("v", v_width, d)
        yield from linear("ogate_preact", v_width, d)
        yield from linear("igate_preact", state.n_heads, d, True)
        yield from linear("fgate_preact", state.n_heads, d, True)
        yield vector("multihead_norm.weight", v_width)
        yield from linear("out_proj", d, v_width)
    elif kind == "short_conv":
        bias = state.in_proj_bias
        yield from linear("in_proj", 3 * state.conv_dim, d, bias)
        yield from conv("conv", state.conv_dim, bias)
        yield from linear("out_proj", d, state.conv_dim, bias)
    else:
        raise BadInputError(f"no weight inventory for a {kind!r} mixer")
