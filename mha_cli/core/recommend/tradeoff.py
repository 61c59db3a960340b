"""Stage 2: one trade-off step over every attention candidate (MHA020-MHA024, MHA027, under MHA091/MHA092).

Candidates at the chosen width: MHA, GQA at every KV-head count that divides the heads (and an explicit --tp),
MQA, and MLA at its latent. Each is solved for depth (the budget stays spent), given the smallest
tensor-parallel degree of the target at which its weights and the requested batch fit (data-parallel replicas
on the other devices), and priced: cache per token, per device, the batch that fits. The pick is the lowest
quality risk that meets the priority's goal, ties broken by the smaller cache:

- balanced: a cache no larger than 8 KV heads' (or group 8 when the heads are many), as public designs keep it;
- inference: the same, and the requested batch must fit the target;
- training: quality first: MHA allowed up to 16 heads at up to 32K tokens, else as balanced.
"""

from typing import NamedTuple

from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import KvFootprint
from mha_cli.core.kv_heads import balanced_kv_heads, small_kv_heads
from mha_cli.core.memory import MemoryPlan
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.shape import record_depth
from mha_cli.core.recommend.width import Shape, solve_at
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import counted
from mha_cli.core.schemas import ModelSpec, Variant
from mha_cli.core.tensor_parallel import tp_splits_evenly

QUALITY_SOURCES: dict[Variant, str] = {
    "MHA": "the reference the others are measured against",
    "GQA": "Ainslie et al. 2023",
    "MQA": "Shazeer 2019",
    "MLA": "DeepSeek-V2 2024",
}
"""Where each variant's quality-risk label comes from."""
RISK_LABELS = ("none", "low", "low+FLOPs", "moderate", "high")


def quality_risk(variant: Variant, group: int) -> tuple[int, int]:
    """(risk class, group size): MHA 0; GQA/MQA with at most 8 query heads per KV head 1 (near-MHA, Ainslie et
    al.); MLA 2 (MHA-level quality reported, more FLOPs per token); group 9-16 3; wider 4. Lower is safer."""
    if variant == "MHA":
        return 0, 1
    if variant == "MLA":
        return 2, 0
    if group <= C.MAX_QUALITY_GROUP:
        return 1, group
    return (3, group) if group <= 2 * C.MAX_QUALITY_GROUP else (4, group)


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class Option(NamedTuple):
    """One attention candidate at the chosen width, solved for depth and priced on the target."""

    label: str
    variant: Variant
    n_kv_heads: int | None
    """KV heads (None for MLA, which caches one latent)."""
    model: ModelSpec
    tp: int
    tp_why: str
    """Why this tp (MHA024)."""
    kv: KvFootprint
    plan: MemoryPlan | None
    risk: tuple[int, int]
    excluded: str = ""
    """Why the rules may not choose it ("" when they may)."""
    verdict: str = ""
    pattern: str | None = None
    """A local:global window pattern (MHA028), e.g. ``5:1 w1024``; None: every layer global."""

    @property
    def cache_values(self) -> int:
        """Values cached per token per layer: 2 x KV heads x head_dim, or the MLA latent + RoPE key."""
        if self.model.attention.mla is not None:
            return self.model.attention.mla.latent_dim
        return 2 * self.model.attention.n_kv_heads * self.model.attention.head_dim

    @property
    def fits(self) -> bool | None:
        return None if self.plan is None else self.plan.fits

    @property
    def risk_label(self) -> str:
        return RISK_LABELS[self.risk[0]]


def smallest_tp(ctx: Context, model: ModelSpec) -> tuple[int, str, KvFootprint, MemoryPlan | None]:
    """MHA024: (tp, why, the cache and the memory plan at that tp). --tp when given; else the smallest tp of the
    target (dividing its devices and splitting the heads) at which the weights and the requested batch fit; the
    other devices hold data-parallel replicas. The plan it tried last is returned, not planned again."""
    r = ctx.request
    if r.tp is not None:
        return _priced(ctx, model, r.tp, f"--tp {r.tp} asked for")
    if ctx.target is None:
        return _priced(ctx, model, 1, "no target: one device")
    devices = ctx.target.n_devices
    splits = [
        t
        for t in range(1, devices + 1)
        if devices % t == 0 and tp_splits_evenly(model.attention.n_heads, model.attention.n_kv_heads, t)
    ]
    for tp in splits:
        kv = ctx.footprint(model, tp)
        plan = ctx.plan(model, tp, kv)
        if plan is not None and plan.fits:
            return tp, f"the smallest tp at which the weights and batch {r.batch} fit", kv, plan
    return splits[-1], f"nothing fits: the widest split of the {devices} devices", kv, plan


