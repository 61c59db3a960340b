"""Persimmon: LayerNorms (the q/k norms too, per head, with bias), a squared-ReLU MLP, partial rotate-half RoPE,
q/k/v fused head by head, biases everywhere, a ``final_layernorm``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.gpt_neox import partial_rotation
from mha_cli.core.weight_layout import WeightLayout, split_qkv

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _persimmon_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("qk_layernorm"):
        fields["qk_norm"] = True
        fields["qk_norm_type"] = "layernorm"
    partial_rotation(r, fields, "partial_rotary_factor", "rope_theta")


WEIGHTS = WeightLayout(
    renames=(
        (r"^model\.final_layernorm\.", "model.norm."),
        (r"\.self_attn\.query_key_value\.", ".self_attn.qkv_proj."),
        (r"\.self_attn\.dense\.", ".self_attn.o_proj."),
        (r"\.self_attn\.(q|k)_layernorm\.", r".self_attn.\1_norm."),
        (r"\.mlp\.dense_h_to_4h\.", ".mlp.up_proj."),
        (r"\.mlp\.dense_4h_to_h\.", ".mlp.down_proj."),
    ),
    fused=(split_qkv("qkv_per_kv_group"),),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

LAYOUT = {
    "mlp": "plain", "mlp_bias": True, "activation": "relu2", "norm": "layernorm", "qkv_bias": True,
    "o_bias": True,
}  # fmt: skip

FAMILY = Family(
    model_types=("persimmon",),
    config_class="PersimmonConfig (transformers 5.24)",
    defaults={"qk_layernorm": True, "partial_rotary_factor": 0.5},
    layout=LAYOUT,
    read_fields=_persimmon_fields,
    names=("persimmon",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
