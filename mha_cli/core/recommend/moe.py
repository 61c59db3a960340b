"""MoE budgets (MHA007): width, depth and attention follow the active budget; the routed experts fill the total.

At a width W with top-k routing, either the expert width is set from public designs (k experts of
``MOE_ACTIVE_FFN_MULTIPLIER x W / k``: Qwen3-30B-A3B 8 x 768 = 3 x 2048, Qwen3-235B-A22B 8 x 1536 = 3 x 4096)
and the expert count fills the total, or ``--experts E`` fixes the count and the expert width fills it. Either
way the depth spends the active budget (the parameters a token multiplies by) and the total is checked after.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_count
from mha_cli.core.recommend.result import RecommendRequest
from mha_cli.core.recommend.shape import MIN_LAYERS, ModelMaker, solve_layers
from mha_cli.core.rules import catalog as C
from mha_cli.core.schemas import ModelSpec

EXPERT_WIDTH_STEP = 64
FRIENDLY_WIDTH_SPREAD = 1.5
"""An expert count expert parallelism divides is taken when the expert width it re-solves stays within 1.5x of
MHA007's (3 x d_model / k); else the count that fills the total stands, rounded to a multiple of 8."""


@dataclass(frozen=True)
class MoeBudget:
    """A mixture-of-experts request: total and active parameters, and the routing asked for (None: defaults)."""

    total: int
    active: int
    experts: int | None
    top_k: int

    @classmethod
    def of(cls, request: RecommendRequest) -> MoeBudget | None:
        """None for a dense request; refuses budgets that cannot describe an MoE model, in one line."""
        r = request
        if r.active_params is None:
            if r.experts is not None or r.top_k is not None:
                raise BadInputError(
                    "--experts and --top-k describe a mixture of experts: add --active-params (the parameters one"
                    " token uses; --params is then the total)"
                )
            return None
        if r.active_params >= r.params:
            raise BadInputError(
                f"--active-params {format_count(r.active_params)} must be below --params {format_count(r.params)}"
                " (the total, every expert counted) (rule MHA007 moe-budget); equal budgets are a dense model:"
                " drop --active-params"
            )
        top_k = r.top_k if r.top_k is not None else default_top_k(r.experts)
        if r.experts is not None and top_k >= r.experts:
            raise BadInputError(
                f"--top-k {top_k} must be below --experts {r.experts} (rule MHA007 moe-budget): a token that uses"
                " every expert is a dense model"
            )
        ratio = r.params / r.active_params
        if r.experts is not None and ratio > r.experts / top_k * 1.2:
            raise BadInputError(
                f"--params / --active-params = {ratio:.1f} needs more than {r.experts} experts at top-{top_k}: the"
                f" experts alone can multiply the active budget by at most {r.experts / top_k:.1f} (rule MHA007"
                " moe-budget); raise --experts, lower --top-k or --params"
            )
        return cls(total=r.params, active=r.active_params, experts=r.experts, top_k=top_k)

    def expert_width(self, d_model: int) -> int:
        """d_ff of one routed expert when --experts is not given (public designs: k experts ~ 3 x d_model)."""
        raw = C.MOE_ACTIVE_FFN_MULTIPLIER * d_model / self.top_k
        return max(EXPERT_WIDTH_STEP, round(raw / EXPERT_WIDTH_STEP) * EXPERT_WIDTH_STEP)