def _priced(ctx: Context, model: ModelSpec, tp: int, why: str) -> tuple[int, str, KvFootprint, MemoryPlan | None]:
    kv = ctx.footprint(model, tp)
    return tp, why, kv, ctx.plan(model, tp, kv)


def candidates(ctx: Context, shape: Shape) -> list[Option]:
    """Every attention candidate at ``shape``'s width, each solved for depth and priced at its tp."""
    r = ctx.request
    n_heads = shape.frame.n_heads
    choices: list[tuple[str, Variant, int]] = [("MHA", "MHA", n_heads)]
    choices += [(f"GQA-{k}", "GQA", k) for k in range(n_heads - 1, 1, -1) if n_heads % k == 0]
    if n_heads > 1:
        choices.append(("MQA", "MQA", 1))
    mla_heads = shape.frame.d_model // shape.frame.head_dim  # MLA keeps d_model / head_dim heads (not MHA008's 2x)
    choices.append(("MLA", "MLA", mla_heads))
    options = []
    for label, variant, n_kv in choices:
        if variant == "MLA" and r.kv_dtype == "nvfp4":
            continue  # vLLM refuses an nvfp4 cache with MLA (core.kv.check_kv_dtype_fits): no candidate to serve
        heads = mla_heads if variant == "MLA" else n_heads
        if r.tp is not None and not tp_splits_evenly(heads, n_kv, r.tp):
            continue  # an explicit --tp fixes which KV-head counts exist at all (MHA024)
        model = solve_at(ctx, shape.frame, variant, n_kv, shape.moe)
        if model is None:
            continue  # no depth at this width spends the budget with this attention
        tp, why, kv, plan = smallest_tp(ctx, model)
        risk = quality_risk(variant, heads // n_kv)
        options.append(
            Option(
                label=label, variant=variant, n_kv_heads=None if variant == "MLA" else n_kv, model=model, tp=tp,
                tp_why=why, kv=kv, plan=plan, risk=risk, excluded=_exclusion(ctx, variant, n_heads, shape),
            )
        )  # fmt: skip
    return options


def windowed(model: ModelSpec, local: int, global_: int, window: int) -> ModelSpec:
    """``model`` with ``local`` sliding-window layers of ``window`` tokens before each ``global_`` global ones."""
    pattern = ["local"] * local + ["global"] * global_
    return model.model_copy(
        update={"layers": model.layers.model_copy(update={"sliding_window": window, "pattern": pattern})}
    )


def pattern_label(local: int, global_: int, window: int) -> str:
    """``5:1 w1024``."""
    return f"{local}:{global_} w{window}"


def long_inference(ctx: Context) -> bool:
    """MHA028: --priority inference at a context where window patterns are candidates."""
    return ctx.request.priority == "inference" and ctx.request.seq_len >= C.WINDOW_MIN_CONTEXT


def window_options(ctx: Context, base: Option) -> list[Option]:
    """MHA028: ``base``'s attention with each local:global pattern whose window is shorter than the context, priced
    at the same depth (windows change no weight) and its attention's risk; none for MLA, MoE or short contexts."""
    r = ctx.request
    if base.model.attention.mla is not None or base.model.block.moe is not None or r.seq_len < C.WINDOW_MIN_CONTEXT:
        return []
    excluded = "" if long_inference(ctx) else "MHA028: picked only under --priority inference"
    options = []
    for local, global_, window, _source in C.WINDOW_PATTERNS:
        if window >= r.seq_len:
            continue
        model = windowed(base.model, local, global_, window)
        tp, why, kv, plan = smallest_tp(ctx, model)
        label = pattern_label(local, global_, window)
        options.append(
            base._replace(label=f"{base.label} {label}", model=model, tp=tp, tp_why=why, kv=kv, plan=plan,
                    excluded=base.excluded or excluded, pattern=label)
        )  # fmt: skip
    return options


def _exclusion(ctx: Context, variant: Variant, n_heads: int, shape: Shape) -> str:
    """The hard rule or request that keeps a candidate from being chosen ("" when none does)."""
    r = ctx.request
    if variant == "MLA" and r.variant not in (None, "MLA") and shape.budget < C.MLA_MIN_PARAMS:
        return "MHA092"  # review 373 #4: the rule says more than the request does (and the MHA reason leaves it out)
    if r.variant is not None:
        return "" if variant == r.variant else f"not the --variant {r.variant} asked for"
    if variant == "MHA" and n_heads > C.MHA_LONG_CONTEXT_MAX_HEADS and r.seq_len > C.MHA_LONG_CONTEXT_TOKENS:
        return "MHA091"
    if variant == "MLA" and shape.budget < C.MLA_MIN_PARAMS:
        return "MHA092"
    return ""


OVER_CAP = "more cache than the balanced default"
"""The verdict of an option over ``cache_cap``, followed by the balanced KV-head count it is over (trial 300 #4: at 20
heads GQA-5 read as within "8 KV heads'" cache, where the balanced count is 4, the most KV heads tp 2/4/8 split)."""


def cache_cap(ctx: Context, n_heads: int) -> int | None:
    """2 x the balanced KV-head count (``kv_heads.balanced_kv_heads``, at the --tp asked): the cache per token per
    layer, in units of head_dim, the balanced goal allows; None (no cap) for training's MHA, few heads, or heads with no GQA divisor.
    An explicit --variant keeps the cap: ``--variant GQA`` is GQA at the balanced KV-head count, not the smallest
    group (a variant with nothing within the cap, MHA, is kept by ``pick``'s fallback)."""
    if training_keeps_mha(ctx, n_heads):
        return None
    if ctx.small and (small := small_kv_heads(n_heads)) is not None:  # MHA012: few KV heads however few the heads
        return 2 * small
    kv = balanced_kv_heads(n_heads, ctx.request.tp)
    if n_heads <= C.FEW_HEADS or kv is None:
        return None  # few heads, or no GQA divisor: nothing between MHA and MQA to cap at
    return 2 * kv


def _nothing_allowed(variant: str | None, n_heads: int, head_dim: int, tp: int | None) -> str:
    """The one line for a width at which no candidate is allowed (``--variant`` and ``--tp`` as asked)."""
    shape = f"{n_heads} heads of {head_dim} (d_model {n_heads * head_dim:,})"
    split = f" that --tp {tp} splits" if tp is not None else ""
    if variant == "GQA":
        why = f"{shape} has no KV-head count strictly between 1 and {n_heads} that divides the heads{split}"
    else:
        why = f"{shape} allows no {variant or 'attention'} design{split}"
    return f"--variant {variant}: {why}; give another --d-model or leave out --variant" if variant else why


def pick(ctx: Context, options: list[Option], n_heads: int, head_dim: int) -> tuple[Option, list[Option]]:
    """The lowest quality risk that meets the goal, ties by the smaller group, then the smaller cache (at long
    context under inference: within the lowest risk class, window patterns included, the most sequences the engine
    admits, then the design without windows where that ties, then the smallest cache at the context, MHA028);
    every option gets its verdict."""
    r = ctx.request
    allowed = [o for o in options if not o.excluded]
    if not allowed:  # trial 362 #1: --variant GQA at a prime head count left nothing, and min() raised
        raise BadInputError(_nothing_allowed(r.variant, n_heads, head_dim, r.tp))
    cap = cache_cap(ctx, n_heads)
    cap_values = None if cap is None else cap * head_dim

    def within_cap(o: Option) -> bool:
        return cap_values is None or o.cache_values <= cap_values

    pool = [o for o in allowed if within_cap(o)] or allowed
    must_fit = r.priority == "inference" and ctx.target is not None
    fitting = [o for o in pool if o.fits] if must_fit else pool
    windows = any(o.pattern for o in pool)

    def admitted(o: Option) -> int:
        """Sequences the engine runs at once (0 without a target): what a smaller cache buys on the device."""
        return 0 if o.plan is None else o.plan.max_sequences

    def windowed(o: Option) -> bool:
        """A window the engine prices (a target's plan): where admission ties, the design without one is kept."""
        return o.pattern is not None and o.plan is not None

    def goal(o: Option) -> tuple:
        # at long context under inference: the lowest risk class, then what the engine admits, then no window where
        # that ties (simpler, no quality risk from the window), then the cache
        if windows:
            return (o.risk[0], -admitted(o), windowed(o), o.kv.bytes_per_sequence)
        return (o.risk, o.kv.bytes_per_token)

    if fitting:
        chosen = min(fitting, key=goal)
    elif ctx.target is not None and not any(admitted(o) for o in pool):  # the weights are what does not fit
        chosen = min(pool, key=lambda o: (o.risk, o.kv.bytes_per_token))  # a smaller cache would not help
    else:  # nothing fits: what the engine admits most of, then the risk (a smaller cache that admits no more buys
        # nothing: the engine's max_num_seqs caps them alike), then the smaller cache
        chosen = min(pool, key=lambda o: (-admitted(o), o.risk,
                                          o.kv.bytes_per_sequence if windows else o.kv.bytes_per_token))  # fmt: skip
    rows = []
    for o in options:
        if o is chosen:
            verdict = "chosen"
        elif o.excluded:
            verdict = f"excluded ({o.excluded})"
        elif not within_cap(o):  # the balanced count said: 4, not 5, at 20 heads: 5 does not split over tp 8
            verdict = f"{OVER_CAP} ({cap // 2} KV heads)" if cap is not None else OVER_CAP
        elif must_fit and not o.fits:
            verdict = "does not fit the batch"
        elif o.risk < chosen.risk and not windows:
            verdict = "lower risk, not chosen"  # cannot happen unless nothing fits
        elif windows and o.risk[0] == chosen.risk[0] and admitted(o) < admitted(chosen):
            verdict = "same risk, fewer sequences admitted"  # a smaller cache the engine's pages do not turn into seats
        elif windowed(o) and not windowed(chosen) and o.risk[0] == chosen.risk[0] and admitted(o) == admitted(chosen):
            verdict = WINDOW_GAINS_NOTHING  # the window's smaller cache buys no sequence: kept without it
        elif o.risk == chosen.risk or (windows and o.risk[0] == chosen.risk[0]):
            verdict = "same risk, larger cache"
        elif o.risk[0] == chosen.risk[0]:
            verdict = "same risk class, larger group"
        elif windows and o.risk[0] < chosen.risk[0]:
            verdict = "lower risk, not chosen"  # cannot happen unless nothing fits
        else:
            verdict = "fits, higher risk" if must_fit else "higher risk"
        rows.append(o._replace(verdict=verdict))
    return next(o for o in rows if o.verdict == "chosen"), rows


WINDOW_GAINS_NOTHING = "same risk, as many sequences admitted: kept without windows"
"""MHA028's verdict on a window pattern whose smaller cache the engine admits no more sequences of than the design
without windows (vLLM's sliding groups reserve the window plus a whole step each)."""


def trade_off(ctx: Context, shape: Shape) -> tuple[Option, list[Option]]:
    """Price every candidate, pick one, and record the whole step in the trace."""
    options = candidates(ctx, shape)
    windows: list[Option] = []
    if ctx.request.seq_len >= C.WINDOW_MIN_CONTEXT:  # MHA028: the patterns on the attention the balanced rules pick
        balanced = pick(ctx.balanced(), options, shape.frame.n_heads, shape.frame.head_dim)[0]
        windows = window_options(ctx, balanced)
    chosen, rows = pick(ctx, options + windows, shape.frame.n_heads, shape.frame.head_dim)
    n_heads = shape.frame.n_heads
    _record_requests_and_refusals(ctx, rows, n_heads)
    for o in rows:
        fit = "" if o.plan is None else f", max batch {o.plan.max_sequences:,} at tp {o.tp}"
        windowed_cache = f" ({format_bytes(o.kv.bytes_per_sequence)} per sequence)" if o.pattern else ""
        ctx.trace.fire(
            "MHA027" if o.pattern is None else "MHA028",
            f"{o.label}, {o.model.n_layers} layers: {o.kv.bytes_per_token:,} B/token{windowed_cache}{fit}, risk"
            f" {o.risk_label}: {o.verdict}",
            label=o.label,
            n_layers=o.model.n_layers,
            bytes_per_token=o.kv.bytes_per_token,
            max_batch=None if o.plan is None else o.plan.max_sequences,
            tp=o.tp,
            risk=o.risk_label,
            verdict=o.verdict,
        )
    _record_choice(ctx, chosen, rows, n_heads)
    if chosen.model != shape.model:  # the width was sized with the provisional attention
        record_depth(ctx.trace, chosen.model, shape.budget, revised_by=chosen.label, active=shape.moe is not None)
    return chosen, rows


def _record_requests_and_refusals(ctx: Context, rows: list[Option], n_heads: int) -> None:
    r = ctx.request
    params = ctx.request.active_params or r.params
    if r.variant is not None:
        ctx.trace.fire("MHA023", f"--variant {r.variant} requested", variant=r.variant)
        if r.variant == "MHA" and n_heads > C.MHA_LONG_CONTEXT_MAX_HEADS and r.seq_len > C.MHA_LONG_CONTEXT_TOKENS:
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
        return
    if any(o.excluded == "MHA091" for o in rows):
        ctx.trace.fire(
            "MHA091",
            f"MHA excluded: {n_heads} heads > {C.MHA_LONG_CONTEXT_MAX_HEADS} at {r.seq_len:,} tokens"
            f" > {C.MHA_LONG_CONTEXT_TOKENS:,}",
            severity="info",
            n_heads=n_heads,
            seq_len=r.seq_len,
            requested=False,
        )
    if any(o.excluded == "MHA092" for o in rows):
        ctx.trace.fire(
            "MHA092",
            f"MLA not considered: {format_count(params)} parameters < {C.MLA_MIN_PARAMS / 1e9:g}B",
            severity="info",
            params=params,
            requested=False,
        )


def training_keeps_mha(ctx: Context, n_heads: int) -> bool:
    """MHA021: --priority training puts quality first only up to 16 heads at up to 32K tokens."""
    r = ctx.request
    return (
        r.priority == "training" and n_heads <= C.MHA_LONG_CONTEXT_MAX_HEADS and r.seq_len <= C.MHA_LONG_CONTEXT_TOKENS
    )


def _record_choice(ctx: Context, chosen: Option, rows: list[Option], n_heads: int) -> None:
    """MHA020/MHA021/MHA022: what the priority did; MHA024: the tp and what it replicates."""
    r = ctx.request
    if r.priority == "training" and not training_keeps_mha(ctx, n_heads):
        ctx.trace.fire(
            "MHA021",
            f"--priority training keeps MHA only up to {C.MHA_LONG_CONTEXT_MAX_HEADS} heads at up to"
            f" {C.MHA_LONG_CONTEXT_TOKENS:,} tokens: {n_heads} heads at {r.seq_len:,} tokens take the balanced pick",
            n_heads=n_heads,
            priority=r.priority,
            seq_len=r.seq_len,
        )
    if r.variant is None and chosen.variant == "MHA":
        why = f"{n_heads} heads: sharing K/V saves little" if n_heads <= C.FEW_HEADS else f"{n_heads} heads"
        if training_keeps_mha(ctx, n_heads):  # at 8 heads too: a small model's balanced pick is GQA (trial 345 #5)
            why = "priority training at short context: quality first"
        ctx.trace.fire("MHA021", f"MHA: {why}", n_heads=n_heads, priority=r.priority, seq_len=r.seq_len)
    elif r.variant is None and r.priority != "inference":
        _record_balanced(ctx, chosen, n_heads)
    if r.variant is None and r.priority == "inference":
        _record_inference(ctx, chosen, rows)
    _record_tp(ctx, chosen)


def _record_balanced(ctx: Context, chosen: Option, n_heads: int) -> None:
    """MHA020: the balanced pick, GQA within the cache of the balanced KV-head count (or MQA, or MLA)."""
    if chosen.variant == "GQA":
        what = f"GQA with {chosen.n_kv_heads} KV heads: {n_heads // (chosen.n_kv_heads or 1)} query heads per KV head"
    elif chosen.variant == "MQA":
        what = f"MQA: {n_heads} heads have no GQA divisor and MHA is excluded, so one KV head is shared"
    else:
        what = f"{chosen.label}: no GQA within the balanced cache keeps the group at most 8"
    ctx.trace.fire(
        "MHA020",
        f"{what}, the lowest-risk candidate within the balanced cache",
        n_heads=n_heads,
        n_kv_heads=chosen.n_kv_heads,
        tp=chosen.tp,
    )


def _record_inference(ctx: Context, chosen: Option, rows: list[Option]) -> None:
    """MHA022: what fitting the batch changed against the balanced pick."""
    r = ctx.request
    balanced = min(
        (o for o in rows if not o.excluded and not o.verdict.startswith(OVER_CAP)),
        key=lambda o: (o.risk, o.kv.bytes_per_token),
    )
    tied = [o.label for o in rows if o.verdict == WINDOW_GAINS_NOTHING]
    if ctx.target is None:
        message = "no --target: nothing to fit, the balanced pick stands"
    elif tied and chosen.plan is not None:  # MHA028: a window that admits no more sequences is not taken
        message = (
            f"{chosen.label} fits batch {r.batch}; at {r.seq_len:,} tokens the goal is the most sequences the engine"
            f" admits in the lowest risk class: {chosen.label} admits {chosen.plan.max_sequences:,}, as many as"
            f" {' and '.join(tied)}, so the design without windows is kept (simpler, no quality risk from the window)"
        )
    elif balanced is chosen:
        message = f"{chosen.label} fits batch {r.batch}: nothing to shrink"
    elif balanced.fits and chosen.plan is not None and balanced.plan is not None:  # MHA028's goal moved the pick
        message = (
            f"{balanced.label} fits batch {r.batch}; at {r.seq_len:,} tokens the goal is the most sequences the"
            f" engine admits in the lowest risk class: {chosen.label} admits {chosen.plan.max_sequences:,}"
            f" ({format_bytes(chosen.kv.bytes_per_sequence)} per sequence), {balanced.label}"
            f" {balanced.plan.max_sequences:,} ({format_bytes(balanced.kv.bytes_per_sequence)})"
        )
    elif chosen.fits and balanced.plan is not None and chosen.plan is not None:
        message = (
            f"{balanced.label} cache for batch {r.batch} does not fit"
            f" ({format_bytes(balanced.plan.kv_bytes_per_device)} per device); {chosen.label} is the lowest-risk"
            f" candidate that does ({format_bytes(chosen.plan.kv_bytes_per_device)})"
        )
    else:
        if chosen.plan is not None and not chosen.plan.weights_fit:
            message = (
                f"no candidate fits batch {r.batch}, its weights the problem: kept the lowest risk, {chosen.label}"
            )
        else:
            message = f"no candidate fits batch {r.batch}: kept {chosen.label}, which the engine admits most of"
    ctx.trace.fire(
        "MHA022",
        message,
        from_label=balanced.label,
        to_label=chosen.label,
        batch=r.batch,
        n_kv_heads=chosen.n_kv_heads,
    )


def _record_tp(ctx: Context, chosen: Option) -> None:
    r = ctx.request
    model = chosen.model
    tp, why = chosen.tp, chosen.tp_why
    devices = ctx.target.n_devices if ctx.target else 1
    replicas = devices // tp
    placed = f"tp {tp} ({why})"
    if replicas > 1:
        placed += f"; {counted(replicas, 'data-parallel replica')} over the {devices} devices"
    if model.attention.mla is not None:
        placed += "; the MLA latent is not sharded: every rank holds it whole"
    elif tp > model.attention.n_kv_heads:
        placed += (
            f"; tp {tp} > {model.attention.n_kv_heads} KV heads: each KV head is replicated on {tp // model.attention.n_kv_heads} ranks"
            f" (its cache counted on each)"
        )
    if r.tp is None and ctx.target is not None and devices > 1:
        placed += "; the architecture does not depend on the device count (give --tp to design for a split)"
    ctx.trace.fire("MHA024", placed, severity="info", tp=tp, replicas=replicas, n_kv_heads=chosen.n_kv_heads)
