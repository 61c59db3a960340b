"""MHA093/MHA094: refuse a budget no design meets, naming the range of budgets that work."""

from __future__ import annotations

import math
from typing import NoReturn

from mha_cli.core.errors import BadInputError
from mha_cli.core.kv_heads import provisional_attention
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_count, parse_param_count
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.moe import MoeBudget
from mha_cli.core.recommend.shape import MIN_LAYERS, Frame, aspect_band, head_dim_for, ladder, vocab_for
from mha_cli.core.rules import catalog as C
from mha_cli.core.schemas import Variant


def refuse_budget(
    ctx: Context, budget: int, vocab: int, tied: bool, moe: MoeBudget | None = None, *, other_width: int | None = None
) -> NoReturn:
    """Say why no design meets ``budget``: too small (MHA093), too large (MHA094), or outside every width's band;
    ``other_width``: under --d-model, the nearest width whose depth meets it inside the aspect band (MHA005), if any."""
    r = ctx.request
    widths = [r.d_model] if r.d_model else ladder()
    if r.tp is not None and not r.d_model:
        widths = [w for w in widths if (w // head_dim_for(w)) % r.tp == 0]
    if not widths:
        raise BadInputError(f"no width on the ladder splits over --tp {r.tp} (rule MHA024 tp-divisibility)")
    narrow, wide = min(widths), max(widths)

    def total(d_model: int, layers: int, vocab: int, tied: bool, small: bool) -> int:
        return design_params(d_model, layers, vocab, tied, small, r.variant)

    # a dense budget's ends are shaped as budgets at those ends are (MHA004's vocabulary and tying, MHA012's
    # small shape), not as this budget is: 1K and 5000T must name the same range
    low_shape = (vocab, tied, ctx.small) if moe else (*vocab_for(0, r.vocab_size), True)
    high_shape = (
        (vocab, tied, ctx.small)
        if moe
        else (*vocab_for(max(C.LARGE_VOCAB_FROM_PARAMS, C.TIE_EMBEDDINGS_BELOW_PARAMS), r.vocab_size), False)
    )
    smallest, largest = total(narrow, MIN_LAYERS, *low_shape), total(wide, C.MAX_LAYERS, *high_shape)
    depths = f"{C.MAX_LAYERS} layers"
    reach = width_reach(r.d_model, r.vocab_size, r.variant) if r.d_model and moe is None else None
    if reach is not None and budget > reach[1][0]:  # what this width meets as a design that size is shaped (trial 262)
        (smallest, _), (largest, depth) = reach
        depths = f"{depth} layers, the deepest inside the aspect band of designs that size (rule MHA005)"
    what = "active budget" if moe else "parameter budget"
    where = f"--d-model {r.d_model}" if r.d_model else "the widest width on the ladder"
    span = f"{format_count(smallest)} to {format_count(largest)}"
    if reach is not None:  # the budgets that width meets, whichever way this one misses
        span = f"{inward(reach[0][0], up=True)} to {inward(reach[1][0], up=False)}"
    if budget > largest:
        raise BadInputError(
            f"{what} {format_count(budget)} is too large (rule MHA094 budget-too-large): {where} reaches at"
            f" most {format_count(largest)} with {depths}{'' if r.d_model else f' (d_model {wide})'}; use --params"
            f" from {span}" + ("" if r.d_model else " (7B = 7,000,000,000)")
        )
    if budget < smallest:
        raise BadInputError(
            f"{what} {format_count(budget)} is too small (rule MHA093 budget-too-small): {MIN_LAYERS} layers"
            f" at d_model {narrow} with a {vocab:,}-token vocabulary already have {format_count(smallest)};"
            f" use --params from {span} (7B = 7,000,000,000) or lower --vocab"
        )
    if moe is not None:
        raise BadInputError(
            f"no width meets both --params {format_count(moe.total)} and --active-params {format_count(moe.active)}"
            f" within +-{C.BUDGET_TOLERANCE:.0%} at top-{moe.top_k}"
            + (f" of {moe.experts} experts" if moe.experts else "")
            + " (rule MHA007 moe-budget): change --experts, --top-k or the budgets"
        )
    if r.d_model:  # between two depths of this width: name them, not a range that holds the budget
        layers = MIN_LAYERS
        while layers < C.MAX_LAYERS and total(r.d_model, layers + 1, vocab, tied, ctx.small) <= budget:
            layers += 1
        below, above = (total(r.d_model, depth, vocab, tied, ctx.small) for depth in (layers, layers + 1))
        width = (
            f"--d-model {other_width}, the nearest width whose depth meets {format_count(budget)} inside the aspect"
            " band of public designs (rule MHA005)"
            if other_width not in (None, r.d_model)
            else "another --d-model"
        )
        if below > budget:
            raise BadInputError(
                f"{format_count(budget)} parameters is too few for --d-model {r.d_model}: its fewest layers,"
                f" {MIN_LAYERS}, already give {format_count(below)} (rule MHA093 budget-too-small); use {width}, or"
                " leave --d-model out"
            )
        raise BadInputError(
            f"no depth reaches {format_count(budget)} parameters within +-{C.BUDGET_TOLERANCE:.0%} at --d-model"
            f" {r.d_model}, whose layers come {format_count(above - below)} at a time: {layers} layers give"
            f" {format_count(below)}, {layers + 1} give {format_count(above)}; use {width}, or leave --d-model out"
        )
    raise BadInputError(
        f"no design reaches {format_count(budget)} parameters within +-{C.BUDGET_TOLERANCE:.0%} at any width on the"
        f" ladder (rule MHA093 budget-too-small): change --params (range {span})"
    )


def design_params(d_model: int, layers: int, vocab: int, tied: bool, small: bool, variant: Variant | None) -> int:
    """Parameters of the design ``layers`` deep at ``d_model`` with that vocabulary, tying and small shape, its
    attention as the recommender first sets it (``provisional_attention``)."""
    frame = Frame(d_model=d_model, head_dim=head_dim_for(d_model), vocab=vocab, tied=tied, small=small)
    chosen, n_kv = provisional_attention(frame.n_heads, variant, small)
    return count_params(frame.maker(chosen, n_kv)(layers)).total


def width_reach(
    d_model: int, vocab: int | None, variant: Variant | None
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """((fewest parameters, layers), (most parameters, layers)) of the designs ``--d-model`` ``d_model`` gives: a
    depth inside the aspect band (MHA005) of a budget of that size, with the vocabulary, tying (MHA004) and small shape
    (MHA012) a budget that size gets, so every budget in the range is shaped as the range was; None where no depth
    is (``variant``: --variant, as ``design_params`` takes it). The range said before used the largest vocabulary
    at the top and no band: budgets it offered were refused (trial 262)."""
    cuts = sorted({C.TIE_EMBEDDINGS_BELOW_PARAMS, C.LARGE_VOCAB_FROM_PARAMS, C.SMALL_MODEL_PARAMS,
                   *(int(upper) + 1 for upper, *_ in C.ASPECT_BANDS if upper != float("inf"))})  # fmt: skip

    def shape(budget: int) -> tuple[int, bool, bool, tuple[int, int, str]]:
        return (*vocab_for(budget, vocab), budget < C.SMALL_MODEL_PARAMS, aspect_band(budget))

    met = []
    for representative in (1, *cuts):  # one budget of each shape: the designs shaped as it is
        size, tied, small, (low, high, _) = shape(representative)
        for layers in range(max(MIN_LAYERS, math.ceil(d_model / high)), min(C.MAX_LAYERS, d_model // low) + 1):
            count = design_params(d_model, layers, size, tied, small, variant)
            if shape(count) == shape(representative):  # a budget of this count is shaped as the count was
                met.append((count, layers))
    return (min(met), max(met)) if met else None


def inward(count: int, *, up: bool) -> str:
    """``count`` to three significant figures, rounded toward the inside of a range it ends (``up`` at its low end),
    in a form ``--params`` reads: a pasted "152B" below the lowest design's 152.4B would meet a depth outside the aspect
    band (review 265); ``format_count``'s "1B" for 1.004B or "1,000M" are neither inward nor read (review 267). Exact:
    the figure shown is read back and moved one step further in where it fell out (review 269)."""
    units = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"), (1, ""))
    factor, suffix = next(unit for unit in units if count >= unit[0] or unit[0] == 1)
    value = max(count, 1) / factor
    exponent = math.floor(math.log10(value))
    step = 10.0 ** (exponent - 2)  # the third significant figure
    decimals = max(0, 2 - exponent)
    steps = math.ceil(value / step) if up else math.floor(value / step)
    while True:
        shown = f"{steps * step:.{decimals}f}{suffix}"
        if (parse_param_count(shown) >= count) if up else (parse_param_count(shown) <= count):
            return shown
        steps += 1 if up else -1
