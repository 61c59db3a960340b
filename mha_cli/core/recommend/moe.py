"""MoE budgets (MHA007): width, depth and attention follow the active budget; the routed experts fill the total.

At a width W with top-k routing, either the expert width is set from public designs (k experts of
``MOE_ACTIVE_FFN_MULTIPLIER x W / k``: Qwen3-30B-A3B 8 x 768 = 3 x 2048, Qwen3-235B-A22B 8 x 1536 = 3 x 4096)
and the expert count fills the total, or ``--experts E`` fixes the count and the expert width fills it. Either
way the depth spends the active budget (the parameters a token multiplies by) and the total is checked after.
"""

import math
from collections.abc import Callable
from typing import NamedTuple

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_count
from mha_cli.core.recommend.result import RecommendRequest
from mha_cli.core.recommend.shape import MIN_LAYERS, ModelMaker
from mha_cli.core.rules import catalog as C
from mha_cli.core.schemas import ModelSpec

EXPERT_WIDTH_STEP = 64


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class MoeBudget(NamedTuple):
    """A mixture-of-experts request: total and active parameters, and the routing asked for (None: defaults)."""

    total: int
    active: int
    experts: int | None
    top_k: int
    shared: int = 0
    """Shared experts every token uses (--shared-experts), as wide as a routed one."""
    dense_layers: int = 0
    """Leading layers with a dense MLP instead of experts (--dense-layers)."""

    @classmethod
    def of(cls, request: RecommendRequest) -> "MoeBudget | None":
        """None for a dense request; refuses budgets that cannot describe an MoE model, in one line."""
        r = request
        if r.active_params is None:
            if any(v is not None for v in (r.experts, r.top_k, r.shared_experts, r.dense_layers)):
                raise BadInputError(
                    "--experts, --top-k, --shared-experts and --dense-layers describe a mixture of experts: add"
                    " --active-params (the parameters one token uses; --params is then the total)"
                )
            return None
        if r.active_params >= r.params:
            raise BadInputError(
                f"--active-params {format_count(r.active_params)} must be below --params {format_count(r.params)}"
                " (the total, every expert counted) (rule MHA007 moe-budget); equal budgets are a dense model:"
                " drop --active-params"
            )
        top_k = r.top_k if r.top_k is not None else default_top_k(r.experts)
        if top_k > C.MOE_MAX_TOP_K:
            raise BadInputError(
                f"--top-k {top_k}: at most {C.MOE_MAX_TOP_K} routed experts a token (rule MHA007 moe-budget; public"
                f" designs route at most 10: Qwen3-Next's 10 of 512, DeepSeek-V3's 8 of 256): give --top-k"
                f" {default_top_k(r.experts)}, or leave it out"
            )
        if r.experts is not None and top_k >= r.experts:
            raise BadInputError(
                f"--top-k {top_k} must be below --experts {r.experts} (rule MHA007 moe-budget): a token that uses"
                " every expert is a dense model"
            )
        ratio = r.params / r.active_params
        raise_experts = "" if r.experts is not None and r.experts >= C.MOE_MAX_EXPERTS else "raise --experts, "
        lower_top_k = "lower --top-k, " if ratio <= C.MOE_MAX_EXPERTS * 1.2 else ""  # top-1 multiplies the most
        if r.experts is None and ratio > C.MOE_MAX_EXPERTS / top_k * 1.2:  # review 312 #7: past the most it designs
            raise BadInputError(
                f"--params / --active-params = {ratio:.1f} needs more than the {C.MOE_MAX_EXPERTS:,} experts a design"
                f" takes at top-{top_k}: they can multiply the active budget by at most"
                f" {C.MOE_MAX_EXPERTS / top_k:.1f} (rule MHA007 moe-budget); {lower_top_k}raise --active-params or"
                " lower --params"
            )
        if r.experts is not None and ratio > r.experts / top_k * 1.2:
            raise BadInputError(
                f"--params / --active-params = {ratio:.1f} needs more than {r.experts} experts at top-{top_k}: the"
                f" experts alone can multiply the active budget by at most {r.experts / top_k:.1f} (rule MHA007"
                f" moe-budget); {raise_experts}lower --top-k, raise --active-params or lower --params"
            )
        return cls(
            total=r.params, active=r.active_params, experts=r.experts, top_k=top_k,
            shared=r.shared_experts or 0, dense_layers=r.dense_layers or 0,
        )  # fmt: skip

    @property
    def sparsity(self) -> float:
        """Total over active parameters."""
        return self.total / self.active

    @property
    def depth_factor(self) -> float:
        """MHA008: how much deeper than a dense design of its width the stack should be (1 below the ratio)."""
        return C.MOE_SPARSE_DEPTH_FACTOR if self.sparsity >= C.MOE_SPARSE_RATIO else 1.0

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


