"""StarCoder2: LayerNorm, a c_fc -> GELU -> c_proj MLP, biases everywhere unless ``use_bias`` is false."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _biases(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("use_bias") is False:
        fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = False


# StarCoder2: Llama's names except its plain MLP, c_fc (up) and c_proj (down).
WEIGHTS = WeightLayout(
    renames=((r"\.mlp\.c_fc\.", ".mlp.up_proj."), (r"\.mlp\.c_proj\.", ".mlp.down_proj.")),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("starcoder2",),
    config_class="Starcoder2Config (transformers 5.24)",
    window_fields=SLIDES,
    layout={"mlp": "plain", "norm": "layernorm", "qkv_bias": True, "o_bias": True, "mlp_bias": True},
    tied_by_default=True,
    read_fields=_biases,
    names=("starcoder2",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
