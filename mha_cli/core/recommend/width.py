"""Stage 1: width and depth together (MHA001, MHA002, MHA005), under an explicit --tp (MHA024).

Every width of the ladder is solved for the depth that spends the budget; the width kept is the one whose depth
is nearest the depth public designs use at that width, inside the aspect-ratio band of public designs of that
size. Widths whose heads do not split over an explicit --tp are skipped, and the trace says which and why.
"""

from typing import NamedTuple, NoReturn

from mha_cli.core.errors import BadInputError
from mha_cli.core.kv_heads import balanced_kv_heads, provisional_attention
from mha_cli.core.quantities import format_count
from mha_cli.core.recommend.budget import refuse_budget
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.moe import MoeBudget, is_coarse, solve_moe
from mha_cli.core.recommend.shape import (
    MIN_LAYERS,
    Frame,
    aspect_band,
    depth_miss,
    head_dim_for,
    ideal_depth,
    ladder,
    mlp_width_arithmetic,
    record_depth,
    solve_layers,
)
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import counted
from mha_cli.core.schemas import ModelSpec, Variant


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class Shape(NamedTuple):
    """The width and depth chosen, sized with the provisional attention (the trade-off step re-solves depth)."""

    frame: Frame
    model: ModelSpec
    budget: int
    """The budget the depth spends: total parameters, or active ones for an MoE request."""
    moe: MoeBudget | None
    node_split: tuple[int, int] | None = None
    """Where --d-model's heads are a count 8 devices do not split, at or past the small-model budget: (the nearest
    width inside the aspect band whose heads 8 devices split, its heads), --d-model's own where none is
    (``node_split_warning``)."""


def solve_at(ctx: Context, frame: Frame, variant: Variant, n_kv: int, moe: MoeBudget | None) -> ModelSpec | None:
    """The model at ``frame`` with this attention whose depth spends the budget (MoE: both budgets)."""
    if moe is None:
        low, high, _ = aspect_band(ctx.request.params)
        band_depths = (frame.d_model / high, frame.d_model / low)
        return solve_layers(ctx.request.params, frame.maker(variant, n_kv), depths=band_depths)
    return solve_moe(moe, lambda block: frame._replace(moe=block).maker(variant, n_kv))


def choose_shape(ctx: Context, vocab: int, tied: bool, moe: MoeBudget | None) -> Shape:
    """MHA001/MHA002/MHA005 (and MHA024 under --tp): the width and depth, recorded in the trace."""
    r = ctx.request
    budget = moe.active if moe else r.params
    low, high, band_source = aspect_band(budget)
    if r.d_model:
        return _fixed_width(ctx, vocab, tied, moe, budget, (low, high))
    scored: list[tuple[bool, float, int, ModelSpec, Frame]] = []
    for d_model in ladder():
        frame = Frame(
            d_model=d_model, head_dim=head_dim_for(d_model), vocab=vocab, tied=tied, small=ctx.small,
            query_width_multiple=query_width_multiple(moe, r.variant),
        )  # fmt: skip
        if r.variant == "GQA" and balanced_kv_heads(frame.n_heads) is None:
            continue  # --variant GQA: a head count with no divisor between 1 and itself has no GQA (5 heads)
        variant, n_kv = provisional_attention(frame.n_heads, r.variant, ctx.small)
        model = solve_at(ctx, frame, variant, n_kv, moe)
        if model is not None:
            outside = not low <= d_model / model.n_layers <= high
            miss = depth_miss(model, moe.depth_factor if moe else 1.0)
            odd = (_coarse_experts(model, moe), _odd_experts(model, moe))
            scored.append((outside, odd, miss, d_model, model, frame))
    if not scored:
        refuse_budget(ctx, budget, vocab, tied, moe)
    # inside the band first, then (MoE) fine-grained experts in a count expert parallelism divides, then nearest
    # public practice
    scored.sort(key=lambda row: row[:4])
    skipped = []
    for outside, _odd, _miss, d_model, model, frame in scored:
        if r.tp is not None and frame.n_heads % r.tp:
            skipped.append((d_model, frame.n_heads))
            continue
        if outside and not scored[0][0]:  # --tp moved the design out of the band a width inside it had
            inside = [row[5].n_heads for row in scored if not row[0]]
            devices = ctx.target.n_devices if ctx.target is not None else None
            _refuse_tp_outside_band(r.tp, model, budget, (low, high), inside, devices)
        for width, heads in skipped:
            ctx.trace.fire(
                "MHA024",
                f"d_model {width} skipped: its {heads} heads do not split over --tp {r.tp}; d_model {d_model}"
                f" ({frame.n_heads} heads) is the nearest public-practice shape that does",
                severity="info",
                d_model=width,
                n_heads=heads,
                tp=r.tp,
            )
        _record(ctx, model, frame, budget, (low, high, band_source), moe, fixed=False)
        return Shape(frame=frame, model=model, budget=budget, moe=moe)
    raise BadInputError(
        f"no width on the ladder has heads that split over --tp {r.tp} at this budget (rule MHA024 tp-divisibility):"
        " use --tp 1, 2, 4 or 8"
    )


