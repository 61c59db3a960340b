"""From the built stack to every layer of a rank (``per_rank``) and every rank (``whole_model``).

A layer not built is counted as a built layer of the same kind was measured: its cache as a built
layer of the same attention kind (global or sliding-window local), its weights as a built layer of
the same MLP kind (dense or MoE); a kind that was not built at all takes the calculator's figure. A
rank not measured is counted as the measured ones (every rank holds the same shapes under the
Megatron layout). The decode step of every layer is the built stack's time scaled by the bytes the
step reads (core's decode roofline: weights touched + cache attended), since decode is memory-bound.
Each figure says whether it was extrapolated, and how. A hybrid's linear layer holds a fixed state (core.kv's
``state_bytes_per_layer`` per sequence) instead of per-token K/V, and its weights are its own kind.
"""

from __future__ import annotations

from mha_cli.core.kv import bytes_per_token_per_layer, state_bytes_per_layer, tokens_held
from mha_cli.core.params import count_params
from mha_cli.core.roofline import attended_tokens, params_read
from mha_cli.verify.plan import VerifyPlan, first_layers
from mha_cli.verify.report import RankResult, ScopeFigures


def token_bytes_per_layer(plan: VerifyPlan) -> int:
    """core.kv's bytes one layer that caches tokens holds per token on one rank (linear layers hold none; 0 for an
    attention-free model, whose head fields are placeholders: trial 374 #2)."""
    if plan.model.attention_free:
        return 0
    deployment = plan.deployment
    return bytes_per_token_per_layer(
        plan.model, deployment.kv_dtype, deployment.mla_cache, tp=plan.tp, convention="transformers"
    )


def state_bytes(plan: VerifyPlan, n_layers: int) -> int:
    """core.kv's fixed state of the model's first ``n_layers`` layers on one rank, the whole batch (0 without)."""
    per_layer = state_bytes_per_layer(plan.model, plan.deployment.kv_dtype, tp=plan.tp, convention="transformers")
    return plan.deployment.batch * per_layer * sum(plan.model.holds_state(i) for i in range(n_layers))


def decode_bytes_read(plan: VerifyPlan, n_layers: int) -> int:
    """Bytes one rank reads in a decode step of its first ``n_layers`` layers (core, not the modules).

    The weights the step touches (``params_read``: the batch's embedding rows, every other weight; an
    MoE layer's expected experts) plus the cache a token at position seq_len - 1 attends to, windows applied,
    plus the fixed state of the linear layers (each step reads all of it).
    """
    batch, seq = plan.deployment.batch, plan.deployment.seq_len
    shape = first_layers(plan.rank_shape, n_layers)
    weights, _ = params_read(shape, count_params(shape), batch)
    cache = batch * attended_tokens(first_layers(plan.model, n_layers), seq) * token_bytes_per_layer(plan)
    return round(weights) * plan.value_bytes + cache + state_bytes(plan, n_layers)


def _predicted_layer_cache(plan: VerifyPlan, kind: str) -> int:
    """core.kv's cache of one layer of ``kind`` on one rank (unpaged): K/V, or a linear layer's fixed state."""
    batch = plan.deployment.batch
    if kind == "linear":
        return batch * state_bytes_per_layer(
            plan.model, plan.deployment.kv_dtype, tp=plan.tp, convention="transformers"
        )
    window = plan.model.layers.sliding_window if kind == "local" else None
    return batch * tokens_held(plan.deployment.seq_len, window) * token_bytes_per_layer(plan)


