"""Kimi-Linear: KDA (Kimi delta attention) layers and MLA layers listed in ``linear_attn_config``; MoE."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import Family
from mha_cli.core.families.layer_types import kinds_of_layer_types

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _linear_config(r: ConfigReader) -> dict[str, Any]:
    linear = r.config.get("linear_attn_config") or {}
    if not isinstance(linear, dict):
        raise BadInputError(f"{r.origin}: linear_attn_config must be an object (kda_layers, num_heads, head_dim...)")
    return linear


def _listed_layers(r: ConfigReader, n_layers: int) -> list[LayerKind] | None:
    """``linear_attn_config``'s 1-based ``kda_layers`` are KDA (as KimiLinearConfig's layer types); the others MLA."""
    kda = _linear_config(r).get("kda_layers")
    if kda is None:
        return None
    if not isinstance(kda, list) or not all(isinstance(i, int) and 1 <= i <= n_layers for i in kda):
        raise BadInputError(f"{r.origin}: linear_attn_config.kda_layers must list 1-based layers up to {n_layers}")
    linear = {i - 1 for i in kda}
    return kinds_of_layer_types(
        r, ["linear_attention" if i in linear else "full_attention" for i in range(n_layers)], n_layers
    )


def _kda_state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """A (heads, head_dim, head_dim) state per layer, short convs on q, k and v."""
    linear = _linear_config(r)
    heads = _whole(r, linear, "num_heads", 32)
    head_dim = _whole(r, linear, "head_dim", 128)
    kernel = _whole(r, linear, "short_conv_kernel_size", 4)
    return {
        "kind": "kda", "n_heads": heads, "head_dim": head_dim, "state_dim": head_dim,
        "conv_dim": 3 * heads * head_dim, "conv_kernel": kernel,
    }  # fmt: skip


def _whole(r: ConfigReader, linear: dict[str, Any], key: str, default: int) -> int:
    """``linear_attn_config[key]``: a positive whole number, or KimiLinearConfig's default when absent (said)."""
    value = linear.get(key)
    if value is None:
        return r.assume(default, f"linear_attn_config.{key} absent: {default} (KimiLinearConfig)")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadInputError(f"{r.origin}: linear_attn_config.{key} must be a positive whole number, got {value!r}")
    return value


FAMILY = Family(
    model_types=("kimi_linear",),
    config_class="KimiLinearConfig (transformers 5.24)",
    defaults={"qk_rope_head_dim": 64},
    layer_kinds=_listed_layers,
    reads=frozenset({"linear_attn_config"}),
    fixed_state="KDA",
    state=_kda_state,
)