def _refuse_tp_outside_band(
    tp: int | None, model: ModelSpec, budget: int, band: tuple[int, int], inside: list[int], devices: int | None
) -> NoReturn:
    """MHA005 under --tp, as --d-model refuses it: the widest split of ``tp`` leaves the aspect band that widths
    with ``inside`` heads (each inside it) keep; the ways out are the nearest smaller and larger tp that split one of
    them and the target's ``devices`` (a power of two without a target), so that each runs as given."""
    assert tp is not None

    def runs(t: int) -> bool:
        return devices % t == 0 if devices is not None else t & (t - 1) == 0

    def splits(t: int) -> bool:
        return runs(t) and any(heads % t == 0 for heads in inside)

    smaller = next((t for t in range(tp - 1, 0, -1) if splits(t)), 1)
    larger = next((t for t in range(tp + 1, max(inside, default=tp) + 1) if splits(t)), None)
    # trial 311 #7: "the largest that splits" where a larger one (tp 8 for 5) splits a width inside the band too
    either = f"--tp {smaller} or --tp {larger}" if larger is not None else f"--tp {smaller}"
    low, high = band
    raise BadInputError(
        f"--tp {tp} at {format_count(budget)}: the nearest width whose heads split over it, d_model {model.d_model},"
        f" gives {model.n_layers} layers (d_model / n_layers {model.d_model / model.n_layers:.1f}, outside the"
        f" {low}-{high} of public designs of this size, rule MHA005 aspect-ratio-band): use {either}, the nearest"
        " that split a width inside the band, or leave --tp out"
    )


def query_width_multiple(moe: MoeBudget | None, variant: Variant | None) -> int:
    """MHA008: query heads twice d_model wide for a sparse MoE (not MLA, whose heads MHA030 sizes), else 1."""
    if moe is None or variant == "MLA" or moe.sparsity < C.MOE_SPARSE_RATIO:
        return 1
    return C.MOE_SPARSE_QUERY_MULTIPLE


def _coarse_experts(model: ModelSpec, moe: MoeBudget | None) -> bool:
    """MHA007: experts more than COARSE_EXPERT_SPREAD x off the rule's width (``--experts`` as given never are)."""
    if moe is None or moe.experts is not None or model.block.moe is None:
        return False
    return is_coarse(model, moe)


def _odd_experts(model: ModelSpec, moe: MoeBudget | None) -> bool:
    """MHA007: an MoE design whose routed-expert count is not one expert parallelism divides (``--experts`` as
    given never is)."""
    if moe is None or moe.experts is not None or model.block.moe is None:
        return False
    return model.block.moe.n_experts not in C.EP_FRIENDLY_EXPERTS