def rank_all_layers(plan: VerifyPlan, rank: RankResult) -> tuple[int, int]:
    """(cache bytes, weight bytes) of every layer of the model on this rank, from its measured layers.

    Weights are grouped by (mixer or attention, MLP kind): a linear layer's weights are not an attention layer's."""
    cache_by_kind: dict[str, int] = {}
    weights_by_kind: dict[tuple[bool, str], int] = {}

    def weight_key(i: int) -> tuple[bool, str]:
        return plan.model.layer_kind(i) == "linear", plan.weight_kind(i)

    for i, (cache, weights) in enumerate(zip(rank.layer_cache_bytes, rank.layer_weight_bytes, strict=True)):
        cache_by_kind.setdefault(plan.model.layer_kind(i), cache)
        weights_by_kind.setdefault(weight_key(i), weights)
    cache_total, weights_total = 0, rank.non_layer_weight_bytes
    for i in range(plan.model.n_layers):
        kind = plan.model.layer_kind(i)
        cache_total += cache_by_kind.get(kind, _predicted_layer_cache(plan, kind))
        weights_total += weights_by_kind.get(weight_key(i), plan.predicted_layer_weight_bytes[i])
    return cache_total, weights_total


def assemble(plan: VerifyPlan, ranks: list[RankResult]) -> tuple[ScopeFigures, ScopeFigures]:
    """(per_rank, whole_model) figures from the measured ranks (``ranks[0]`` stands for one rank)."""
    n_model, n_built, tp = plan.model.n_layers, plan.n_layers_built, plan.tp
    all_built = n_built == n_model
    scale = decode_bytes_read(plan, n_model) / decode_bytes_read(plan, n_built)
    per_rank_figures = [rank_all_layers(plan, rank) for rank in ranks]
    decode_ms = [rank.decode.median_ms * scale for rank in ranks]
    layers_how = (
        "measured: every layer built"
        if all_built
        else f"EXTRAPOLATED from {n_built} built layer(s): each layer counted as a built layer of its kind"
        " (attention global/local, MLP dense/MoE; a kind not built takes the calculator's figure); decode time"
        " scaled by the bytes a step reads"
    )
    paged = plan.paged_model_cache_bytes
    per_rank = ScopeFigures(
        scope="per_rank", covers=f"all {n_model} layers, one of {tp} tensor-parallel rank(s) (rank {ranks[0].tp_rank})",
        n_layers=n_model, n_ranks=1, predicted_cache_bytes=plan.predicted_model.total_bytes,
        cache_bytes=per_rank_figures[0][0], predicted_weight_bytes=plan.predicted_model_weight_bytes,
        weight_bytes=per_rank_figures[0][1], paged_cache_bytes=paged, decode_ms=decode_ms[0],
        extrapolated=not all_built, how=layers_how,
    )  # fmt: skip
    measured_ranks = {rank.tp_rank for rank in ranks}
    if len(measured_ranks) == tp:
        cache = sum(figures[0] for figures in per_rank_figures)
        weights = sum(figures[1] for figures in per_rank_figures)
        ranks_how = f"the {tp} rank(s) measured"
    else:
        cache, weights = per_rank.cache_bytes * tp, per_rank.weight_bytes * tp
        ranks_how = f"EXTRAPOLATED: {tp} x the measured rank (every rank holds the same shapes)"
    whole_how = f"{layers_how}; ranks: {ranks_how}"
    if tp > 1:
        whole_how += "; decode: the ranks step in parallel, the slowest one (all-reduces included only when measured)"
    built_as = plan.deployment.weight_dtype == plan.dtype  # else its weights are built in the KV dtype (a note)
    whole = ScopeFigures(
        scope="whole_model",
        covers=f"all {n_model} layers, all {tp} tensor-parallel rank(s): the deployment"
        + ("" if built_as else f", its weights as built in {plan.dtype}, not its {plan.deployment.weight_dtype}"),
        n_layers=n_model, n_ranks=tp, predicted_cache_bytes=plan.predicted_model.total_bytes * tp,
        cache_bytes=cache, predicted_weight_bytes=plan.predicted_model_weight_bytes * tp, weight_bytes=weights,
        paged_cache_bytes=None if paged is None else paged * tp, decode_ms=max(decode_ms),
        extrapolated=not all_built or len(measured_ranks) < tp, how=whole_how,
    )  # fmt: skip
    return per_rank, whole
