"""Falcon-H1: attention and a Mamba-2 mixer side by side in every layer, muP multipliers throughout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family
from mha_cli.core.families.state_readers import mamba2_state

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _every_layer_attends(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    return ["global"] * n_layers


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Mamba-2 beside attention; its SSM width is ``mamba_d_ssm``, its out_proj bias ``projectors_bias``."""
    return {
        **mamba2_state(
            r,
            d_model,
            inner=r.count("mamba_d_ssm", "mamba_d_ssm") if r.get("mamba_d_ssm") else None,
            out_proj="projectors_bias",
        ),
        "on_attention_layers": True,
        "output_norm": bool(r.config.get("mamba_rms_norm", False)),
    }


FAMILY = Family(
    model_types=("falcon_h1",),
    config_class="FalconH1Config (transformers 5.24)",
    defaults={"mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2},
    layer_kinds=_every_layer_attends,
    fixed_state="Mamba-2 beside attention",
    state=_state,
    names=("falcon-h1", "falcon_h1"),
    differences=(
        "Falcon-H1's muP multipliers (embedding, attention in/out, key, SSM in/out, MLP and lm_head multipliers,"
        " the mup vector); none here",
    ),
)
