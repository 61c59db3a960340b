"""MHA093/MHA094: refuse a budget no design meets, naming the range of budgets that work."""

from __future__ import annotations

from typing import NoReturn

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_count
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.shape import MIN_LAYERS, widths
from mha_cli.core.recommend.variant import candidate_at
from mha_cli.core.rules import catalog as C


def refuse_budget(ctx: Context, budget: int, vocab: int, tied: bool) -> NoReturn:
    """Say why no design meets ``budget``: too small (MHA093), too large (MHA094), or between two widths."""
    r = ctx.request
    smallest = largest = None
    widest = narrowest = 0
    for d_model in widths(ctx, budget):
        candidate = candidate_at(ctx, d_model, budget, vocab, tied)
        if candidate is None:
            continue
        low = count_params(candidate.make(MIN_LAYERS)).total
        high = count_params(candidate.make(C.MAX_LAYERS)).total
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