def _moe_block(budget: MoeBudget, experts: int, d_ff_expert: int) -> dict:
    return {
        "n_experts": experts, "n_active_experts": budget.top_k, "d_ff_expert": d_ff_expert,
        "n_shared_experts": budget.shared, "n_dense_layers": budget.dense_layers,
    }  # fmt: skip


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class _Linear(NamedTuple):
    """Total and active parameters of the models at one width and expert count, as exact linear functions of m,
    the MoE layers, and of m x f, the expert width summed over them: total = t0 + t1 m + t2 m f, likewise active.
    (Every count is linear in both; the dense layers, embeddings and final norm are the constant part.)"""

    t0: float
    t1: float
    t2: float
    a0: float
    a1: float
    a2: float

    @classmethod
    def probe(cls, budget: "MoeBudget", make_with: Callable[[dict], ModelMaker], experts: int) -> "_Linear":
        first = budget.dense_layers + 1  # the first depth with one MoE layer
        step = EXPERT_WIDTH_STEP

        def at(moe_layers: int, width: int) -> tuple[int, int]:
            params = count_params(make_with(_moe_block(budget, experts, width))(first - 1 + moe_layers))
            return params.total, params.active

        (t11, a11), (t21, a21), (t12, a12) = at(1, step), at(2, step), at(1, 2 * step)
        t2, a2 = (t12 - t11) / step, (a12 - a11) / step
        t1, a1 = t21 - t11 - t2 * step, a21 - a11 - a2 * step
        return cls(t11 - t1 - t2 * step, t1, t2, a11 - a1 - a2 * step, a1, a2)

    def moe_layers(self, total: int, active: int) -> float:
        """The (fractional) MoE layers at which both budgets are met exactly."""
        # total - active = dt0 + dt1 m + dt2 (m f)  =>  m f = (total - active - dt0 - dt1 m) / dt2; put into active.
        dt0, dt1, dt2 = self.t0 - self.a0, self.t1 - self.a1, self.t2 - self.a2
        return (active - self.a0 - self.a2 * (total - active - dt0) / dt2) / (self.a1 - self.a2 * dt1 / dt2)

    def expert_width(self, total: int, active: int, moe_layers: int) -> float:
        """The expert width that spends total - active over ``moe_layers`` MoE layers."""
        dt0, dt1, dt2 = self.t0 - self.a0, self.t1 - self.a1, self.t2 - self.a2
        return (total - active - dt0 - dt1 * moe_layers) / (dt2 * moe_layers)


def solve_moe(budget: MoeBudget, make_with: Callable[[dict], ModelMaker]) -> ModelSpec | None:
    """The MoE model at one width and attention: ``make_with(moe_block)`` gives the depth -> model maker.

    Returns None when no depth and expert count land both budgets within tolerance."""
    if budget.experts is not None:
        return _with_count(budget, make_with, budget.experts)
    d_model = make_with(_moe_block(budget, budget.top_k + 1, EXPERT_WIDTH_STEP))(1).d_model
    rule_width = budget.expert_width(d_model)
    friendly = _friendly_count(budget, make_with, rule_width)
    if friendly is not None and not is_coarse(friendly, budget):
        return friendly
    # No count expert parallelism divides lands with fine-grained experts: the count that fills the total at the
    # rule's width, rounded to a multiple of 8, else itself (else the coarse friendly one).
    return _filling_count(budget, make_with, rule_width) or friendly


