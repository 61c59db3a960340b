"""The tensor-parallel layout's rules: which heads, widths, vocabulary rows and experts one rank holds.

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
``kv_heads_per_rank``, ``kv_head_range``), the vocabulary's rows (``vocab_rows_per_rank``), the experts' layout
(``ExpertLayout``) and whether a tp shards a model at all (``tp_shard_problem``). The weight inventory
(``core.inventory``) applies it tensor by tensor; the counts (``core.params``), the KV cache (``core.kv``), the
memory plan, ``verify``'s plan and ``nn``'s modules read it. Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import LayerKind, MlaCacheMode, ModelSpec, MoeA2aBackend

ATTENTION_FREE_TP = (
    "tp {tp}: mha does not split an attention-free model's mixers over tensor-parallel ranks (vLLM shards them):"
    " price it at tp 1, one replica per device"
)
"""Why an attention-free model is priced at tp 1 only (its one placeholder head splits over no tp > 1; a hybrid's
pipeline stage of mixer layers only keeps the model's heads and splits as they do)."""


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


def heads_split_problem(model: ModelSpec, tp: int) -> str | None:
    """Why ``tp`` ranks cannot split ``model``'s heads (``tp_split_problem``), its global layers' own KV heads
    included (Gemma 4's, ``AttentionSpec.kv_heads_of``), or ``None`` when they can."""
    attention = model.attention
    problem = tp_split_problem(attention.n_heads, attention.n_kv_heads, tp)
    if problem is not None:  # an attention-free model's placeholder head (1) splits over no tp > 1: say why
        return ATTENTION_FREE_TP.format(tp=tp) if model.attention_free else problem
    if attention.kv_heads_of("global") != attention.n_kv_heads:
        problem = tp_split_problem(attention.n_heads, attention.kv_heads_of("global"), tp)
        return None if problem is None else f"global layers: {problem.replace('n_kv_heads', 'global_n_kv_heads')}"
    return None


def kv_heads_per_rank(
    model: ModelSpec, tp: int, mla_cache: MlaCacheMode = "absorbed", kind: LayerKind | None = None
) -> int:
    """KV heads one tensor-parallel rank holds in a layer of ``kind`` (None: the model's default geometry; Gemma 4's
    global layers have their own KV heads, ``AttentionSpec.kv_heads_of``); for absorbed MLA, 1 (the whole latent).

    Raises ``BadInputError`` when ``tp`` does not split the heads of every kind (``tp_split_problem``).
    """
    attention = model.attention
    problem = heads_split_problem(model, tp)
    if problem is not None:
        raise BadInputError(problem)
    if attention.mla is not None and mla_cache == "absorbed":
        return 1
    return max(1, attention.kv_heads_of(kind) // tp)


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


class ExpertLayout(NamedTuple):
    """How one MoE layer's routed experts spread over ranks: over ``ranks`` of them (tp, within one replica; tp x dp
    when data-parallel ranks share the experts, as vLLM runs an MoE model with ``--data-parallel-size``), each rank
    holding every expert's 1 / ranks width (tensor-sharded, vLLM's default) or, ``whole``, ceil(n_experts / ranks)
    experts entire (expert parallel, ``--enable-expert-parallel``)."""

    ranks: int
    whole: bool = False
    dp_attention: bool = False
    """DP attention (``core.dp_attention``): the ranks sharing the experts are data-parallel attention ranks, each
    running its own requests' tokens through the MoE layers by the dispatch ``a2a_backend`` names."""
    a2a_backend: MoeA2aBackend = "none"
    """DP attention: ``deepep``, each rank sends its tokens to the ranks holding their experts and takes the results
    back (all-to-all dispatch and combine); ``none``, every rank's tokens are all-gathered to all and the experts'
    sums reduce-scattered back (the engines' default, and how replicas sharing experts without DP attention run)."""

    @property
    def deepep(self) -> bool:
        """DP attention reaching the experts by DeepEP's all-to-all."""
        return self.dp_attention and self.a2a_backend == "deepep"


def _experts(tp: int, experts: ExpertLayout | None) -> ExpertLayout:
    return ExpertLayout(tp) if experts is None else experts


def local_experts(model: ModelSpec, layout: ExpertLayout) -> int:
    """Routed experts of one MoE layer on one rank (the heaviest when ``ranks`` does not divide them): all of them,
    each at its share of the width, or ceil(n_experts / ranks) whole ones."""
    assert model.block.moe is not None
    return -(-model.block.moe.n_experts // layout.ranks) if layout.whole else model.block.moe.n_experts


def expert_width_per_rank(model: ModelSpec, layout: ExpertLayout) -> int:
    """The width of one routed expert on one rank: whole, or d_ff_expert / ranks."""
    assert model.block.moe is not None
    return model.block.moe.d_ff_expert if layout.whole else model.block.moe.d_ff_expert // layout.ranks


def shared_width_per_rank(model: ModelSpec, tp: int) -> int:
    """The MoE layer's shared experts' MLP width on one rank of ``tp``: n_shared x d_ff_shared (d_ff_expert where
    unset) by columns over the tp ranks, whatever the routed experts' layout (vLLM 0.11.0 ``DeepseekV2MoE``: one
    ``DeepseekV2MLP`` of moe_intermediate_size x n_shared_experts, a ``MergedColumnParallelLinear``); 0 without."""
    moe = model.block.moe
    if moe is None or not moe.n_shared_experts:
        return 0
    return moe.n_shared_experts * (moe.d_ff_shared or moe.d_ff_expert) // tp


def tp_shard_problem(model: ModelSpec, tp: int, experts: ExpertLayout | None = None) -> str | None:
    """Why ``tp`` ranks cannot shard ``model`` (heads, MLP or expert widths), or ``None`` when they can; ``experts``:
    how the routed experts spread (default: sharded over the tp ranks)."""
    problem = heads_split_problem(model, tp)
    if problem is not None:
        return problem
    layout = _experts(tp, experts)
    widths = {"d_ff": (model.block.d_ff, tp)}
    if model.layers.shared_d_ff is not None:  # Gemma 4 E2B's double-wide MLP on the K/V-sharing layers
        widths["shared_d_ff"] = (model.layers.shared_d_ff, tp)
    per_layer = model.embeddings.per_layer_inputs
    if per_layer is not None:  # vLLM's per_layer_model_projection: a column-parallel linear, n_layers x width wide
        widths["the per-layer inputs (n_layers x hidden_size_per_layer_input)"] = (model.n_layers * per_layer.width, tp)
    if model.block.moe is not None:
        if layout.ranks % tp:
            return f"the experts' ranks ({layout.ranks}) must be a multiple of tp ({tp})"
        if layout.whole and layout.ranks > model.block.moe.n_experts:
            return f"expert parallelism over {layout.ranks} ranks needs at least as many experts ({model.block.moe.n_experts})"
        if not layout.whole:
            widths["d_ff_expert"] = (model.block.moe.d_ff_expert, layout.ranks)
        if model.block.moe.n_shared_experts:
            widths["d_ff_shared"] = (model.block.moe.d_ff_shared or model.block.moe.d_ff_expert, tp)
    for what, (width, ranks) in widths.items():
        if width % ranks and ranks == tp:
            return f"{what} ({width}) must be divisible by tp ({ranks}): pick a tp that divides it"
        if width % ranks:
            return (
                f"{what} ({width}) must be divisible by the {ranks} ranks sharing the experts (tp x replicas): pick"
                " a tp and replica count whose product divides it, or whole experts per rank (--expert-parallel)"
            )
    return None