def default_top_k(experts: int | None) -> int:
    """MHA007: 8 (Qwen3-MoE, DeepSeek-V3) from 64 experts or when the count is left to the rules; a quarter of the
    experts below 64 (Mixtral: 2 of 8)."""
    if experts is None or experts >= C.MOE_MANY_EXPERTS:
        return C.MOE_DEFAULT_TOP_K
    return max(1, experts // 4)


def _moe_block(experts: int, top_k: int, d_ff_expert: int) -> dict:
    return {"n_experts": experts, "n_active_experts": top_k, "d_ff_expert": d_ff_expert}


def solve_moe(budget: MoeBudget, make_with: Callable[[dict], ModelMaker]) -> ModelSpec | None:
    """The MoE model at one width and attention: ``make_with(moe_block)`` gives the depth -> model maker.

    Returns None when no depth and expert count land both budgets within tolerance."""
    k = budget.top_k
    probe = make_with(_moe_block(max(k + 1, 2), k, EXPERT_WIDTH_STEP))(1)
    d_model = probe.d_model
    if budget.experts is None:
        d_ff_expert = budget.expert_width(d_model)
        # Depth from the active budget (experts not yet known: the router's d_model x E weights are a rounding error).
        model = solve_layers(budget.active, make_with(_moe_block(k + 1, k, d_ff_expert)), active=True)
        if model is None:
            return None
        per_expert = count_params(model).mlp_moe_per_layer // (k + 1)  # one expert's MLP (+ its router row)
        spare = budget.total - count_params(model).total
        experts = k + 1 + round(spare / (model.n_layers * per_expert))
        if experts <= k:
            return None
        # MHA007: a count expert parallelism divides (the nearest two of EP_FRIENDLY_EXPERTS), its width re-solved
        friendly = sorted((c for c in C.EP_FRIENDLY_EXPERTS if c > k), key=lambda c: abs(math.log(c / experts)))
        for count in friendly[:2]:
            candidate = _with_count(budget, make_with, count, d_model)
            # kept fine-grained: the re-solved width within FRIENDLY_WIDTH_SPREAD of the rule's
            spread = math.log(FRIENDLY_WIDTH_SPREAD)
            if candidate and candidate.moe and abs(math.log(candidate.moe.d_ff_expert / d_ff_expert)) <= spread:
                return candidate
        rounded = round(experts / 8) * 8
        for count in ([rounded] if rounded > k else []) + [experts]:
            candidate = make_with(_moe_block(count, k, d_ff_expert))(model.n_layers)
            if _within(budget, candidate):
                return candidate
        return None
    return _with_count(budget, make_with, budget.experts, d_model)


def _with_count(
    budget: MoeBudget, make_with: Callable[[dict], ModelMaker], experts: int, d_model: int
) -> ModelSpec | None:
    """The model with ``experts`` routed experts whose width and depth land both budgets (None when none does)."""
    k = budget.top_k
    # The expert width f spends total - active over the E - k experts a token skips, so the k experts it uses
    # hold k (total - active) / (E - k) whatever the depth; the depth spends the rest.
    make_thin = make_with(_moe_block(experts, k, EXPERT_WIDTH_STEP))
    one, two = count_params(make_thin(1)).active, count_params(make_thin(2)).active
    per_layer = two - one - k * 3 * d_model * EXPERT_WIDTH_STEP  # attention, norms, router
    fixed = one - (two - one)
    used_by_experts = k * (budget.total - budget.active) / (experts - k)
    exact = (budget.active - fixed - used_by_experts) / per_layer
    for n_layers in dict.fromkeys((2 * round(exact / 2), round(exact), round(exact) + 1, round(exact) - 1)):
        if not MIN_LAYERS <= n_layers <= C.MAX_LAYERS:
            continue
        spare_per_width = 3 * d_model * (experts - k) * n_layers
        d_ff_expert = max(EXPERT_WIDTH_STEP, round((budget.total - budget.active) / spare_per_width / 64) * 64)
        model = make_with(_moe_block(experts, k, d_ff_expert))(n_layers)
        if _within(budget, model):
            return model
    return None


def _within(budget: MoeBudget, model: ModelSpec) -> bool:
    params = count_params(model)
    tolerance = C.BUDGET_TOLERANCE
    return (
        abs(params.total - budget.total) <= tolerance * budget.total
        and abs(params.active - budget.active) <= tolerance * budget.active
    )
