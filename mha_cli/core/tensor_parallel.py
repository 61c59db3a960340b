"""What one tensor-parallel rank holds: its share of every weight (Megatron-style layout).

The layout (vLLM's, Megatron's) splits the matrices that carry heads or MLP
width and replicates everything else:

- attention: q (and its bias) by query heads, n_heads / tp per rank; k and v by KV heads,
  n_kv_heads / tp per rank, or one replicated head when tp > n_kv_heads; o by rows of its input
  (the rank's heads); the o bias and per-head q/k norms are replicated.
- MLA: the query and KV down projections and their norms are replicated (the latent lives whole
  on every rank); the query up projection (or the direct query projection), the KV up projection
  and o are split by heads.
- MLP (dense, every routed expert, every shared expert): gate and up by d_ff / tp columns, down
  by rows; the down bias is replicated. An MoE router (and Qwen2-MoE's shared-expert gate) is replicated.
- token embedding and LM head: split by vocabulary (vLLM's and Megatron's vocab-parallel layout). The vocabulary
  is first padded to a multiple of ``VOCAB_PADDING`` (64, vLLM's ``DEFAULT_VOCAB_PADDING_SIZE``); each rank holds
  padded / tp rows of each (one matrix when tied). The embedding's partial lookups are all-reduced, the head's
  partial logits gathered.
- learned positions and every norm: replicated.

This module is the one owner of that rule: which heads split or replicate (``tp_split_problem``,
``kv_heads_per_rank``, ``kv_head_range``), the vocabulary's rows (``vocab_rows_per_rank``), the weights a rank
holds (``params_per_rank``) and its matrices (``matrices_per_rank``). The KV cache (``core.kv``), the memory plan,
the roofline, ``verify``'s plan and ``nn``'s modules and shards read it. At tp = 1 (no padding) the count equals
``core.params.count_params(model).total``. Pure Python.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import (
    activation_params,
    count_params,
    embedding_side_params,
    head_side_params,
    indexer_params,
    mlp_params,
    norm_params,
    qk_norm_params,
)
from mha_cli.core.schemas import MlaCacheMode, ModelSpec


def tp_split_problem(n_heads: int, n_kv_heads: int, tp: int) -> str | None:
    """Why ``tp`` ranks cannot split these heads (rule MHA024), or ``None`` when they can: the query heads
    must divide evenly, and the KV heads divide evenly (tp <= n_kv_heads) or replicate evenly (tp > n_kv_heads)."""
    if n_heads % tp:
        return f"n_heads ({n_heads}) must be divisible by tp ({tp}): pick a tp that divides it"
    if tp <= n_kv_heads and n_kv_heads % tp:
        return f"n_kv_heads ({n_kv_heads}) must be divisible by tp ({tp}): pick a tp that divides it"
    if tp > n_kv_heads and tp % n_kv_heads:
        return f"tp ({tp}) must be a multiple of n_kv_heads ({n_kv_heads}) to replicate KV heads evenly"
    return None


def tp_splits_evenly(n_heads: int, n_kv_heads: int, tp: int) -> bool:
    """MHA024: whether ``tp`` ranks split ``n_heads`` query and ``n_kv_heads`` KV heads evenly."""
    return tp_split_problem(n_heads, n_kv_heads, tp) is None


def kv_heads_per_rank(model: ModelSpec, tp: int, mla_cache: MlaCacheMode = "absorbed") -> int:
    """KV heads one tensor-parallel rank holds; for absorbed MLA, 1 (the whole latent).

    Raises ``BadInputError`` when ``tp`` does not split the heads (``tp_split_problem``).
    """
    problem = tp_split_problem(model.n_heads, model.kv_heads, tp)
    if problem is not None:
        raise BadInputError(problem)
    if model.mla is not None and mla_cache == "absorbed":
        return 1
    return max(1, model.kv_heads // tp)


def kv_head_range(n_kv_heads: int, rank: int, tp: int) -> tuple[int, int]:
    """[first, last) KV heads rank ``rank`` holds: a block of n_kv / tp, or one replicated head when tp > n_kv."""
    if tp <= n_kv_heads:
        per_rank = n_kv_heads // tp
        return rank * per_rank, (rank + 1) * per_rank
    head = rank // (tp // n_kv_heads)
    return head, head + 1


VOCAB_PADDING = 64
"""vLLM pads the vocabulary of its embedding and LM head to a multiple of 64 (``DEFAULT_VOCAB_PADDING_SIZE`` in
``vllm/model_executor/layers/vocab_parallel_embedding.py``) before splitting it over the ranks."""


def padded_vocab(vocab_size: int, padding: int = VOCAB_PADDING) -> int:
    """``vocab_size`` rounded up to a multiple of ``padding`` (1: unpadded)."""
    return -(-vocab_size // padding) * padding


def vocab_rows_per_rank(vocab_size: int, tp: int, padding: int = VOCAB_PADDING) -> int:
    """Rows of the embedding (and of the LM head) one of ``tp`` ranks holds: padded vocab / tp, rounded up
    (vLLM itself requires tp to divide the padded vocabulary; every power of two up to 64 does)."""
    return -(-padded_vocab(vocab_size, padding) // tp)


def built_vocab_padding(tp: int) -> int:
    """The padding ``mha``'s torch decoder builds with: none on one device (the checkpoint's vocabulary, as
    transformers loads it), vLLM's ``VOCAB_PADDING`` when the vocabulary is split over tp > 1 ranks."""
    return VOCAB_PADDING if tp > 1 else 1