def _fixed_width(
    ctx: Context, vocab: int, tied: bool, moe: MoeBudget | None, budget: int, band: tuple[int, int]
) -> Shape:
    """--d-model: the depth that spends the budget at that width, refused outside the aspect band (MHA005)."""
    r = ctx.request
    assert r.d_model is not None
    try:
        head_dim = head_dim_for(r.d_model)
    except BadInputError as unsplit:  # its neighbours split into heads but may fall outside the band: one that fits
        nearest = nearest_sane_width(ctx, vocab, tied, moe, budget, band)
        if nearest == r.d_model:
            raise
        raise BadInputError(
            f"{unsplit.message.partition(': use')[0]}: use --d-model {nearest}, the nearest width that splits into"
            " heads at a depth inside the aspect band of public designs (rule MHA005), or leave --d-model out"
        ) from None
    frame = Frame(
        d_model=r.d_model, head_dim=head_dim, vocab=vocab, tied=tied, small=ctx.small,
        query_width_multiple=query_width_multiple(moe, r.variant),
    )  # fmt: skip
    if r.tp is not None and frame.n_heads % r.tp:
        raise BadInputError(
            f"--tp {r.tp} does not divide the {frame.n_heads} heads of --d-model {r.d_model} (rule MHA024"
            f" tp-divisibility): use a tp that divides {frame.n_heads}"
        )
    variant, n_kv = provisional_attention(frame.n_heads, r.variant, ctx.small)
    model = solve_at(ctx, frame, variant, n_kv, moe)
    if model is None:
        refuse_budget(
            ctx, budget, vocab, tied, moe, other_width=nearest_sane_width(ctx, vocab, tied, moe, budget, band)
        )
    low, high = band
    aspect = r.d_model / model.n_layers
    if not low <= aspect <= high:
        nearest = nearest_sane_width(ctx, vocab, tied, moe, budget, band)
        way = f"use --d-model {nearest}, the nearest width of the head ladder inside the band, or leave --d-model out"
        if nearest == r.d_model:  # the width itself is the nearest: a budget it meets inside the band (trial 262)
            way = _budgets_of_width(ctx, moe) or "leave --d-model out"
        raise BadInputError(
            f"--d-model {r.d_model} at {format_count(budget)} gives {model.n_layers} layers (d_model / n_layers"
            f" {aspect:.0f}, outside the {low}-{high} of public designs of this size, rule MHA005 aspect-ratio-band):"
            f" {way}"
        )
    _record(ctx, model, frame, budget, (low, high, aspect_band(budget)[2]), moe, fixed=True)
    split = None
    if frame.n_heads % NODE_DEVICES and frame.n_heads > 1 and r.params >= C.SMALL_MODEL_PARAMS:
        width = nearest_sane_width(ctx, vocab, tied, moe, budget, band, heads_split_by=NODE_DEVICES)
        if width == r.d_model and r.tp is not None:  # none that --tp splits too: the nearest whatever the tp
            width = nearest_sane_width(ctx, vocab, tied, moe, budget, band, heads_split_by=NODE_DEVICES, keep_tp=False)
        split = (width, frame._replace(d_model=width, head_dim=head_dim_for(width)).n_heads)
    return Shape(frame=frame, model=model, budget=budget, moe=moe, node_split=split)


NODE_DEVICES = 8
"""The tensor-parallel degree of one node's GPUs, which a design's heads should split (``node_split_warning``)."""


def node_split_warning(shape: Shape, d_model: int | None, tp: int | None) -> list[str]:
    """The warning for --d-model's heads where 8 devices do not split them (``Shape.node_split``): tensor parallelism
    splits only their divisors (MHA024), so the design never shards over a node's GPUs (Falcon-7B's 71 heads; 58
    heads split over 2 only); the rules' own widths give round counts, a width asked for may not (trial 311 #10: 4160
    gave 65 heads, silently). Empty where none is due (a count 8 splits, or one device holds the model:
    SmolLM2-135M's 9 heads)."""
    if shape.node_split is None or d_model is None:
        return []
    heads, (width, split_heads) = shape.frame.n_heads, shape.node_split
    degrees = [d for d in range(2, heads + 1) if heads % d == 0]
    never = [d for d in (2, 4, NODE_DEVICES) if heads % d]
    if width == d_model:
        way = f"no width inside the aspect band at this budget gives heads {NODE_DEVICES} devices split"
    else:
        way = f"--d-model {width} gives {split_heads} heads, which {NODE_DEVICES} devices split, inside the aspect band"
        if tp is not None and split_heads % tp:
            both = f"none whose heads both --tp {tp} and {NODE_DEVICES} devices split is inside the band"
            way = f"{both}; {way}, with a --tp that divides them"
        else:
            way += " at this budget"
    return [
        f"--d-model {d_model} gives {heads} query heads of {shape.frame.head_dim}: tensor parallelism splits them"
        f" over {_either(degrees)} devices only, never {_either(never)} (MHA024); {way}"
    ]


