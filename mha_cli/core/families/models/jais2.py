"""JAIS 2: Llama's attention (biased), LayerNorms with biases, a plain squared-ReLU MLP with biases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def read_mlp_bias(r: ConfigReader, fields: dict[str, Any]) -> None:
    """``mlp_bias`` biases the MLP's up and down projections (JAIS 2, Nemotron)."""
    fields["mlp_bias"] = bool(r.get("mlp_bias"))


FAMILY = Family(
    model_types=("jais2",),
    config_class="Jais2Config (transformers 5.24)",
    defaults={"hidden_act": "relu2", "attention_bias": True, "mlp_bias": True},
    layout={"norm": "layernorm"},
    read_fields=read_mlp_bias,
    names=("jais2", "jais-2"),
    equal_test=EQUAL_BY_SWEEP,
)