def is_coarse(model: ModelSpec, budget: MoeBudget) -> bool:
    """MHA007: experts more than COARSE_EXPERT_SPREAD x off the rule's width (3 x d_model / k), wider or narrower."""
    assert model.block.moe is not None
    miss = abs(math.log(model.block.moe.d_ff_expert / budget.expert_width(model.d_model)))
    return miss > math.log(C.COARSE_EXPERT_SPREAD)


def _filling_count(budget: MoeBudget, make_with: Callable[[dict], ModelMaker], rule_width: int) -> ModelSpec | None:
    """The model whose expert count fills the total at the rule's expert width (a multiple of 8 first)."""
    k = budget.top_k
    line = _Linear.probe(budget, make_with, k + 1)
    per_expert = line.t2 - line.a2  # probed with k + 1 experts: the one a token skips, per unit width and MoE layer
    moe_layers = (budget.active - line.a0) / (line.a1 + line.a2 * rule_width)
    if moe_layers < 1:
        return None
    experts = k + 1 + round((budget.total - line.t0 - moe_layers * (line.t1 + line.t2 * rule_width))
                            / (moe_layers * per_expert * rule_width))  # fmt: skip
    rounded = round(experts / 8) * 8
    counts = ([rounded] if rounded > k else []) + ([experts] if experts > k else [])
    # trial 311 #2: never more than --experts may ask for (14,288 for 1T at 1B active, which --experts refused); the
    # most it takes where more would fill the total (1T at 3B active: 4,096 of 1,216 land both budgets)
    for count in dict.fromkeys(min(count, C.MOE_MAX_EXPERTS) for count in counts):
        candidate = _with_count(budget, make_with, count)
        if candidate is not None:
            return candidate
    return None


def _friendly_count(budget: MoeBudget, make_with: Callable[[dict], ModelMaker], rule_width: int) -> ModelSpec | None:
    """MHA007: the model with an expert count expert parallelism divides, its width re-solved to fill the total.

    Kept first: a width within C.FRIENDLY_WIDTH_SPREAD of the rule's (fine-grained), then a count 32-way expert
    parallelism divides, then the width nearest the rule's. None when no such count lands both budgets."""
    spread = math.log(C.FRIENDLY_WIDTH_SPREAD)
    scored = []
    for count in C.EP_FRIENDLY_EXPERTS:
        if count <= budget.top_k:
            continue
        model = _with_count(budget, make_with, count)
        if model is None or model.block.moe is None:
            continue
        miss = abs(math.log(model.block.moe.d_ff_expert / rule_width))
        scored.append((miss > spread, count % C.EP_WIDE_DIVISOR != 0, miss, count, model))
    return min(scored, key=lambda row: row[:4])[-1] if scored else None


def _with_count(budget: MoeBudget, make_with: Callable[[dict], ModelMaker], experts: int) -> ModelSpec | None:
    """The model with ``experts`` routed experts whose width and depth land both budgets (None when none does)."""
    line = _Linear.probe(budget, make_with, experts)
    exact = budget.dense_layers + line.moe_layers(budget.total, budget.active)
    for n_layers in dict.fromkeys((2 * round(exact / 2), round(exact), round(exact) + 1, round(exact) - 1)):
        moe_layers = n_layers - budget.dense_layers
        if not MIN_LAYERS <= n_layers <= C.MAX_LAYERS or moe_layers < 1:
            continue
        width = line.expert_width(budget.total, budget.active, moe_layers)
        d_ff_expert = max(EXPERT_WIDTH_STEP, round(width / EXPERT_WIDTH_STEP) * EXPERT_WIDTH_STEP)
        model = make_with(_moe_block(budget, experts, d_ff_expert))(n_layers)
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
