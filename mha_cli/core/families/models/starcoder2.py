"""StarCoder2: LayerNorm, a c_fc -> GELU -> c_proj MLP, biases everywhere unless ``use_bias`` is false."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _biases(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("use_bias") is False:
        fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = False


FAMILY = Family(
    model_types=("starcoder2",),
    config_class="Starcoder2Config (transformers 5.24)",
    layout={"mlp": "plain", "norm": "layernorm", "qkv_bias": True, "o_bias": True, "mlp_bias": True},
    tied_by_default=True,
    read_fields=_biases,
    names=("starcoder2",),
    differences=(
        "StarCoder2's MLP is c_fc / c_proj with tanh GELU and its norms LayerNorm, under its own names; here"
        " Llama's names and exact GELU",
    ),
)