def embedding_params_per_rank(model: ModelSpec, tp: int, padding: int = VOCAB_PADDING) -> int:
    """Token embedding + LM head (one matrix when tied; its bias split as its rows) + learned positions and token
    types (replicated) on one rank, with the embedding norm, projection and head transform (replicated)."""
    rows = vocab_rows_per_rank(model.vocab_size, tp, padding)
    width = model.embedding_size or model.d_model  # ELECTRA's, RemBERT's narrower tables
    head = 0 if model.tied_embeddings else rows * (model.lm_head_size or width)
    tables = rows * width + head + (model.position_embeddings + model.token_type_embeddings) * width
    return tables + (rows if model.lm_head_bias else 0) + embedding_side_params(model) + head_side_params(model)


def width_per_rank(width: int, tp: int, what: str) -> int:
    """``width / tp``; raises ``BadInputError`` quoting the values when ``tp`` does not divide it."""
    if width % tp:
        raise BadInputError(f"{what} ({width}) must be divisible by tp ({tp}): pick a tp that divides it")
    return width // tp


class ExpertLayout(NamedTuple):
    """How one MoE layer's routed experts spread over ranks: over ``ranks`` of them (tp, within one replica; tp x dp
    when data-parallel ranks share the experts, as vLLM runs an MoE model with ``--data-parallel-size``), each rank
    holding every expert's 1 / ranks width (tensor-sharded, vLLM's default) or, ``whole``, ceil(n_experts / ranks)
    experts entire (expert parallel, ``--enable-expert-parallel``)."""

    ranks: int
    whole: bool = False


def _experts(tp: int, experts: ExpertLayout | None) -> ExpertLayout:
    return ExpertLayout(tp) if experts is None else experts


