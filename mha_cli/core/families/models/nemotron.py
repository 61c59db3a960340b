"""Nemotron (Minitron): LayerNorm1P (a LayerNorm multiplying by 1 + weight, with a bias), a plain squared-ReLU MLP,
partial RoPE."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.jais2 import read_mlp_bias

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Its MLP bias and its ``norm_eps``."""
    read_mlp_bias(r, fields)
    fields["norm_eps"] = float(r.get("norm_eps"))


FAMILY = Family(
    model_types=("nemotron",),
    config_class="NemotronConfig (transformers 5.24)",
    defaults={"hidden_act": "relu2", "norm_eps": 1e-5, "partial_rotary_factor": 0.5},
    layout={"norm": "layernorm", "norm_weight_offset": 1.0},
    read_fields=_fields,
    names=("nemotron-3", "nemotron-4", "minitron"),
    equal_test=EQUAL_BY_SWEEP,
)