def _either(numbers: list[int]) -> str:
    """``3, 5 or 9``."""
    words = [f"{n:,}" for n in numbers]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _budgets_of_width(ctx: Context, moe: MoeBudget | None) -> str | None:
    """``use --params from A to B``: the budgets --d-model meets inside the aspect band (``budget.width_reach``);
    None for an MoE budget or where none does."""
    from mha_cli.core.recommend.budget import width_reach

    r = ctx.request
    if moe is not None or r.d_model is None:
        return None
    reach = width_reach(r.d_model, r.vocab_size, r.variant)
    if reach is None:
        return None
    (fewest, _), (most, _) = reach
    return f"use --params from {format_count(fewest)} to {format_count(most)}, or leave --d-model out"


def nearest_sane_width(
    ctx: Context, vocab: int, tied: bool, moe: MoeBudget | None, budget: int, band: tuple[int, int],
    heads_split_by: int = 1, keep_tp: bool = True,
) -> int:  # fmt: skip
    """The ladder width nearest --d-model whose budget-filling depth sits inside the aspect band (and whose heads
    ``heads_split_by`` divides, and --tp unless not ``keep_tp``); --d-model itself where none does."""
    r = ctx.request
    assert r.d_model is not None
    low, high = band
    for d_model in sorted(ladder(), key=lambda w: abs(w - r.d_model)):
        frame = Frame(
            d_model=d_model, head_dim=head_dim_for(d_model), vocab=vocab, tied=tied, small=ctx.small,
            query_width_multiple=query_width_multiple(moe, r.variant),
        )  # fmt: skip
        if (keep_tp and r.tp is not None and frame.n_heads % r.tp) or frame.n_heads % heads_split_by:
            continue
        variant, n_kv = provisional_attention(frame.n_heads, r.variant, ctx.small)
        model = solve_at(ctx, frame, variant, n_kv, moe)
        if model is not None and low <= d_model / model.n_layers <= high:
            return d_model
    return r.d_model


