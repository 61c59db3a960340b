"""Kimi-Linear: KDA (Kimi delta attention) layers and MLA layers listed in ``linear_attn_config``; MoE."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family
from mha_cli.core.families.layer_types import kinds_of_layer_types

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _listed_layers(r: ConfigReader, n_layers: int) -> list[LayerKind] | None:
    """``linear_attn_config``'s 1-based ``full_attn_layers`` attend; the others are KDA."""
    linear = r.config.get("linear_attn_config") or {}
    if linear.get("kda_layers") is None:
        return None
    full = {int(layer) - 1 for layer in linear.get("full_attn_layers") or []}
    return kinds_of_layer_types(
        r, ["full_attention" if i in full else "linear_attention" for i in range(n_layers)], n_layers
    )


def _kda_state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """A (heads, head_dim, head_dim) state per layer, short convs on q, k and v."""
    linear = r.config.get("linear_attn_config") or {}
    heads = linear.get("num_heads") or r.assume(32, "linear_attn_config.num_heads absent: 32 (KimiLinearConfig)")
    head_dim = linear.get("head_dim") or r.assume(128, "linear_attn_config.head_dim absent: 128 (KimiLinearConfig)")
    kernel = linear.get("short_conv_kernel_size") or r.assume(
        4, "linear_attn_config.short_conv_kernel_size absent: 4 (KimiLinearConfig)"
    )
    return {
        "kind": "kda", "n_heads": heads, "head_dim": head_dim, "state_dim": head_dim,
        "conv_dim": 3 * heads * head_dim, "conv_kernel": kernel,
    }  # fmt: skip


FAMILY = Family(
    model_types=("kimi_linear",),
    config_class="KimiLinearConfig (transformers 5.24)",
    defaults={"qk_rope_head_dim": 64},
    layer_kinds=_listed_layers,
    fixed_state="KDA",
    state=_kda_state,
)