def local_experts(model: ModelSpec, layout: ExpertLayout) -> int:
    """Routed experts of one MoE layer on one rank (the heaviest when ``ranks`` does not divide them): all of them,
    each at its share of the width, or ceil(n_experts / ranks) whole ones."""
    assert model.moe is not None
    return -(-model.moe.n_experts // layout.ranks) if layout.whole else model.moe.n_experts


def expert_width_per_rank(model: ModelSpec, layout: ExpertLayout) -> int:
    """The width of one routed expert on one rank: whole, or d_ff_expert / ranks."""
    assert model.moe is not None
    return model.moe.d_ff_expert if layout.whole else model.moe.d_ff_expert // layout.ranks


def tp_shard_problem(model: ModelSpec, tp: int, experts: ExpertLayout | None = None) -> str | None:
    """Why ``tp`` ranks cannot shard ``model`` (heads, MLP or expert widths), or ``None`` when they can; ``experts``:
    how the routed experts spread (default: sharded over the tp ranks)."""
    problem = tp_split_problem(model.n_heads, model.kv_heads, tp)
    if problem is not None:
        return problem
    layout = _experts(tp, experts)
    widths = {"d_ff": (model.d_ff, tp)}
    if model.moe is not None:
        if layout.ranks % tp:
            return f"the experts' ranks ({layout.ranks}) must be a multiple of tp ({tp})"
        if layout.whole and layout.ranks > model.moe.n_experts:
            return (
                f"expert parallelism over {layout.ranks} ranks needs at least as many experts ({model.moe.n_experts})"
            )
        if not layout.whole:
            widths["d_ff_expert"] = (model.moe.d_ff_expert, layout.ranks)
        if model.moe.n_shared_experts:
            widths["d_ff_shared"] = (model.moe.d_ff_shared or model.moe.d_ff_expert, tp)
    for what, (width, ranks) in widths.items():
        if width % ranks and ranks == tp:
            return f"{what} ({width}) must be divisible by tp ({ranks}): pick a tp that divides it"
        if width % ranks:
            return (
                f"{what} ({width}) must be divisible by the {ranks} ranks sharing the experts (tp x replicas): pick"
                " a tp and replica count whose product divides it, or whole experts per rank (--expert-parallel)"
            )
    return None


def attention_params_per_rank(model: ModelSpec, tp: int) -> int:
    """Weights (and biases) of one attention layer on one rank."""
    d = model.d_model
    heads = width_per_rank(model.n_heads, tp, "n_heads")
    o_bias = d if model.o_bias else 0  # replicated, added once after the all-reduce
    qk_norm = qk_norm_params(model)  # replicated (a whole-projection norm too: every rank needs every head's share)
    if model.mla is not None:
        mla = model.mla
        q_out = heads * mla.qk_head_dim
        # direct projection split by heads; or a replicated down projection and norm, then a split up projection
        q = d * q_out if mla.q_lora_rank is None else d * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * q_out
        kv_down = d * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank  # replicated, with its norm
        kv_up = mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        o = heads * mla.v_head_dim * d
        q_bias = q_out if model.qkv_bias else 0
        indexer = indexer_params(model)  # replicated: every rank scores every key
        return q + kv_down + kv_up + o + q_bias + o_bias + qk_norm + indexer
    kv_heads = kv_heads_per_rank(model, tp)
    q_width = heads * model.dim_per_head
    kv_width = kv_heads * model.dim_per_head
    q_out = 2 * q_width if model.attn_output_gate else q_width  # Qwen3-Next: q_proj also emits the gate, by head
    weights = d * q_out + 2 * d * kv_width + q_width * d
    biases = q_out + 2 * kv_width if model.qkv_bias else 0
    sinks = heads if model.attn_sinks else 0  # split with the query heads
    gate = {None: 0, "head": d * heads, "element": d * q_width}[model.attn_softplus_gate]  # split with them too
    return weights + biases + o_bias + qk_norm + sinks + gate


def mlp_params_per_rank(model: ModelSpec, tp: int, moe_layer: bool, experts: ExpertLayout | None = None) -> int:
    """One layer's MLP on one rank: a dense MLP, or its routed experts (``experts``' layout), the shared experts'
    tp share and the replicated router."""
    d = model.d_model
    if not moe_layer:
        width = width_per_rank(model.d_ff, tp, "d_ff")
        return mlp_params(d, width, model.mlp, model.mlp_bias) + activation_params(model)  # xIELU's, replicated
    assert model.moe is not None
    moe, layout = model.moe, _experts(tp, experts)
    if not layout.whole:
        width_per_rank(moe.d_ff_expert, layout.ranks, "d_ff_expert")  # raises when the ranks do not divide it
    expert = mlp_params(d, expert_width_per_rank(model, layout), model.mlp, moe.expert_bias)
    shared_width = width_per_rank(moe.d_ff_shared or moe.d_ff_expert, tp, "d_ff_shared")
    shared = mlp_params(d, shared_width, model.mlp, moe.expert_bias)
    router = d * moe.n_experts + (d if moe.shared_expert_gate else 0)  # replicated, with Qwen2-MoE's shared gate
    router += moe.n_experts if moe.router_bias else 0  # gpt-oss's router bias, replicated
    router += d if moe.output_norm else 0  # A.X K1's output norm, replicated
    return local_experts(model, layout) * expert + moe.n_shared_experts * shared + router


def params_per_rank(
    model: ModelSpec, tp: int, vocab_padding: int = VOCAB_PADDING, experts: ExpertLayout | None = None
) -> int:
    """Every weight one rank of ``tp`` holds (replicated parts counted on every rank); the vocabulary padded to a
    multiple of ``vocab_padding`` (vLLM's 64 by default; 1 for the checkpoint's own count); the routed experts in
    ``experts``' layout (default: sharded over the tp ranks); a fixed-state mixer's weights split evenly over the
    ranks (rounded up; which of its parts an engine replicates is not modelled).

    Raises ``BadInputError`` when ``tp`` does not split the heads or the MLP widths.
    """
    problem = tp_shard_problem(model, tp, experts)
    if problem is not None:
        raise BadInputError(problem)
    norm = norm_params(model)
    n_moe = model.n_moe_layers
    n_dense = model.n_layers - n_moe
    whole = count_params(model)
    mixers = whole.n_mixer_layers * -(-whole.mixer_per_layer // tp)  # split evenly, rounded up
    attention = whole.n_attention_layers * attention_params_per_rank(model, tp)
    mlps = n_dense * mlp_params_per_rank(model, tp, False)
    if n_moe:
        mlps += n_moe * mlp_params_per_rank(model, tp, True, experts)
    norms = model.n_layers * model.n_norms_per_layer * norm + whole.final_norm
    norms -= 0 if model.first_input_norm else norm  # ModernBERT's decoder: layer 0 without its input norm
    return attention + mixers + mlps + norms + embedding_params_per_rank(model, tp, vocab_padding)


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


MatrixKind = Literal["attention", "mlp", "expert"]


class Matrix(NamedTuple):
    """``count`` weight matrices of ``out_features`` x ``in_features`` on one rank (no biases, norms or routers)."""

    kind: MatrixKind
    """``attention`` (q/k/v/o and MLA's projections), ``mlp`` (dense MLPs, shared experts) or ``expert`` (routed)."""
    out_features: int
    in_features: int
    count: int


def _mlp_matrices(d: int, width: int, gated: bool, count: int, kind: MatrixKind = "mlp") -> list[Matrix]:
    """gate and up (or up alone) column-parallel, down row-parallel, at the rank's ``width``."""
    return [Matrix(kind, width, d, count * (2 if gated else 1)), Matrix(kind, d, width, count)]


def matrices_per_rank(model: ModelSpec, tp: int, experts: ExpertLayout | None = None) -> list[Matrix]:
    """Every linear layer's weight matrix one rank of ``tp`` holds, in this module's layout (what quantised formats
    quantise; embeddings, head, norms, biases and routers are the rest of ``params_per_rank``); the routed experts
    in ``experts``' layout. Attention's matrices on the layers that attend; a fixed-state mixer's weights are left
    to the rest (priced unquantised)."""
    problem = tp_shard_problem(model, tp, experts)
    if problem is not None:
        raise BadInputError(problem)
    d, layers = model.d_model, model.n_layers
    attending = layers - model.count_layers("linear")
    heads = model.n_heads // tp
    if model.mla is not None:
        mla = model.mla
        attention = [
            Matrix("attention", mla.kv_lora_rank + mla.qk_rope_head_dim, d, attending),  # kv down, replicated
            Matrix("attention", heads * (mla.qk_nope_head_dim + mla.v_head_dim), mla.kv_lora_rank, attending),
            Matrix("attention", d, heads * mla.v_head_dim, attending),
        ]
        if mla.q_lora_rank is None:
            attention.append(Matrix("attention", heads * mla.qk_head_dim, d, attending))
        else:
            attention += [
                Matrix("attention", mla.q_lora_rank, d, attending),  # q down, replicated
                Matrix("attention", heads * mla.qk_head_dim, mla.q_lora_rank, attending),
            ]
    else:
        q_width = heads * model.dim_per_head
        kv_width = kv_heads_per_rank(model, tp) * model.dim_per_head
        q_out = 2 * q_width if model.attn_output_gate else q_width
        attention = [
            Matrix("attention", q_out, d, attending),
            Matrix("attention", kv_width, d, 2 * attending),
            Matrix("attention", d, q_width, attending),
        ]
        if model.attn_softplus_gate is not None:  # Laguna's g_proj: a gate per head or per element
            gate_width = heads if model.attn_softplus_gate == "head" else q_width
            attention.append(Matrix("attention", gate_width, d, attending))
    gated = model.mlp == "gated"
    n_moe = 0 if model.moe is None else max(0, layers - model.moe.n_dense_layers)
    mlps = _mlp_matrices(d, model.d_ff // tp, gated, layers - n_moe) if layers > n_moe else []
    if model.moe is not None and n_moe:
        moe = model.moe
        layout = _experts(tp, experts)
        width, count = expert_width_per_rank(model, layout), n_moe * local_experts(model, layout)
        mlps += _mlp_matrices(d, width, gated, count, "expert")
        if moe.n_shared_experts:
            shared = (moe.d_ff_shared or moe.d_ff_expert) // tp
            mlps += _mlp_matrices(d, shared, gated, n_moe * moe.n_shared_experts)
    return attention + mlps