def _record(
    ctx: Context,
    model: ModelSpec,
    frame: Frame,
    budget: int,
    band: tuple[int, int, str],
    moe: MoeBudget | None,
    *,
    fixed: bool,
) -> None:
    factor = moe.depth_factor if moe is not None else 1.0
    d_model, depth = model.d_model, ideal_depth(model.d_model) * factor
    low, high, _source = band
    how = (
        "fixed by --d-model"
        if fixed
        else f"the width whose budget-filling depth is nearest the {depth:.0f} layers public designs use at it"
    )
    if factor != 1.0 and not fixed:
        how += f" ({ideal_depth(d_model):.0f} x {factor:g}, MHA008)"
    ctx.trace.fire(
        "MHA001",
        f"d_model {d_model}, {model.n_layers} layers: {how}",
        d_model=d_model,
        n_layers=model.n_layers,
        ideal_layers=round(depth, 1),
    )
    aspect = d_model / model.n_layers
    where = "inside" if low <= aspect <= high else "outside (no width of the ladder lands inside)"
    ctx.trace.fire(
        "MHA005",
        f"d_model / n_layers = {aspect:.0f}, {where} the {low}-{high} band of public designs of {format_count(budget)}",
        aspect=round(aspect, 1),
        low=low,
        high=high,
    )
    ctx.trace.fire(
        "MHA004",
        f"vocabulary {frame.vocab:,}, {'tied' if frame.tied else 'untied'} output head",
        vocab_size=frame.vocab,
        tied_embeddings=frame.tied,
    )
    if frame.small:
        attention = model.attention
        if ctx.request.variant is not None:  # the variant asked, not the rule, chose the attention
            grouped = f"attention sized as {attention.variant} (--variant {ctx.request.variant})"
        elif attention.variant == "GQA":
            grouped = (
                f"GQA-{attention.n_kv_heads} ({attention.q_per_kv} query heads per KV head, the nearest to"
                f" {C.SMALL_MODEL_GROUP} that divides {attention.n_heads})"
            )
        else:
            grouped = (
                f"{attention.variant} at {attention.n_heads} heads: no GQA of about {C.SMALL_MODEL_GROUP} query heads"
                f" per KV head divides {attention.n_heads}"
            )
        ctx.trace.fire(
            "MHA012",
            f"a dense budget below {format_count(C.SMALL_MODEL_PARAMS)}: SwiGLU d_ff {model.block.d_ff} ="
            f" {mlp_width_arithmetic(d_model, small=True)},"
            f" {grouped}",
            d_ff=model.block.d_ff,
        )
    elif model.block.moe is None:  # an MoE design's MLP is its experts (MHA007)
        ctx.trace.fire(
            "MHA003", f"SwiGLU d_ff {model.block.d_ff} = {mlp_width_arithmetic(d_model)}", d_ff=model.block.d_ff
        )
    ctx.trace.fire("MHA010", f"head_dim {frame.head_dim} at width {d_model}", head_dim=frame.head_dim)
    multiple = frame.query_width_multiple
    wider = f"{multiple} x " if multiple > 1 else ""
    ctx.trace.fire("MHA011", f"{frame.n_heads} heads = {wider}{d_model} / {frame.head_dim}", n_heads=frame.n_heads)
    if moe is not None and model.block.moe is not None:
        block = model.block.moe
        how_many = (
            "--experts" if moe.experts is not None
            else "a count expert parallelism divides" if block.n_experts in C.EP_FRIENDLY_EXPERTS
            else "the number that fills the total"
        )  # fmt: skip
        extras = f" + {block.n_shared_experts} shared" if block.n_shared_experts else ""
        qk_norm = "; QK-norm on every query and key head (Qwen3-MoE)" if model.attention.qk_norm else ""
        extras += (
            f", the first {counted(block.n_dense_layers, 'layer')} dense (d_ff {model.block.d_ff})"
            if block.n_dense_layers
            else ""
        )
        ctx.trace.fire(
            "MHA007",
            f"{block.n_experts} experts ({how_many}) of d_ff {block.d_ff_expert}, top-{block.n_active_experts}"
            f" per token{extras}: width, depth and attention spend the {format_count(moe.active)} active budget,"
            f" the experts the {format_count(moe.total)} total{qk_norm}",
            n_experts=block.n_experts,
            qk_norm=model.attention.qk_norm,
            top_k=block.n_active_experts,
            d_ff_expert=block.d_ff_expert,
            shared_experts=block.n_shared_experts,
            dense_layers=block.n_dense_layers,
        )
        if moe.sparsity >= C.MOE_SPARSE_RATIO:
            parts = [f"{frame.n_heads} query heads ({multiple} x d_model)"] if multiple > 1 else []
            if not fixed:  # --d-model fixes the width, so the budget alone sets the depth
                parts.append(f"depth nearest {C.MOE_SPARSE_DEPTH_FACTOR:g} x the dense designs' at this width")
            ctx.trace.fire(
                "MHA008",
                f"a sparse MoE ({moe.sparsity:.1f}x as many parameters as it activates): "
                + (", ".join(parts) or "the width fixed by --d-model and the depth the budget gives"),
                sparsity=round(moe.sparsity, 2),
                query_width_multiple=multiple,
                depth_factor=C.MOE_SPARSE_DEPTH_FACTOR,
            )
    record_depth(ctx.trace, model, budget, active=moe is not None)
    assert model.n_layers >= MIN_LAYERS
