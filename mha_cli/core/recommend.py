"""The recommender: parameter budget + context + target -> an attention design, with its reasons.

Steps, in the skill's order, each citing the rules of ``core.rules.catalog`` it applies:

1. shape from the budget: width (MHA001), MLP (MHA003), vocabulary (MHA004), depth (MHA002, at most
   ``MAX_LAYERS``); a budget no width can meet is refused with the range that works (MHA093, MHA094);
2. head geometry: head_dim (MHA010), n_heads (MHA011), KV heads and tensor parallelism (MHA024);
3. the variant (MHA020-MHA023) under the hard rules (MHA090-MHA092), then the KV-cache estimate,
   the memory plan and roofline on the target, flagged when they do not fit (MHA025, MHA026); a
   variant switch (MHA022) re-solves the depth and re-records MHA002, so the trace ends on the final design;
4. the MLA latent rank when MLA is chosen (MHA030);
5. initialisation (MHA040), biases (MHA041) and the testability hook (MHA050).

Every KV figure comes from ``kv_footprint``, every parameter count from ``count_params``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Literal

from pydantic import Field, ValidationError

from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import KvFootprint, kv_footprint
from mha_cli.core.memory import MemoryPlan, plan_memory, resolve_tp, weight_bytes
from mha_cli.core.params import ParamBreakdown, count_params
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.record import Record
from mha_cli.core.roofline import Roofline, estimate_roofline
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import Finding, Trace, counted
from mha_cli.core.schemas import DeploymentSpec, MhaConfig, ModelSpec, Variant
from mha_cli.core.targets import ResolvedTarget, resolve_target
from mha_cli.core.validation import describe_validation_error
from mha_cli.core.variants import gqa_kv_heads_choices, mla_for_shape, variant_options

Priority = Literal["inference", "training", "balanced"]
PRIORITIES: tuple[Priority, ...] = ("inference", "training", "balanced")

# (parameters, d_model) of public designs: the anchors MHA001 interpolates between.
WIDTH_ANCHORS: tuple[tuple[float, int], ...] = (
    (125e6, 768),  # GPT-2 small / GPT-3 Small
    (350e6, 1024),  # GPT-2 medium / GPT-3 Medium
    (1.2e9, 2048),  # Llama 3.2 1B (1.24B)
    (3.2e9, 3072),  # Llama 3.2 3B
    (8e9, 4096),  # Llama 3 8B
    (13e9, 5120),  # Llama 2 13B
    (70e9, 8192),  # Llama 3 70B
    (405e9, 16384),  # Llama 3.1 405B
)
WIDTH_LADDER: tuple[int, ...] = (
    128, 256, 384, 512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192, 12288, 16384, 20480, 24576, 32768,
)  # fmt: skip
MIN_LAYERS = 2


class RecommendRequest(Record):
    """The skill's inputs, already parsed into numbers."""

    params: int = Field(gt=0)
    """Parameter budget (total parameters)."""
    seq_len: int = Field(gt=0)
    """Target context: tokens per sequence the cache must hold."""
    target: str | None = None
    batch: int = Field(default=1, gt=0)
    kv_dtype: str = "bf16"
    weight_dtype: str = "bf16"
    priority: Priority = "balanced"
    tp: int | None = Field(default=None, gt=0)
    vocab_size: int | None = Field(default=None, gt=0)
    d_model: int | None = Field(default=None, gt=0)
    variant: Variant | None = None
    """An explicit request; ``None`` lets the rules choose."""


class ModelSummary(Record):
    """The recommended geometry; the key names are stable for scripts."""

    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    variant: Variant
    total_params: int
    d_ff: int
    vocab_size: int
    tied_embeddings: bool
    kv_lora_rank: int | None = None
    """MLA only: width of the cached latent."""


class InitPlan(Record):
    """Initialisation of the attention projections: scheme and standard deviations."""

    scheme: str
    std: dict[str, float]
    """Standard deviation of the normal each projection's weights are drawn from, by projection."""


class TestHook(Record):
    """A synthetic task a 2-layer version of the design should solve."""

    task: str
    pattern: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    variant: Variant
    accuracy_threshold: float
    how: str


class Alternative(Record):
    """The recommended shape under another projection."""

    label: str
    variant: Variant
    n_kv_heads: int
    is_recommended: bool
    bytes_per_token: int
    total_bytes: int
    """The requested batch's cache on one rank."""
    max_sequences: int | None
    """Sequences of seq_len that fit beside the weights on the target (None without one)."""
    total_params: int
    quality_risk: str
    quality_source: str
    """The paper the quality-risk label comes from."""
    note: str


