"""The shape from the budget: width (MHA001), depth (MHA002), MLP (MHA003), vocabulary (MHA004),
head_dim (MHA010); ``variant`` picks the projection each width's heads lead to."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_count
from mha_cli.core.recommend.context import Context
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import Trace
from mha_cli.core.schemas import ModelSpec, Variant
from mha_cli.core.validation import describe_validation_error
from mha_cli.core.variants import mla_for_shape

ModelMaker = Callable[[int], ModelSpec]
"""Depth -> the model at a fixed width, head geometry and variant."""

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
        fields["mla"] = mla_for_shape(head_dim, d_model)  # MHA030: DeepSeek proportions
    else:
        fields.update(head_dim=head_dim, n_kv_heads=n_kv_heads, variant=variant)
    try:
        return ModelSpec.model_validate(fields)
    except ValidationError as exc:  # only options far outside the rules' range get here (e.g. --d-model 2000000)
        raise BadInputError(
            f"no valid design at d_model {d_model}: {describe_validation_error(exc)}; change --d-model or --params"
        ) from exc


def solve_layers(budget: int, make: ModelMaker) -> ModelSpec | None:
    """MHA002: the model at the depth (2 to MHA094's maximum) whose total is nearest the budget, even preferred,
    within tolerance; None when no depth at this width lands within it."""
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
            return make(layers)
    return None


@dataclass(frozen=True)
class Frame:
    """Everything but depth and projection: width, head_dim and vocabulary."""

    d_model: int
    head_dim: int
    vocab: int
    tied: bool

    @property
    def n_heads(self) -> int:
        return self.d_model // self.head_dim

    def maker(self, variant: Variant, n_kv_heads: int) -> ModelMaker:
        def make(n_layers: int) -> ModelSpec:
            return build_model(
                d_model=self.d_model, n_layers=n_layers, head_dim=self.head_dim, variant=variant,
                n_kv_heads=n_kv_heads, vocab=self.vocab, tied=self.tied,
            )  # fmt: skip

        return make


def widths(ctx: Context, budget: int) -> list[int]:
    """The widths to try: the one --d-model fixes, else the ladder nearest the ideal first."""
    return [ctx.request.d_model] if ctx.request.d_model else widths_to_try(budget)


def record_depth(trace: Trace, model: ModelSpec, budget: int, revised_by: str = "") -> None:
    """MHA002 for the design as it stands; a later step that changes the depth re-records it in place."""
    total = count_params(model).total
    after = f" (re-solved after {revised_by})" if revised_by else ""
    trace.refire(
        "MHA002",
        f"{model.n_layers} layers{after}: {format_count(total)} parameters, {(total - budget) / budget:+.1%} of the"
        " budget",
        n_layers=model.n_layers,
        total_params=total,
        budget=budget,
    )
