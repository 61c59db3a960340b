"""Parameter counts, of the whole model and of one tensor-parallel rank, read from the weight inventory.

``core.inventory`` lists every weight tensor (its shape on a rank, its kind and split); this module adds them up:
``count_params`` (the checkpoint: one device, the vocabulary unpadded) by part of the model, ``params_per_rank``
what one of tp ranks holds (the vocabulary padded as vLLM pads it, replicated parts on every rank, a fixed-state
mixer's weights divided evenly), and ``matrices_per_rank`` the linear layers' matrices a weight format prices and the
cost model multiplies by. Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple

from mha_cli.core.inventory import ATTENTION_KINDS, Group, Tensor, TensorKind, tensor_groups
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import VOCAB_PADDING, ExpertLayout, tp_shard_problem


class ParamBreakdown(Record):
    """Parameter counts by part of the model; ``total`` is what the weights cost in memory.

    A ``*_per_layer`` count is one layer's (attention: the first attending layer other than the last; norms: the last
    layer's; the MLPs and mixers: the first layer that has one); layers of one model may differ (Gemma 4's sliding and
    full attention, E2B's wide MLPs, K/V-sharing layers), so a part's ``*_total`` is summed over every layer, not
    multiplied. The totals, ``embeddings``, ``final_norm`` and ``vision_tower`` add up to ``total``."""

    attention_per_layer: int
    mlp_dense_per_layer: int
    mlp_moe_per_layer: int
    """All experts (routed + shared) and the router of one MoE layer; 0 for dense models."""
    norms_per_layer: int
    n_dense_mlp_layers: int
    n_moe_layers: int
    embeddings: int
    """Input embedding + output head (if untied, with its bias if any) + learned positions + an embedding norm."""
    lookup_tables: int
    """Weights read by row lookup, not multiplied: the input embedding when untied (tied, the
    head's matmul reads it whole) and learned positions. A step reads only its tokens' rows."""
    final_norm: int
    total: int
    """Every weight: what the weights cost in memory."""
    active: int
    """Weights one token multiplies by: total less the routed experts it does not visit and less the
    lookup tables (input embedding when untied, learned positions), which are read, not multiplied.
    This is how published active counts are quoted (gpt-oss-20b 3.6B, DeepSeek-V2-Lite 2.4B) and
    what 2 x active x tokens FLOPs counts."""

    mixer_per_layer: int = 0
    """Weights of one fixed-state mixer (Gated DeltaNet, Mamba, lightning attention, KDA); 0 without one."""
    n_attention_layers: int = 0
    """Layers with attention: every layer but the ``linear`` ones."""
    n_mixer_layers: int = 0
    """Layers with a fixed-state mixer: the ``linear`` ones, or every layer when it runs beside attention."""
    expert_params: int = 0
    """One routed expert's weights (gate, up, down and their biases); 0 without MoE."""
    vision_tower: int = 0
    """A multimodal model's vision encoder and projector (``core.vision_tower``): in ``total``, not in ``active``
    (a text token's step does not run them); 0 without one."""
    attention_total: int = 0
    """Every layer's attention weights (q/k/v/o, gates, sinks, QK norms, MLA's latents, an indexer)."""
    mlp_dense_total: int = 0
    """Every dense MLP's weights."""
    mlp_moe_total: int = 0
    """Every MoE layer's experts (routed and shared), routers and MoE norms."""
    norms_total: int = 0
    """Every layer's norms (the final norm is ``final_norm``)."""
    mixer_total: int = 0
    """Every fixed-state mixer's weights."""
    per_layer_inputs_total: int = 0
    """Gemma 4's gate and projection of each layer's per-layer input (its table and the input-side projection are in
    ``embeddings``); 0 without them."""


MOE_KINDS = frozenset({"router", "moe_norm", "expert", "shared_expert"})
"""The kinds of one MoE layer's MLP: routed and shared experts, the router (and Qwen2-MoE's shared gate), A.X K1's
output norm."""


def _sum(tensors: Iterable[Tensor], kinds: Iterable[TensorKind] | None = None) -> int:
    """Parameters (buffers left out) of ``tensors``, of ``kinds`` only when given."""
    wanted = None if kinds is None else frozenset(kinds)
    return sum(t.numel for t in tensors if not t.buffer and (wanted is None or t.kind in wanted))


def count_params(model: ModelSpec) -> ParamBreakdown:
    """Every parameter of ``model`` as the checkpoint holds it (one device, vocabulary unpadded), by part."""
    groups = tensor_groups(model, vocab_padding=1)
    inputs, layers, outputs = groups[0].tensors, groups[1:-1], groups[-1].tensors
    total = sum(_sum(group.tensors) * len(group.places) for group in groups)

    def first(test) -> list[Tensor]:
        return next((group.tensors for group in layers if test(group.places[0])), [])

    attending = first(lambda i: model.layer_kind(i) != "linear" and (i < model.n_layers - 1 or model.n_layers == 1))
    moe_layer = first(model.is_moe_layer)
    expert_weights = _sum(moe_layer, ["expert"])
    n_moe = model.n_moe_layers
    tables = {"embedding": not model.embeddings.tied, "position": True, "token_type": True, "per_layer_embedding": True}
    lookup_tables = sum(t.numel for t in inputs if tables.get(t.kind, False))
    final_norm = _sum(outputs, ["norm"])
    vision = _sum(inputs, ["vision"])

    def over_layers(kinds: Iterable[TensorKind]) -> int:
        return sum(_sum(group.tensors, kinds) * len(group.places) for group in layers)

    inactive = 0 if model.block.moe is None else n_moe * (model.block.moe.n_experts - model.block.moe.n_active_experts)
    per_expert = expert_weights // model.block.moe.n_experts if model.block.moe is not None else 0
    return ParamBreakdown(
        attention_per_layer=_sum(attending or first(lambda i: model.layer_kind(i) != "linear"), ATTENTION_KINDS),
        mlp_dense_per_layer=_sum(first(lambda i: model.mlp_kind(i) == "dense"), ["mlp", "activation"]),
        mlp_moe_per_layer=_sum(moe_layer, MOE_KINDS),
        norms_per_layer=_sum(layers[-1].tensors, ["norm"]) if layers else 0,
        n_dense_mlp_layers=model.n_dense_mlp_layers,
        n_moe_layers=n_moe,
        embeddings=_sum(inputs) - vision + _sum(outputs) - final_norm,
        lookup_tables=lookup_tables,
        final_norm=final_norm,
        total=total,
        active=total - inactive * per_expert - lookup_tables - vision,
        mixer_per_layer=_sum(first(model.holds_state), ["mixer"]),
        n_attention_layers=model.n_layers - model.count_layers("linear"),
        n_mixer_layers=sum(model.holds_state(i) for i in range(model.n_layers)),
        expert_params=per_expert,
        vision_tower=vision,
        attention_total=over_layers(ATTENTION_KINDS),
        mlp_dense_total=over_layers(["mlp", "activation"]),
        mlp_moe_total=over_layers(MOE_KINDS),
        norms_total=over_layers(["norm"]),
        mixer_total=over_layers(["mixer"]),
        per_layer_inputs_total=over_layers(["per_layer_input"]),
    )


def attention_params(model: ModelSpec) -> int:
    """Weights (and biases) of one attention layer of ``model``."""
    return count_params(model).attention_per_layer


# One rank ---------------------------------------------------------------------------------------------------------


def group_params(group: Group, tp: int = 1) -> int:
    """One of ``group``'s places' parameters on one rank of ``tp``: a fixed-state mixer's weights, which no layout here splits,
    divided evenly (rounded up; which of its parts an engine replicates is not modelled)."""
    mixer = _sum(group.tensors, ["mixer"])
    return _sum(group.tensors) - mixer + -(-mixer // tp)


def params_per_rank(
    model: ModelSpec, tp: int, vocab_padding: int = VOCAB_PADDING, experts: ExpertLayout | None = None
) -> int:
    """Every weight one rank of ``tp`` holds (replicated parts counted on every rank); the vocabulary padded to a
    multiple of ``vocab_padding`` (vLLM's 64 by default; 1 for the checkpoint's own count); the routed experts in
    ``experts``' layout (default: sharded over the tp ranks).

    Raises ``BadInputError`` when ``tp`` does not split the heads or the MLP widths.
    """
    groups = tensor_groups(model, tp, vocab_padding=vocab_padding, experts=experts)
    return sum(group_params(group, tp) * len(group.places) for group in groups)


def weight_params_per_device(
    model: ModelSpec, tp: int, vocab_padding: int = VOCAB_PADDING, experts: ExpertLayout | None = None
) -> int:
    """Weights one device of a ``tp``-rank group holds as a serving engine loads them: this layout's per-rank count
    (embedding and LM head split by the padded vocabulary; norms, routers and MLA down projections whole on every
    rank) when ``tp`` shards the model, else (heads or widths that ``tp`` does not divide: a layout nobody builds)
    the total split evenly, rounded up."""
    if tp_shard_problem(model, tp, experts) is None:
        return params_per_rank(model, tp, vocab_padding, experts)
    return -(-count_params(model).total // tp)


# Matrices ---------------------------------------------------------------------------------------------------------

MatrixKind = Literal["attention", "mlp", "expert"]


class Matrix(NamedTuple):
    """``count`` weight matrices of ``out_features`` x ``in_features`` on one rank (no biases, norms or routers)."""

    kind: MatrixKind
    """``attention`` (q/k/v/o, MLA's projections, Laguna's gate), ``mlp`` (dense MLPs, shared experts) or
    ``expert`` (routed)."""
    out_features: int
    in_features: int
    count: int
    part: str = ""
    """The projection: ``q_proj``, ``kv`` (k and v alike), ``o_proj``, ``gate_proj``, ``kv_b_proj``, ..."""


_MATRIX_OF: dict[str, MatrixKind] = {"attention": "attention", "attention_gate": "attention", "mlp": "mlp",
                                     "shared_expert": "mlp", "expert": "expert", "per_layer_input": "mlp"}  # fmt: skip
"""Gemma 4's per-layer input projections are linears like an MLP's (vLLM builds them with the checkpoint's
``quant_config``), priced as dense ``mlp`` matrices."""
QUANTISED_INDEXER_PARTS = frozenset({"wq_b"})
"""The parts of DeepSeek-V3.2's indexer that vLLM builds with the checkpoint's ``quant_config``, priced as attention
matrices (trial 375 #1: the FP8 checkpoint's wq_b was priced in bf16). ``Indexer`` in ``deepseek_v2.py``: ``wq_b``
a ReplicatedLinear with ``quant_config`` in 0.11.0, 0.22.0, 0.28.0, 0.30.0 and 0.34.0; ``wk`` one too in 0.11.0, but
fused with ``weights_proj`` into a ``MergedColumnParallelLinear`` with ``quant_config=None`` from 0.22.0 ("FP8 wk
weights are upcasted to BF16 during loading", 0.34.0), so ``wk`` and ``weights_proj`` stay bf16 as the engine
holds them."""


def tensor_matrices(tensor: Tensor) -> Iterable[tuple[tuple[MatrixKind, str, int, int], int]]:
    """The matrices one weight tensor holds, as ((kind, part, out, in), how many): a routed experts' fused tensor
    is E matrices per half; the shared experts' MLP (n_shared x d_ff_shared wide) one, as DeepSeek's checkpoints store
    ``shared_experts.gate_proj`` and vLLM and SGLang build it (one ``DeepseekV2MLP``): a format's per-matrix scalars
    (compressed-tensors' ``weight_shape``, NVFP4's global scales) are counted once (trial 382 #4)."""
    kind = (
        "attention"
        if tensor.kind == "indexer" and tensor.part in QUANTISED_INDEXER_PARTS
        else _MATRIX_OF.get(tensor.kind)
    )
    if kind is None or tensor.name.endswith("bias") or len(tensor.shape) < 2:
        return
    part = "kv" if tensor.part in ("k_proj", "v_proj") else tensor.part
    if kind == "expert":  # (E, 2f, d) gate and up halves, or (E, d, f) down
        experts, out, inp = tensor.shape
        halves = 2 if part == "gate_up_proj" else 1
        yield (kind, part, out // halves, inp), experts * halves
        return
    out, inp = tensor.shape  # the shared experts too: one MLP n_shared x d_ff_shared wide, one matrix per projection
    yield (kind, part, out, inp), 1


def matrices_per_rank(model: ModelSpec, tp: int, experts: ExpertLayout | None = None) -> list[Matrix]:
    """Every linear layer's weight matrix one rank of ``tp`` holds (what quantised formats quantise and a step's
    matmuls multiply: DeepSeek-V3.2's indexer ``wq_b`` and Gemma 4's per-layer input projections among them;
    embeddings, head, norms, biases, routers, the indexer's ``wk`` and ``weights_proj`` and fixed-state mixers are the
    rest of ``params_per_rank``, priced unquantised); alike matrices of one projection summed over the layers; the
    routed experts in ``experts``' layout.

    Raises ``BadInputError`` when ``tp`` does not split the heads or the MLP widths (``tensor_groups``)."""
    counts: dict[tuple[MatrixKind, str, int, int], int] = {}
    for group in tensor_groups(model, tp, experts=experts):
        for tensor in group.tensors:
            for key, count in tensor_matrices(tensor):
                counts[key] = counts.get(key, 0) + count * len(group.places)
    return [Matrix(kind, out, inp, count, part) for (kind, part, out, inp), count in counts.items()]