class RecommendResult(Record):
    """Everything ``mha recommend`` reports; ``model``, ``kv.bytes_per_token`` and ``rules_fired`` are stable."""

    request: RecommendRequest
    model: ModelSummary
    variant_reason: str
    """One sentence tying the variant to the KV-cache limits."""
    budget_deviation: float
    """(total_params - budget) / budget."""
    params: ParamBreakdown
    weight_bytes: int
    kv: KvFootprint
    memory: MemoryPlan | None
    roofline: Roofline | None
    fits: bool | None
    """Whether weights and the batch's cache fit the target; None without a target."""
    way_out: list[str]
    """What would make a plan that does not fit fit."""
    init: InitPlan
    qkv_bias: bool
    o_bias: bool
    testability: TestHook
    alternatives: list[Alternative]
    trace: list[Finding]
    rules_fired: list[str]
    config: MhaConfig
    """The config file ``--out`` writes."""


# Shape ------------------------------------------------------------------------------------------


def ideal_width(params: float) -> float:
    """MHA001: width interpolated in log-log between the anchors, extrapolated beyond them."""
    anchors = WIDTH_ANCHORS
    if params <= anchors[0][0]:
        lo, hi = anchors[0], anchors[1]
    elif params >= anchors[-1][0]:
        lo, hi = anchors[-2], anchors[-1]
    else:
        lo, hi = next((a, b) for a, b in itertools.pairwise(anchors) if a[0] <= params <= b[0])
    slope = math.log(hi[1] / lo[1]) / math.log(hi[0] / lo[0])
    return lo[1] * math.exp(slope * math.log(params / lo[0]))


def widths_to_try(params: int) -> list[int]:
    """The ladder, nearest to the ideal width first (log distance)."""
    ideal = ideal_width(params)
    return sorted(WIDTH_LADDER, key=lambda w: abs(math.log(w / ideal)))


def head_dim_for(d_model: int) -> int:
    """MHA010: 128 from the wide-model width, 64 below, 32 for very narrow models."""
    if d_model >= C.WIDE_MODEL_D_MODEL and d_model % 128 == 0:
        return 128
    if d_model >= 256 and d_model % 64 == 0:
        return 64
    if d_model >= C.HEAD_DIM_FLOOR and d_model % C.HEAD_DIM_FLOOR == 0:
        return C.HEAD_DIM_FLOOR
    raise BadInputError(
        f"--d-model {d_model} cannot be split into heads of at least {C.HEAD_DIM_FLOOR} (rule MHA090 head-dim-floor):"
        f" use a multiple of {C.HEAD_DIM_FLOOR}, e.g. {max(C.HEAD_DIM_FLOOR, d_model // C.HEAD_DIM_FLOOR * 32)}"
    )


