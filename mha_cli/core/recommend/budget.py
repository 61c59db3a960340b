"""MHA093/MHA094: refuse a budget no design meets, naming the range of budgets that work."""

from __future__ import annotations

from typing import NoReturn

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_count
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.kv_heads import provisional_attention
from mha_cli.core.recommend.moe import MoeBudget
from mha_cli.core.recommend.shape import MIN_LAYERS, Frame, head_dim_for, ladder, vocab_for
from mha_cli.core.rules import catalog as C


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
        frame = Frame(d_model=d_model, head_dim=head_dim_for(d_model), vocab=vocab, tied=tied, small=small)
        variant, n_kv = provisional_attention(frame.n_heads, r.variant, small)
        return count_params(frame.maker(variant, n_kv)(layers)).total

    # a dense budget's ends are shaped as budgets at those ends are (MHA004's vocabulary and tying, MHA012's
    # small shape), not as this budget is: 1K and 5000T must name the same range
    low_shape = (vocab, tied, ctx.small) if moe else (*vocab_for(0, r.vocab_size), True)
    high_shape = (
        (vocab, tied, ctx.small)
        if moe
        else (*vocab_for(max(C.LARGE_VOCAB_FROM_PARAMS, C.TIE_EMBEDDINGS_BELOW_PARAMS), r.vocab_size), False)
    )
    smallest, largest = total(narrow, MIN_LAYERS, *low_shape), total(wide, C.MAX_LAYERS, *high_shape)
    what = "active budget" if moe else "parameter budget"
    where = f"--d-model {r.d_model}" if r.d_model else "the widest width on the ladder"
    span = f"{format_count(smallest)} to {format_count(largest)}"
    if budget > largest:
        raise BadInputError(
            f"{what} {format_count(budget)} is too large (rule MHA094 budget-too-large): {where} reaches at"
            f" most {format_count(largest)} with {C.MAX_LAYERS} layers (d_model {wide}); use --params from {span}"
            + ("" if r.d_model else " (7B = 7,000,000,000)")
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
