"""MiniMax-Text-01 / M1: lightning-attention layers, a softmax layer every ``attn_type_list`` 1; MoE."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import Family
from mha_cli.core.families.layer_types import kinds_of_layer_types

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _attention_type_list(r: ConfigReader, n_layers: int) -> list[LayerKind] | None:
    """``attn_type_list``: 0 lightning, 1 softmax, one per layer."""
    flags = r.config.get("attn_type_list")
    if not flags:
        return None
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


FAMILY = Family(
    model_types=("minimax",),
    config_class="MiniMaxConfig (transformers 5.24)",
    defaults={"num_experts_per_tok": 2},
    old_names=("minimax_text_01", "minimax_m1"),
    layer_kinds=_attention_type_list,
    reads=frozenset({"attn_type_list"}),
    fixed_state="lightning attention",
    state=_lightning_state,
)