def mlp_width(d_model: int) -> int:
    """MHA003: d_ff = 3.5 x d_model rounded up to a multiple of 256."""
    raw = math.ceil(C.FFN_MULTIPLIER * d_model)
    return -(-raw // C.FFN_ROUND) * C.FFN_ROUND


def vocab_for(params: int, vocab: int | None) -> tuple[int, bool]:
    """MHA004: (vocabulary size, tied embeddings)."""
    size = vocab if vocab is not None else (C.LARGE_VOCAB if params >= C.LARGE_VOCAB_FROM_PARAMS else C.SMALL_VOCAB)
    return size, params < C.TIE_EMBEDDINGS_BELOW_PARAMS


def mla_block(head_dim: int, d_model: int) -> dict[str, Any]:
    """MHA030: DeepSeek-V2 proportions, plus a query latent for wide models (the block ``mha kv`` prices too)."""
    return mla_for_shape(head_dim, d_model)


def build_model(
    *, d_model: int, n_layers: int, head_dim: int, variant: Variant, n_kv_heads: int, vocab: int, tied: bool
) -> ModelSpec:
    """A Llama-style model (RMSNorm, SwiGLU, RoPE, no biases) with the given attention."""
    n_heads = d_model // head_dim
    fields: dict[str, Any] = dict(
        name="recommended", source="mha recommend", d_model=d_model, n_layers=n_layers, n_heads=n_heads,
        vocab_size=vocab, d_ff=mlp_width(d_model), tied_embeddings=tied,
    )  # fmt: skip
    if variant == "MLA":
        fields["mla"] = mla_block(head_dim, d_model)
    else:
        fields.update(head_dim=head_dim, n_kv_heads=n_kv_heads, variant=variant)
    try:
        return ModelSpec.model_validate(fields)
    except ValidationError as exc:  # only options far outside the rules' range get here (e.g. --d-model 2000000)
        raise BadInputError(
            f"no valid design at d_model {d_model}: {describe_validation_error(exc)}; change --d-model or --params"
        ) from exc


def solve_layers(budget: int, make: Any) -> tuple[int, ModelSpec] | None:
    """MHA002: the depth (2 to MHA094's maximum) whose total is nearest the budget, even preferred, within
    tolerance; None when no depth at this width lands within it."""
    one = count_params(make(1)).total
    per_layer = count_params(make(2)).total - one
    fixed = one - per_layer
    exact = (budget - fixed) / per_layer
    if exact < MIN_LAYERS - 0.5:
        return None
    even = min(C.MAX_LAYERS, max(MIN_LAYERS, 2 * round(exact / 2)))
    for layers in (even, min(C.MAX_LAYERS, max(MIN_LAYERS, round(exact)))):
        total = fixed + layers * per_layer
        if abs(total - budget) <= C.BUDGET_TOLERANCE * budget:
            return layers, make(layers)
    return None


# Variant ----------------------------------------------------------------------------------------


def tp_compatible(n_kv_heads: int, tp: int) -> bool:
    """MHA024: KV heads split evenly over tp ranks, or are replicated evenly."""
    return n_kv_heads % tp == 0 or tp % n_kv_heads == 0


def gqa_kv_heads(n_heads: int, tp: int, max_group: int = C.MAX_QUALITY_GROUP) -> list[int]:
    """GQA KV-head counts for ``n_heads``, tp-compatible, group <= ``max_group``, nearest to 8 first."""
    choices = [k for k in gqa_kv_heads_choices(n_heads) if tp_compatible(k, tp) and n_heads // k <= max_group]
    return sorted(choices, key=lambda k: (abs(k - C.GQA_KV_HEADS), -k))


QUALITY_SOURCES: dict[Variant, str] = {
    "MHA": "the reference the others are measured against",
    "GQA": "Ainslie et al. 2023",
    "MQA": "Shazeer 2019",
    "MLA": "DeepSeek-V2 2024",
}
"""Where each variant's quality-risk label comes from."""


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


class _Context:
    """What every step needs: the request, the target, the trace."""

    def __init__(self, request: RecommendRequest) -> None:
        self.request = request
        self.trace = Trace()
        self.target: ResolvedTarget | None = resolve_target(request.target) if request.target else None
        self.tp = resolve_tp(request.tp, self.target)

    def deployment(self) -> DeploymentSpec:
        r = self.request
        return DeploymentSpec(
            target=r.target, seq_len=r.seq_len, batch=r.batch, kv_dtype=r.kv_dtype, weight_dtype=r.weight_dtype,
            tp=self.tp,
        )  # fmt: skip

    def footprint(self, model: ModelSpec) -> KvFootprint:
        r = self.request
        return kv_footprint(model, seq_len=r.seq_len, batch=r.batch, kv_dtype=r.kv_dtype, tp=self.tp)

    def plan(self, model: ModelSpec, kv: KvFootprint | None = None) -> MemoryPlan | None:
        if self.target is None:
            return None
        total = count_params(model).total
        return plan_memory(
            self.target, total_params=total, weight_dtype=self.request.weight_dtype, kv=kv or self.footprint(model)
        )


def _fit_tp(ctx: _Context, n_heads: int) -> None:
    """MHA024: n_heads must split over tp; a tp taken from the target shrinks to one that does."""
    if n_heads % ctx.tp == 0:
        return
    if ctx.request.tp is not None:
        raise BadInputError(
            f"--tp {ctx.tp} does not divide the {n_heads} heads of this design (rule MHA024 tp-divisibility):"
            f" use a tp that divides {n_heads}"
        )
    fitting = max(t for t in range(1, ctx.tp + 1) if ctx.tp % t == 0 and n_heads % t == 0)
    ctx.trace.fire(
        "MHA024",
        f"{n_heads} heads do not split over {ctx.tp} devices: tp {fitting}, the other devices hold replicas",
        severity="info",
        n_heads=n_heads,
        devices=ctx.tp,
        tp=fitting,
    )
    ctx.tp = fitting


def _default_variant(ctx: _Context, n_heads: int, params: int) -> tuple[Variant, int]:
    """MHA020/MHA021/MHA023 under MHA091/MHA092: (variant, n_kv_heads) before any fit check."""
    r = ctx.request
    long_wide = n_heads > C.MHA_LONG_CONTEXT_MAX_HEADS and r.seq_len > C.MHA_LONG_CONTEXT_TOKENS
    gqa = gqa_kv_heads(n_heads, ctx.tp) or gqa_kv_heads(n_heads, ctx.tp, max_group=n_heads)
    if r.variant is not None:
        ctx.trace.fire("MHA023", f"--variant {r.variant} requested", variant=r.variant)
        if r.variant == "MHA" and long_wide:
            ctx.trace.fire(
                "MHA091",
                f"MHA with {n_heads} heads at {r.seq_len:,} tokens kept because it was asked for: its cache is"
                " priced below and GQA/MLA are offered in the alternatives",
                severity="warning",
                n_heads=n_heads,
                seq_len=r.seq_len,
                requested=True,
            )
        if r.variant == "MLA" and params < C.MLA_MIN_PARAMS:
            ctx.trace.fire(
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
        ctx.trace.fire(
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
        ctx.trace.fire("MHA021", f"MHA: {why}", n_heads=n_heads, priority=r.priority, seq_len=r.seq_len)
        return "MHA", n_heads
    if not gqa:
        return "MQA", 1
    ctx.trace.fire(
        "MHA020",
        f"GQA with {gqa[0]} KV heads: {n_heads // gqa[0]} query heads per KV head",
        n_heads=n_heads,
        n_kv_heads=gqa[0],
        tp=ctx.tp,
    )
    return "GQA", gqa[0]


def _escalations(ctx: _Context, n_heads: int, n_kv_heads: int, params: int) -> list[tuple[Variant, int]]:
    """MHA022: smaller caches to try, in order: fewer KV heads, then MLA (>= 1B) or MQA."""
    steps: list[tuple[Variant, int]] = [
        ("GQA", k)
        for k in sorted(gqa_kv_heads(n_heads, ctx.tp, max_group=2 * C.MAX_QUALITY_GROUP), reverse=True)
        if k < n_kv_heads
    ]
    if params >= C.MLA_MIN_PARAMS:
        steps.append(("MLA", n_heads))
    else:
        ctx.trace.fire(
            "MHA092",
            f"MLA not considered: {format_count(params)} parameters < {C.MLA_MIN_PARAMS / 1e9:g}B",
            severity="info",
            params=params,
            requested=False,
        )
    steps.append(("MQA", 1))
    return steps


# The recommender --------------------------------------------------------------------------------


def recommend(request: RecommendRequest) -> RecommendResult:
    """Run the skill on ``request``: see the module docstring for the steps."""
    ctx = _Context(request)
    budget = request.params
    vocab, tied = vocab_for(budget, request.vocab_size)

    shape = _choose_shape(ctx, budget, vocab, tied)
    d_model, head_dim, variant, n_kv, model = shape
    n_heads = model.n_heads

    model, variant = _fit_variant(ctx, budget, model, variant, n_kv, d_model, head_dim, vocab, tied)
    if variant == "MLA":
        assert model.mla is not None
        ctx.trace.fire(
            "MHA030",
            f"latent {model.mla.kv_lora_rank} + RoPE key {model.mla.qk_rope_head_dim} ="
            f" {model.mla.latent_dim} values per token per layer",
            kv_lora_rank=model.mla.kv_lora_rank,
            qk_rope_head_dim=model.mla.qk_rope_head_dim,
            q_lora_rank=model.mla.q_lora_rank,
        )

    params = count_params(model)
    kv = ctx.footprint(model)
    memory = ctx.plan(model, kv)
    roofline = None
    if memory is not None and ctx.target is not None:
        roofline = estimate_roofline(
            model, ctx.target, active_params=params.active, weight_bytes_per_device=memory.weight_bytes_per_device,
            kv=kv,
        )  # fmt: skip
    way_out = _flag_fit(ctx, model, kv, memory)

    init = _init_plan(ctx, model)
    ctx.trace.fire("MHA041", "no biases on Q, K, V, O", qkv_bias=False, o_bias=False)
    hook = TestHook(
        task="induction",
        pattern="A B ... A -> B",
        n_layers=2,
        n_heads=n_heads,
        n_kv_heads=model.kv_heads,
        head_dim=model.dim_per_head,
        variant=variant,
        accuracy_threshold=C.TEST_ACCURACY,
        how="train a 2-layer copy of this attention on random token sequences with a repeated segment; "
        "predict the token after the second A (run `mha verify CONFIG`)",
    )
    ctx.trace.fire("MHA050", f"2-layer induction task at >= {C.TEST_ACCURACY:.0%}", n_layers=2)

    alternatives = _alternatives(ctx, model, budget)
    reason = _variant_reason(ctx, model, kv, memory, alternatives)
    summary = ModelSummary(
        d_model=model.d_model, n_layers=model.n_layers, n_heads=n_heads, n_kv_heads=model.kv_heads,
        head_dim=model.dim_per_head, variant=variant, total_params=params.total, d_ff=model.d_ff,
        vocab_size=model.vocab_size, tied_embeddings=model.tied_embeddings,
        kv_lora_rank=model.mla.kv_lora_rank if model.mla else None,
    )  # fmt: skip
    notes = [reason, "rules fired: " + ", ".join(ctx.trace.ids)]
    if request.variant is not None:
        notes.append(f"{C.EXPLICIT_VARIANT_NOTE}{request.variant}")  # `mha check` honours it (MHA091)
    config = MhaConfig(model=model, deployment=ctx.deployment(), notes=notes)
    return RecommendResult(
        request=request,
        model=summary,
        variant_reason=reason,
        budget_deviation=(params.total - budget) / budget,
        params=params,
        weight_bytes=weight_bytes(params.total, request.weight_dtype),
        kv=kv,
        memory=memory,
        roofline=roofline,
        fits=memory.fits if memory else None,
        way_out=way_out,
        init=init,
        qkv_bias=False,
        o_bias=False,
        testability=hook,
        alternatives=alternatives,
        trace=ctx.trace.findings,
        rules_fired=ctx.trace.ids,
        config=config,
    )


def _designs_at(
    ctx: _Context, d_model: int, budget: int, vocab: int, tied: bool
) -> tuple[Any, Trace, Variant, int] | None:
    """At width ``d_model``: (a depth -> ModelSpec builder, the trace of its head and variant choices, the variant,
    its KV-head count), or None
    when an explicit --tp cannot split this width's heads (the ladder then tries the next width)."""
    r = ctx.request
    head_dim = head_dim_for(d_model)
    n_heads = d_model // head_dim
    if n_heads % ctx.tp and r.tp is not None and not r.d_model:
        return None
    scratch = Trace()
    saved, ctx.trace = ctx.trace, scratch
    try:
        _fit_tp(ctx, n_heads)
        variant, n_kv = _default_variant(ctx, n_heads, budget)
    finally:
        ctx.trace = saved

    def make(layers: int, v: Variant = variant, k: int = n_kv) -> ModelSpec:
        return build_model(
            d_model=d_model, n_layers=layers, head_dim=head_dim, variant=v, n_kv_heads=k, vocab=vocab, tied=tied
        )

    return make, scratch, variant, n_kv


def _widths(ctx: _Context, budget: int) -> list[int]:
    return [ctx.request.d_model] if ctx.request.d_model else widths_to_try(budget)


def _record_depth(ctx: _Context, model: ModelSpec, budget: int, revised_by: str = "") -> None:
    """MHA002 for the design as it stands; a later step that changes the depth re-records it in place."""
    total = count_params(model).total
    after = f" (re-solved after {revised_by})" if revised_by else ""
    ctx.trace.refire(
        "MHA002",
        f"{model.n_layers} layers{after}: {format_count(total)} parameters, {(total - budget) / budget:+.1%} of the"
        " budget",
        n_layers=model.n_layers,
        total_params=total,
        budget=budget,
    )


def _choose_shape(ctx: _Context, budget: int, vocab: int, tied: bool) -> tuple[int, int, Variant, int, ModelSpec]:
    """MHA001-MHA004, MHA010, MHA011: width, heads, provisional variant and depth within the budget."""
    r = ctx.request
    tp_before = ctx.tp
    for d_model in _widths(ctx, budget):
        ctx.tp = tp_before
        designs = _designs_at(ctx, d_model, budget, vocab, tied)
        if designs is None:
            continue
        make, scratch, variant, n_kv = designs
        solved = solve_layers(budget, make)
        if solved is None:
            continue
        _, model = solved
        head_dim, n_heads = model.dim_per_head, model.n_heads
        how = "fixed by --d-model" if r.d_model else f"ideal {ideal_width(budget):,.0f} snapped to the ladder"
        ctx.trace.fire("MHA001", f"d_model {d_model} ({how})", d_model=d_model, ideal=round(ideal_width(budget)))
        ctx.trace.fire(
            "MHA004",
            f"vocabulary {vocab:,}, {'tied' if tied else 'untied'} output head",
            vocab_size=vocab,
            tied_embeddings=tied,
        )
        ctx.trace.fire("MHA003", f"SwiGLU d_ff {model.d_ff} = {C.FFN_MULTIPLIER} x {d_model}", d_ff=model.d_ff)
        ctx.trace.fire("MHA010", f"head_dim {head_dim} at width {d_model}", head_dim=head_dim)
        ctx.trace.fire("MHA011", f"{n_heads} heads = {d_model} / {head_dim}", n_heads=n_heads)
        ctx.trace.findings.extend(scratch.findings)
        _record_depth(ctx, model, budget)
        return d_model, head_dim, variant, n_kv, model
    ctx.tp = tp_before
    return _refuse_budget(ctx, budget, vocab, tied)


def _refuse_budget(ctx: _Context, budget: int, vocab: int, tied: bool) -> Any:
    """MHA093/MHA094: say why no design meets the budget, with the range of budgets that work."""
    r = ctx.request
    tp_before = ctx.tp
    smallest = largest = None
    widest = narrowest = 0
    for d_model in _widths(ctx, budget):
        ctx.tp = tp_before
        designs = _designs_at(ctx, d_model, budget, vocab, tied)
        if designs is None:
            continue
        make = designs[0]
        low = count_params(make(MIN_LAYERS)).total
        high = count_params(make(C.MAX_LAYERS)).total
        if smallest is None or low < smallest:
            smallest, narrowest = low, d_model
        if largest is None or high > largest:
            largest, widest = high, d_model
    if smallest is None or largest is None:
        raise BadInputError(f"no width on the ladder splits over --tp {r.tp} (rule MHA024 tp-divisibility)")
    where = f"--d-model {r.d_model}" if r.d_model else "the widest width on the ladder"
    span = f"{format_count(smallest)} to {format_count(largest)}"
    if budget > largest:
        raise BadInputError(
            f"parameter budget {format_count(budget)} is too large (rule MHA094 budget-too-large): {where} reaches at"
            f" most {format_count(largest)} with {C.MAX_LAYERS} layers (d_model {widest}); use --params from {span}"
            + ("" if r.d_model else " (7B = 7,000,000,000)")
        )
    if budget < smallest:
        raise BadInputError(
            f"parameter budget {format_count(budget)} is too small (rule MHA093 budget-too-small): {MIN_LAYERS} layers"
            f" at d_model {narrowest} with a {vocab:,}-token vocabulary already have {format_count(smallest)};"
            f" use --params from {span} (7B = 7,000,000,000) or lower --vocab"
        )
    raise BadInputError(
        f"no design reaches {format_count(budget)} parameters within +-{C.BUDGET_TOLERANCE:.0%} at"
        f" {f'--d-model {r.d_model}' if r.d_model else 'any width on the ladder'}"
        f" (rule MHA093 budget-too-small): change --params (range {span}) or --d-model"
    )


def _fit_variant(
    ctx: _Context,
    budget: int,
    model: ModelSpec,
    variant: Variant,
    n_kv: int,
    d_model: int,
    head_dim: int,
    vocab: int,
    tied: bool,
) -> tuple[ModelSpec, Variant]:
    """MHA022: under priority inference, step the cache down until the batch fits (depth re-solved)."""
    r = ctx.request
    plan = ctx.plan(model)
    if r.variant is not None or r.priority != "inference" or plan is None or plan.fits or not plan.weights_fit:
        return model, variant
    for step_variant, step_kv in _escalations(ctx, model.n_heads, n_kv, budget):

        def make(layers: int, v: Variant = step_variant, k: int = step_kv) -> ModelSpec:
            return build_model(
                d_model=d_model, n_layers=layers, head_dim=head_dim, variant=v, n_kv_heads=k, vocab=vocab, tied=tied
            )

        solved = solve_layers(budget, make)
        if solved is None:
            continue
        candidate = solved[1]
        candidate_plan = ctx.plan(candidate)
        if candidate_plan is not None and candidate_plan.fits:
            label = f"GQA-{step_kv}" if step_variant == "GQA" else step_variant
            ctx.trace.fire(
                "MHA022",
                f"{variant}-{n_kv} cache for batch {r.batch} does not fit ({format_bytes(plan.kv_bytes_per_device)}"
                f" per device); {label} does ({format_bytes(candidate_plan.kv_bytes_per_device)})",
                from_variant=variant,
                from_kv_heads=n_kv,
                to_variant=step_variant,
                to_kv_heads=candidate.kv_heads,
                batch=r.batch,
            )
            _record_depth(ctx, candidate, budget, revised_by=f"MHA022 chose {label}")
            return candidate, step_variant
    ctx.trace.fire(
        "MHA022",
        f"no smaller cache fits batch {r.batch}: kept {variant}",
        from_variant=variant,
        to_variant=variant,
        batch=r.batch,
    )
    return model, variant


def _flag_fit(ctx: _Context, model: ModelSpec, kv: KvFootprint, plan: MemoryPlan | None) -> list[str]:
    """MHA025/MHA026: a plan that does not fit is flagged with the ways out."""
    if plan is None or plan.fits or ctx.target is None:
        return []
    r = ctx.request
    target = ctx.target.target
    total = count_params(model).total
    devices = _devices_that_fit(ctx, model, total)
    ways = [f"--target {devices}x{target.id} (tensor parallel over {devices} devices)"] if devices else []
    if not plan.weights_fit:
        ctx.trace.fire(
            "MHA025",
            f"weights need {format_bytes(plan.weight_bytes_per_device)} per device, usable"
            f" {format_bytes(plan.usable_bytes)}",
            weight_bytes_per_device=plan.weight_bytes_per_device,
            usable_bytes=plan.usable_bytes,
            devices_needed=devices,
        )
        for dtype in ("fp8", "int4"):
            per_device = -(-weight_bytes(total, dtype) // kv.tp)
            if per_device < plan.usable_bytes:
                ways.append(f"--weight-dtype {dtype} (weights {format_bytes(per_device)} per device)")
                break
        return ways
    ctx.trace.fire(
        "MHA026",
        f"batch {r.batch} needs {format_bytes(plan.kv_bytes_per_device)} of cache per device;"
        f" {counted(plan.max_sequences, 'sequence')} of {r.seq_len:,} tokens {'fits' if plan.max_sequences == 1 else 'fit'}",
        kv_bytes_per_device=plan.kv_bytes_per_device,
        max_sequences=plan.max_sequences,
    )
    if plan.max_sequences > 0:  # the batch is shared by the replicas, so the total is what fits
        ways.append(f"--batch {plan.max_sequences}")
    if r.kv_dtype in ("bf16", "fp16"):
        ways.append("--kv-dtype fp8 (half the cache of a 16-bit one)")
    elif r.kv_dtype == "fp32":
        ways.append("--kv-dtype fp8 (a quarter of the cache of a 32-bit one)")
    if plan.max_tokens_per_device and r.batch:
        # Flag values are written as the options parse them: no thousands separators.
        ways.append(f"--seq {plan.max_tokens_per_device // plan.sequences_per_replica} (the context this batch fits)")
    if r.priority != "inference" and r.variant is None:
        ways.append("--priority inference (lets the rules shrink the cache: fewer KV heads, MLA)")
    return ways


def _devices_that_fit(ctx: _Context, model: ModelSpec, total_params: int) -> int | None:
    """The smallest power-of-two tensor-parallel group of the target's device that holds the plan."""
    assert ctx.target is not None
    r = ctx.request
    for devices in (2**i for i in range(1, 13)):
        if model.n_heads % devices or not (model.mla is not None or tp_compatible(model.kv_heads, devices)):
            continue
        group = resolve_target(f"{devices}x{ctx.target.target.id}")
        kv = kv_footprint(model, seq_len=r.seq_len, batch=r.batch, kv_dtype=r.kv_dtype, tp=devices)
        if plan_memory(group, total_params=total_params, weight_dtype=r.weight_dtype, kv=kv).fits:
            return devices
    return None


def _init_plan(ctx: _Context, model: ModelSpec) -> InitPlan:
    """MHA040: Xavier normal for the projections; O scaled by 1/sqrt(2 n_layers)."""
    d = model.d_model

    def xavier(fan_in: int, fan_out: int) -> float:
        return math.sqrt(2.0 / (fan_in + fan_out))

    depth = 1 / math.sqrt(2 * model.n_layers)
    if model.mla is not None:
        mla = model.mla
        std = {
            "q": xavier(d, model.n_heads * mla.qk_head_dim),
            "kv_down": xavier(d, mla.latent_dim),
            "kv_up": xavier(mla.kv_lora_rank, model.n_heads * (mla.qk_nope_head_dim + mla.v_head_dim)),
            "o": xavier(model.n_heads * mla.v_head_dim, d) * depth,
        }
    else:
        q_width, kv_width = model.attention_width, model.kv_heads * model.dim_per_head
        std = {
            "q": xavier(d, q_width),
            "k": xavier(d, kv_width),
            "v": xavier(d, kv_width),
            "o": xavier(q_width, d) * depth,
        }
    ctx.trace.fire(
        "MHA040",
        f"Xavier normal; O scaled by 1/sqrt(2 x {model.n_layers})",
        **{f"{name}_std": value for name, value in std.items()},
    )
    return InitPlan(scheme="xavier-normal, O scaled by 1/sqrt(2 n_layers)", std=std)


def _alternatives(ctx: _Context, model: ModelSpec, budget: int) -> list[Alternative]:
    """The recommended shape under MHA, every tp-compatible GQA group, MQA and MLA (as ``mha kv`` compares them)."""
    r = ctx.request
    specs: dict[str, tuple[Variant, ModelSpec]] = {}
    for option in variant_options(model):
        specs[option.label] = (option.variant, option.model)
    base = specs["MHA"][1]
    for k in sorted(gqa_kv_heads_choices(model.n_heads), reverse=True):
        if tp_compatible(k, ctx.tp):
            specs[f"GQA-{k}"] = ("GQA", base.model_copy(update={"n_kv_heads": k, "variant": "GQA"}))
    # variant_options prices a hypothetical MLA with mla_for_shape, the same block as MHA030 (mla_block).
    order = ["MHA", *sorted((k for k in specs if k.startswith("GQA")), key=lambda k: -int(k[4:])), "MQA", "MLA"]
    rows = []
    for label in order:
        if label not in specs:
            continue
        variant, spec = specs[label]
        if not tp_compatible(spec.kv_heads, ctx.tp) and spec.mla is None:
            continue
        kv = ctx.footprint(spec)
        plan = ctx.plan(spec, kv)
        notes = []
        if variant == "MHA" and spec.n_heads > C.MHA_LONG_CONTEXT_MAX_HEADS and r.seq_len > C.MHA_LONG_CONTEXT_TOKENS:
            notes.append("only if asked (MHA091)")
        if variant == "MLA" and budget < C.MLA_MIN_PARAMS:
            notes.append("only if asked (MHA092)")
        current = spec.variant == model.variant and spec.kv_heads == model.kv_heads
        rows.append(
            Alternative(
                label=label, variant=variant, n_kv_heads=spec.kv_heads, is_recommended=current,
                bytes_per_token=kv.bytes_per_token, total_bytes=kv.total_bytes,
                max_sequences=plan.max_sequences if plan else None, total_params=count_params(spec).total,
                quality_risk=quality_risk(variant, spec.q_per_kv), quality_source=QUALITY_SOURCES[variant],
                note="; ".join(notes),
            )
        )  # fmt: skip
    return rows


def _variant_reason(
    ctx: _Context, model: ModelSpec, kv: KvFootprint, plan: MemoryPlan | None, alternatives: list[Alternative]
) -> str:
    """One sentence tying the variant to the KV-cache limits, priced against MHA (or, for MHA, against GQA)."""
    r = ctx.request
    per_seq = format_bytes(kv.bytes_per_sequence)
    fit = ""
    if plan is not None and plan.weights_fit:
        verb = "fits" if plan.max_sequences == 1 else "fit"
        fit = f"; {counted(plan.max_sequences, 'sequence')} of this length {verb} beside the weights on {r.target}"
    elif plan is not None:
        fit = f"; the weights alone do not fit one device of {r.target}"
    if model.variant == "MHA":
        return _mha_reason(ctx, model, per_seq, alternatives) + fit + "."
    mha = next(a for a in alternatives if a.variant == "MHA")
    ratio = mha.bytes_per_token / kv.bytes_per_token
    what = {
        "GQA": f"GQA-{model.kv_heads} ({model.q_per_kv} query heads per KV head, quality risk"
        f" {quality_risk('GQA', model.q_per_kv)})",
        "MQA": f"MQA (one shared KV head, quality risk {quality_risk('MQA', model.q_per_kv)})",
        "MLA": f"MLA (a {model.mla.latent_dim if model.mla else 0}-value latent per token per layer, more FLOPs)",
    }[model.variant or "GQA"]
    asked = " (asked for with --variant)" if r.variant is not None else ""
    return (
        f"{what}{asked} divides the KV cache by {ratio:.1f} versus MHA, to {per_seq} per {r.seq_len:,}-token"
        f" sequence{fit}."
    )


def _mha_reason(ctx: _Context, model: ModelSpec, per_seq: str, alternatives: list[Alternative]) -> str:
    """Why MHA, with its cache priced against the GQA and MLA rows of the alternatives."""
    r = ctx.request
    if r.variant == "MHA":
        why = "asked for with --variant MHA"
    elif model.n_heads <= C.FEW_HEADS:
        why = f"{model.n_heads} heads, too few for sharing K/V to save much"
    elif not gqa_kv_heads_choices(model.n_heads):
        why = f"{model.n_heads} heads have no GQA divisor"
    else:
        why = "priority training at short context keeps the reference quality"
    cheaper = [a for a in alternatives if a.label == f"GQA-{C.GQA_KV_HEADS}" or a.variant == "MLA"]
    if not any(a.variant == "GQA" for a in cheaper):
        cheaper = [a for a in alternatives if a.variant == "GQA"][:1] + cheaper
    prices = [f"{format_bytes(a.bytes_per_token * r.seq_len)} with {a.label}" for a in cheaper]
    priced = f"; the same shape would cache {', '.join(prices)} (see the alternatives)" if prices else ""
    return f"MHA ({why}): {model.n_heads} KV heads cache {per_seq} per {r.seq_len:,}-token sequence{priced}"
