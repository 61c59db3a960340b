"""The projection: tensor-parallel compatibility (MHA024), the default variant (MHA020, MHA021, MHA023 under
MHA091/MHA092), the cache escalations under priority inference (MHA022) and the quality-risk labels."""

from __future__ import annotations

from dataclasses import dataclass

from mha_cli.core.errors import BadInputError
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.result import RecommendRequest
from mha_cli.core.recommend.shape import Frame, ModelMaker, head_dim_for, record_depth, solve_layers
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import Trace
from mha_cli.core.schemas import ModelSpec, Variant
from mha_cli.core.variants import DEFAULT_GQA_KV_HEADS, default_gqa_kv_heads, gqa_kv_heads_choices

QUALITY_SOURCES: dict[Variant, str] = {
    "MHA": "the reference the others are measured against",
    "GQA": "Ainslie et al. 2023",
    "MQA": "Shazeer 2019",
    "MLA": "DeepSeek-V2 2024",
}
"""Where each variant's quality-risk label comes from."""


def gqa_kv_heads(n_heads: int, tp: int, max_group: int = C.MAX_QUALITY_GROUP) -> list[int]:
    """GQA KV-head counts for ``n_heads``: tp-compatible, group <= ``max_group``, best first in the order of
    ``variants.default_gqa_kv_heads`` (its pick first, then nearest to 8, ties to the larger count)."""
    preferred = default_gqa_kv_heads(n_heads, tp)
    choices = [k for k in gqa_kv_heads_choices(n_heads, tp) if n_heads // k <= max_group]
    return sorted(choices, key=lambda k: (k != preferred, abs(k - DEFAULT_GQA_KV_HEADS), -k))


def quality_risk(variant: Variant, group: int) -> str:
    """A short label for the quality cost of sharing K/V (its source: ``QUALITY_SOURCES``)."""
    if variant == "MHA":
        return "none"
    if variant == "MLA":
        return "low, more FLOPs"
    if variant == "MQA":
        return "high"
    if group <= C.MAX_QUALITY_GROUP:
        return "low"
    return "moderate" if group <= 2 * C.MAX_QUALITY_GROUP else "high"


def fit_tp(trace: Trace, request: RecommendRequest, devices_tp: int, n_heads: int) -> int:
    """MHA024: the tp for ``n_heads``; an explicit --tp must divide them, one taken from the target shrinks."""
    if n_heads % devices_tp == 0:
        return devices_tp
    if request.tp is not None:
        raise BadInputError(
            f"--tp {devices_tp} does not divide the {n_heads} heads of this design (rule MHA024 tp-divisibility):"
            f" use a tp that divides {n_heads}"
        )
    fitting = max(t for t in range(1, devices_tp + 1) if devices_tp % t == 0 and n_heads % t == 0)
    trace.fire(
        "MHA024",
        f"{n_heads} heads do not split over {devices_tp} devices: tp {fitting}, the other devices hold replicas",
        severity="info",
        n_heads=n_heads,
        devices=devices_tp,
        tp=fitting,
    )
    return fitting


def default_variant(trace: Trace, request: RecommendRequest, n_heads: int, tp: int, params: int) -> tuple[Variant, int]:
    """MHA020/MHA021/MHA023 under MHA091/MHA092: (variant, n_kv_heads) before any fit check."""
    r = request
    long_wide = n_heads > C.MHA_LONG_CONTEXT_MAX_HEADS and r.seq_len > C.MHA_LONG_CONTEXT_TOKENS
    gqa = gqa_kv_heads(n_heads, tp) or gqa_kv_heads(n_heads, tp, max_group=n_heads)
    if r.variant is not None:
        trace.fire("MHA023", f"--variant {r.variant} requested", variant=r.variant)
        if r.variant == "MHA" and long_wide:
            trace.fire(
                "MHA091",
                f"MHA with {n_heads} heads at {r.seq_len:,} tokens kept because it was asked for: its cache is"
                " priced below and GQA/MLA are offered in the alternatives",
                severity="warning",
                n_heads=n_heads,
                seq_len=r.seq_len,
                requested=True,
            )
        if r.variant == "MLA" and params < C.MLA_MIN_PARAMS:
            trace.fire(
                "MHA092",
                f"MLA below {C.MLA_MIN_PARAMS / 1e9:g}B ({format_count(params)}) kept because it was asked for",
                severity="warning",
                params=params,
                requested=True,
            )
        if r.variant == "GQA":
            if not gqa:
                raise BadInputError(f"--variant GQA: {n_heads} heads have no divisor between 1 and {n_heads}")
            return "GQA", gqa[0]
        return r.variant, {"MHA": n_heads, "MQA": 1, "MLA": n_heads}[r.variant]
    if long_wide:
        trace.fire(
            "MHA091",
            f"MHA excluded: {n_heads} heads > {C.MHA_LONG_CONTEXT_MAX_HEADS} at {r.seq_len:,} tokens"
            f" > {C.MHA_LONG_CONTEXT_TOKENS:,}",
            severity="info",
            n_heads=n_heads,
            seq_len=r.seq_len,
            requested=False,
        )
    few = n_heads <= C.FEW_HEADS
    training_mha = (
        r.priority == "training" and n_heads <= C.MHA_LONG_CONTEXT_MAX_HEADS and r.seq_len <= C.MHA_LONG_CONTEXT_TOKENS
    )
    if (few or training_mha or not gqa) and not long_wide:
        why = f"{n_heads} heads: sharing K/V saves little" if few else "priority training at short context"
        if not gqa and not few:
            why = f"{n_heads} heads have no GQA divisor"
        trace.fire("MHA021", f"MHA: {why}", n_heads=n_heads, priority=r.priority, seq_len=r.seq_len)
        return "MHA", n_heads
    if not gqa:
        trace.fire(
            "MHA020",
            f"MQA: {n_heads} heads have no GQA divisor (tp {tp}) and MHA is excluded, so one KV head is shared",
            n_heads=n_heads,
            n_kv_heads=1,
            tp=tp,
        )
        return "MQA", 1
    trace.fire(
        "MHA020",
        f"GQA with {gqa[0]} KV heads: {n_heads // gqa[0]} query heads per KV head",
        n_heads=n_heads,
        n_kv_heads=gqa[0],
        tp=tp,
    )
    return "GQA", gqa[0]


@dataclass(frozen=True)
class Candidate:
    """A width's head geometry and default variant; ``trace`` holds the MHA024/MHA02x findings that chose them."""

    frame: Frame
    tp: int
    variant: Variant
    n_kv_heads: int
    trace: Trace

    @property
    def make(self) -> ModelMaker:
        return self.frame.maker(self.variant, self.n_kv_heads)


def candidate_at(ctx: Context, d_model: int, budget: int, vocab: int, tied: bool) -> Candidate | None:
    """The head geometry and default variant at width ``d_model``, or None when an explicit --tp cannot split
    this width's heads (the ladder then tries the next width)."""
    r = ctx.request
    frame = Frame(d_model=d_model, head_dim=head_dim_for(d_model), vocab=vocab, tied=tied)
    if frame.n_heads % ctx.devices_tp and r.tp is not None and not r.d_model:
        return None
    trace = Trace()
    tp = fit_tp(trace, r, ctx.devices_tp, frame.n_heads)
    variant, n_kv = default_variant(trace, r, frame.n_heads, tp, budget)
    return Candidate(frame=frame, tp=tp, variant=variant, n_kv_heads=n_kv, trace=trace)


def escalations(trace: Trace, n_heads: int, n_kv_heads: int, tp: int, params: int) -> list[tuple[Variant, int]]:
    """MHA022: smaller caches to try, in order: fewer KV heads, then MLA (>= 1B) or MQA."""
    steps: list[tuple[Variant, int]] = [
        ("GQA", k)
        for k in sorted(gqa_kv_heads(n_heads, tp, max_group=2 * C.MAX_QUALITY_GROUP), reverse=True)
        if k < n_kv_heads
    ]
    if params >= C.MLA_MIN_PARAMS:
        steps.append(("MLA", n_heads))
    else:
        trace.fire(
            "MHA092",
            f"MLA not considered: {format_count(params)} parameters < {C.MLA_MIN_PARAMS / 1e9:g}B",
            severity="info",
            params=params,
            requested=False,
        )
    steps.append(("MQA", 1))
    return steps


def fit_variant(ctx: Context, budget: int, candidate: Candidate, model: ModelSpec) -> tuple[ModelSpec, Variant]:
    """MHA022: under priority inference, step the cache down until the batch fits (depth re-solved)."""
    r = ctx.request
    tp, variant, n_kv = candidate.tp, candidate.variant, candidate.n_kv_heads
    plan = ctx.plan(model, tp)
    if r.variant is not None or r.priority != "inference" or plan is None or plan.fits or not plan.weights_fit:
        return model, variant
    for step_variant, step_kv in escalations(ctx.trace, model.n_heads, n_kv, tp, budget):
        solved = solve_layers(budget, candidate.frame.maker(step_variant, step_kv))
        if solved is None:
            continue
        solved_plan = ctx.plan(solved, tp)
        if solved_plan is not None and solved_plan.fits:
            label = f"GQA-{step_kv}" if step_variant == "GQA" else step_variant
            ctx.trace.fire(
                "MHA022",
                f"{variant}-{n_kv} cache for batch {r.batch} does not fit ({format_bytes(plan.kv_bytes_per_device)}"
                f" per device); {label} does ({format_bytes(solved_plan.kv_bytes_per_device)})",
                from_variant=variant,
                from_kv_heads=n_kv,
                to_variant=step_variant,
                to_kv_heads=solved.kv_heads,
                batch=r.batch,
            )
            record_depth(ctx.trace, solved, budget, revised_by=f"MHA022 chose {label}")
            return solved, step_variant
    ctx.trace.fire(
        "MHA022",
        f"no smaller cache fits batch {r.batch}: kept {variant}",
        from_variant=variant,
        to_variant=variant,
        batch=r.batch,
    )
    return model, variant
