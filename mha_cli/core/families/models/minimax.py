"""MiniMax-Text-01 / M1: lightning-attention layers, a softmax layer every ``attn_type_list`` 1; Mixtral's MoE;
each residual the sublayer's normed input, scaled (``ModelSpec.normed_residual``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.families.layer_types import kinds_of_layer_types, sliding_window
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _attention_type_list(r: ConfigReader, n_layers: int) -> list[LayerKind] | None:
    """``attn_type_list``: 0 lightning, 1 softmax, one per layer; without it (nor ``layer_types``), MiniMaxConfig's
    own: softmax on every other layer from 0, lightning between (review 341 #2: every layer was read as attention)."""
    flags = r.config.get("attn_type_list")
    if not flags:
        derived: list[LayerKind] = ["global" if i % 2 == 0 else "linear" for i in range(n_layers)]
        return r.assume(derived, "layer_types absent: softmax attention on every other layer from 0, lightning"
                                 " between, as MiniMaxConfig derives them")  # fmt: skip
    if not isinstance(flags, list) or not set(flags) <= {0, 1}:
        raise BadInputError(f"{r.origin}: attn_type_list must be a list with one 0 or 1 per layer")
    return kinds_of_layer_types(r, ["full_attention" if f else "linear_attention" for f in flags], n_layers)


def _lightning_state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """One (head_dim, head_dim) K^T V sum per head, no conv."""
    head_dim = fields.get("head_dim") or d_model // fields["n_heads"]
    return {
        "kind": "lightning", "n_heads": fields["n_heads"], "head_dim": head_dim, "state_dim": head_dim,
        "state_dtype": "activation",
    }  # fmt: skip


RESIDUAL_FACTORS = {
    "attention": (("full_attn_alpha_factor", "layernorm_full_attention_alpha"),
                  ("full_attn_beta_factor", "layernorm_full_attention_beta")),
    "linear": (("linear_attn_alpha_factor", "layernorm_linear_attention_alpha"),
               ("linear_attn_beta_factor", "layernorm_linear_attention_beta")),
    "mlp": (("mlp_alpha_factor", "layernorm_mlp_alpha"), ("mlp_beta_factor", "layernorm_mlp_beta")),
}  # fmt: skip
"""``NormedResidual``'s (alpha, beta) pairs: transformers' spelling, then the remote code's (MiniMax-Text-01's
config.json: 3.5565588200778455 and 1.0); absent, 1 (both classes' default)."""


def _factor(r: ConfigReader, keys: tuple[str, ...]) -> float:
    value = r.get(*keys)
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise BadInputError(f"{r.origin}: {keys[0]} must be a positive number, got {value!r}")
    return float(value)


def _normed_residual(r: ConfigReader, fields: dict[str, Any]) -> None:
    """transformers' ``MiniMaxDecoderLayer`` adds each sublayer to its normed input, scaled by the config's factors;
    a ``sliding_window`` windows its softmax layers' mask, not their cache (``ModelSpec.masked_window``)."""
    fields["normed_residual"] = {
        part: (_factor(r, alpha), _factor(r, beta)) for part, (alpha, beta) in RESIDUAL_FACTORS.items()
    }
    window = sliding_window(r)
    if window:  # priced unwindowed, as transformers' MiniMaxCache holds it
        fields["masked_window"] = window


# transformers recomputes the lightning layers' decay tables from the config (its buffers slope_rate, query_decay,
# key_decay, diagonal_decay); ``LightningAttention`` recomputes its own, so they are dropped, not loaded.
WEIGHTS = WeightLayout(dropped=(r"\.self_attn\.(slope_rate|query_decay|key_decay|diagonal_decay)$",))

FAMILY = Family(
    model_types=("minimax",),
    config_class="MiniMaxConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={"num_experts_per_tok": 2},
    old_names=("minimax_text_01", "minimax_m1"),
    layer_kinds=_attention_type_list,
    reads=frozenset({"attn_type_list"}),
    fixed_state="lightning attention",
    state=_lightning_state,
    read_fields=_normed_residual,
    routing_defaults={"norm_topk_prob": True},
    routing_fixed=("norm_topk_prob",),
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
    left_unread={"block_size": ANY_VALUE},  # the blockwise prefill's block: the same result,
)
