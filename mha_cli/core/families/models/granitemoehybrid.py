"""Granite-4.0-H: Mamba-2 layers with a few attention layers, a shared MLP beside its experts, Granite's scalars."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family
from mha_cli.core.families.models.granite import GRANITE_MULTIPLIERS
from mha_cli.core.families.state_readers import mamba2_state

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _every_layer_mamba(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    return r.assume(["linear"] * n_layers, "layer_types absent: every layer Mamba-2 (GraniteMoeHybridConfig)")


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    return {**mamba2_state(r, d_model, inner=None, out_proj="mamba_proj_bias"), "on_attention_layers": False}


def _shared_mlp(r: ConfigReader, fields: dict[str, Any]) -> None:
    """GraniteMoeHybridMLP (shared_mlp) runs beside the experts, as wide as ``shared_intermediate_size``."""
    if "moe" in fields:
        fields["moe"]["n_shared_experts"] = 1
        fields["moe"]["d_ff_shared"] = r.get("shared_intermediate_size") or fields["moe"]["d_ff_expert"]


FAMILY = Family(
    model_types=("granitemoehybrid",),
    config_class="GraniteMoeHybridConfig (transformers 5.24)",
    defaults={"mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2},
    spellings={"d_ff": ("shared_intermediate_size",)},
    layer_kinds=_every_layer_mamba,
    fixed_state="Mamba-2",
    state=_state,
    read_fields=_shared_mlp,
    names=("granitemoehybrid", "granite-4.0-h"),
    differences=GRANITE_MULTIPLIERS,
)
