"""The shape from the budget: width and depth together (MHA001, MHA002, MHA005), the MLP (MHA003), the
vocabulary (MHA004) and head_dim by width (MHA010).

Width and depth are one decision: at each width of the ladder the depth that spends the budget is solved, and
the width kept is the one whose depth is nearest the depth public designs use at that width
(``catalog.DEPTH_BY_WIDTH``), within the aspect-ratio band of public designs of that size (``ASPECT_BANDS``).
"""

import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

from pydantic import ValidationError

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_count
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import Trace
from mha_cli.core.schemas import ModelSpec, Variant
from mha_cli.core.validation import describe_validation_error
from mha_cli.core.variants import mla_for_shape

ModelMaker = Callable[[int], ModelSpec]
"""Depth -> the model at a fixed width, head geometry and variant."""

MIN_LAYERS = 2
MAX_WIDTH = 32768
"""The widest width the ladder offers (twice Llama 3.1 405B's 16384)."""


def head_dim_for(d_model: int) -> int:
    """MHA010: 128 from ``WIDE_MODEL_D_MODEL``, 64 below, 32 only under ``NARROW_MODEL_D_MODEL``; a width that
    cannot give such heads is refused with the nearest widths that can."""
    if d_model >= C.WIDE_MODEL_D_MODEL and d_model % 128 == 0:
        return 128
    if d_model >= C.NARROW_MODEL_D_MODEL and d_model % 64 == 0:
        return 64
    if d_model < C.NARROW_MODEL_D_MODEL and d_model >= C.HEAD_DIM_FLOOR and d_model % C.HEAD_DIM_FLOOR == 0:
        return C.HEAD_DIM_FLOOR
    step = 64 if d_model >= C.NARROW_MODEL_D_MODEL else C.HEAD_DIM_FLOOR
    lower = max(step, d_model // step * step)
    upper = lower + step
    rule = "MHA090 head-dim-floor" if d_model < C.NARROW_MODEL_D_MODEL else "MHA010 head-dim-by-width"
    raise BadInputError(
        f"--d-model {d_model} cannot be split into heads of {step} or 128 (rule {rule}): use --d-model {lower} or"
        f" {upper}"
    )


def mlp_width(d_model: int, small: bool = False) -> int:
    """MHA003: d_ff = 3.5 x d_model rounded up to a multiple of 256; ``small`` (MHA012, below 1B): 8/3 x d_model."""
    raw = math.ceil((C.SMALL_FFN_MULTIPLIER if small else C.FFN_MULTIPLIER) * d_model)
    return -(-raw // C.FFN_ROUND) * C.FFN_ROUND


def mlp_width_arithmetic(d_model: int, small: bool = False) -> str:
    """How ``mlp_width`` got its d_ff, for the trace: ``3.5 x 4096`` where exact, else ``8/3 x 224 = 597.3, rounded
    up to a multiple of 256`` (trial 300 #3: the bare ``= 8/3 x 224`` read as false arithmetic)."""
    multiplier = C.SMALL_FFN_MULTIPLIER if small else C.FFN_MULTIPLIER
    named = f"{'8/3' if small else f'{multiplier:g}'} x {d_model}"
    exact = multiplier * d_model
    if exact == mlp_width(d_model, small):
        return named
    return f"{named} = {exact:,.1f}, rounded up to a multiple of {C.FFN_ROUND}"


def vocab_for(params: int, vocab: int | None) -> tuple[int, bool]:
    """MHA004: (vocabulary size, tied embeddings)."""
    size = vocab if vocab is not None else (C.LARGE_VOCAB if params >= C.LARGE_VOCAB_FROM_PARAMS else C.SMALL_VOCAB)
    return size, params < C.TIE_EMBEDDINGS_BELOW_PARAMS


def ideal_depth(d_model: int) -> float:
    """MHA001: the depth public designs use at ``d_model``, interpolated in log(width) between the anchors of
    ``DEPTH_BY_WIDTH`` and extrapolated along the end segments."""
    anchors = C.DEPTH_BY_WIDTH
    if d_model <= anchors[0][0]:
        lo, hi = anchors[0], anchors[1]
    elif d_model >= anchors[-1][0]:
        lo, hi = anchors[-2], anchors[-1]
    else:
        lo, hi = next((a, b) for a, b in itertools.pairwise(anchors) if a[0] <= d_model <= b[0])
    t = math.log(d_model / lo[0]) / math.log(hi[0] / lo[0])
    return max(float(MIN_LAYERS), lo[1] * (hi[1] / lo[1]) ** t)


def aspect_band(budget: int) -> tuple[int, int, str]:
    """MHA005: (lowest, highest d_model / n_layers, the public designs behind it) for a budget."""
    return next((lo, hi, why) for upper, lo, hi, why in C.ASPECT_BANDS if budget <= upper)


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % p for p in range(2, math.isqrt(n) + 1))


def round_heads(n_heads: int) -> bool:
    """Head counts public designs use: any up to 8, a composite (it has a GQA divisor) up to 15, a multiple of 4
    below 32 (20, 24, 28: GQA-4 and tp 2/4 split it), a multiple of 8 up to 64 (GQA-8 and tp 8 split it), then
    of 32 (96: GPT-3 175B, 128: Llama 3.1 405B), so a KV-head count that tp 8 splits keeps the group at most 8."""
    if n_heads <= 8:
        return True
    if n_heads < 16:
        return not _is_prime(n_heads)
    return n_heads % (4 if n_heads < 32 else 8 if n_heads <= 64 else 32) == 0


def ladder() -> list[int]:
    """Widths the rules choose from: n_heads x head_dim with head_dim by width (MHA010) and round head counts."""
    widths = []
    for d_model in range(128, MAX_WIDTH + 1, 32):
        try:
            head_dim = head_dim_for(d_model)
        except BadInputError:
            continue
        if head_dim == 32 and d_model >= C.NARROW_MODEL_D_MODEL:
            continue
        if (d_model >= C.WIDE_MODEL_D_MODEL and head_dim != 128) or not round_heads(d_model // head_dim):
            continue
        widths.append(d_model)
    return widths


def build_model(
    *,
    d_model: int,
    n_layers: int,
    head_dim: int,
    variant: Variant,
    n_kv_heads: int,
    vocab: int,
    tied: bool,
    moe: dict | None = None,
    small: bool = False,
    query_width_multiple: int = 1,
) -> ModelSpec:
    """A Llama-style model (RMSNorm, SwiGLU, RoPE, no biases) with the given attention (and MoE MLP, if any);
    ``small``: MHA012's narrower MLP; ``query_width_multiple``: MHA008's query heads, that many times d_model wide
    together (MLA keeps d_model / head_dim heads)."""
    n_heads = d_model // head_dim * (1 if variant == "MLA" else query_width_multiple)
    fields: dict[str, Any] = dict(
        name="recommended", source="mha recommend", d_model=d_model, n_layers=n_layers, n_heads=n_heads,
        vocab_size=vocab, d_ff=mlp_width(d_model, small), tied_embeddings=tied, rope={"theta": C.ROPE_THETA},
    )  # fmt: skip
    if moe is not None:
        fields["moe"] = moe
        fields["qk_norm"] = variant != "MLA"  # MHA007: Qwen3-MoE's QK-norm, so the design is a qwen3_moe config
    if variant == "MLA":
        fields["mla"] = mla_for_shape(head_dim, d_model)  # MHA030: DeepSeek proportions
    else:
        fields.update(head_dim=head_dim, n_kv_heads=n_kv_heads, variant=variant)
    try:
        return ModelSpec.model_validate(fields)
    except ValidationError as exc:  # only options far outside the rules' range get here (e.g. --d-model 2000000)
        raise BadInputError(
            f"no valid design at d_model {d_model}: {describe_validation_error(exc)}; change --d-model or --params"
        ) from exc


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class Frame(NamedTuple):
    """Everything but depth and projection: width, head_dim, vocabulary and, for MoE, the expert block."""

    d_model: int
    head_dim: int
    vocab: int
    tied: bool
    moe: dict | None = None
    small: bool = False
    """MHA012: a dense budget below 1B (the narrower MLP)."""
    query_width_multiple: int = 1
    """MHA008: the query heads together are this many times d_model wide (a sparse MoE: 2)."""

    @property
    def n_heads(self) -> int:
        return self.d_model // self.head_dim * self.query_width_multiple

    def maker(self, variant: Variant, n_kv_heads: int) -> ModelMaker:
        def make(n_layers: int) -> ModelSpec:
            return build_model(
                d_model=self.d_model, n_layers=n_layers, head_dim=self.head_dim, variant=variant,
                n_kv_heads=n_kv_heads, vocab=self.vocab, tied=self.tied, moe=self.moe, small=self.small,
                query_width_multiple=self.query_width_multiple,
            )  # fmt: skip

        return make


def solve_layers(
    budget: int, make: ModelMaker, *, active: bool = False, depths: tuple[float, float] | None = None
) -> ModelSpec | None:
    """MHA002: the model at the depth (2 to MHA094's maximum) whose total (``active``: active) parameter count is
    nearest the budget, even preferred, within tolerance; None when no depth at this width lands within it.
    ``depths``: the (fewest, most) layers of MHA005's aspect band at this width, preferred where a depth inside it
    is within tolerance too (150B at 12288: 78 layers, +2.6%, where 76 fall just outside the band; trial 311 #5)."""

    def count(layers: int) -> int:
        params = count_params(make(layers))
        return params.active if active else params.total

    one = count(1)
    per_layer = count(2) - one
    fixed = one - per_layer
    exact = (budget - fixed) / per_layer
    if exact < MIN_LAYERS - 0.5:
        return None
    even = min(C.MAX_LAYERS, max(MIN_LAYERS, 2 * round(exact / 2)))
    tried = [even, min(C.MAX_LAYERS, max(MIN_LAYERS, round(exact)))]
    within = [n for n in tried if abs(fixed + n * per_layer - budget) <= C.BUDGET_TOLERANCE * budget]
    if depths is not None and within and not depths[0] <= within[0] <= depths[1]:
        fewest, most = max(MIN_LAYERS, math.ceil(depths[0])), min(C.MAX_LAYERS, math.floor(depths[1]))
        if fewest <= most:
            inside = min(max(round(exact), fewest), most)  # the band's depth nearest the budget's
            nearest_even = [n for n in (inside - inside % 2, inside + inside % 2) if fewest <= n <= most]
            for layers in [*nearest_even, inside]:
                if abs(fixed + layers * per_layer - budget) <= C.BUDGET_TOLERANCE * budget:
                    return make(layers)
    return make(within[0]) if within else None


def depth_miss(model: ModelSpec, depth_factor: float = 1.0) -> float:
    """How far the depth is from public practice at this width: |log(n_layers / (ideal depth x depth_factor))|
    (``depth_factor``: MHA008's deeper stacks of sparse MoE designs, 1 for the others)."""
    return abs(math.log(model.n_layers / (ideal_depth(model.d_model) * depth_factor)))


def record_depth(trace: Trace, model: ModelSpec, budget: int, revised_by: str = "", *, active: bool = False) -> None:
    """MHA002 for the design as it stands; a later step that changes the depth re-records it in place."""
    params = count_params(model)
    total = params.active if active else params.total
    after = f" (re-solved for {revised_by})" if revised_by else ""
    what = "active parameters" if active else "parameters"
    trace.refire(
        "MHA002",
        f"{model.n_layers} layers{after}: {format_count(total)} {what}, {(total - budget) / budget:+.1%} of the budget",
        n_layers=model.n_layers,
        total_params=params.total,
        active_params=params.active,
        budget=budget,
    )
