"""Phi (1, 1.5, 2): one LayerNorm before a parallel attention + MLP block, partial rotate-half RoPE, biases
everywhere, a ``final_layernorm`` and an LM head with a bias."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _qk_layernorm(r: ConfigReader, fields: dict[str, Any]) -> None:
    """``qk_layernorm``: per-head LayerNorms (weight and bias) of q and k before RoPE, as Persimmon's."""
    if r.get("qk_layernorm"):
        fields["qk_norm"] = True
        fields["qk_norm_type"] = "layernorm"


WEIGHTS = WeightLayout(
    renames=(
        (r"^model\.final_layernorm\.", "model.norm."),
        (r"\.self_attn\.dense\.", ".self_attn.o_proj."),
        (r"\.self_attn\.(q|k)_layernorm\.", r".self_attn.\1_norm."),
        (r"\.mlp\.fc1\.", ".mlp.up_proj."),
        (r"\.mlp\.fc2\.", ".mlp.down_proj."),
    ),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

LAYOUT = {
    "mlp": "plain", "mlp_bias": True, "norm": "layernorm", "n_norms_per_layer": 1, "qkv_bias": True,
    "o_bias": True, "lm_head_bias": True,
}  # fmt: skip

FAMILY = Family(
    model_types=("phi",),
    config_class="PhiConfig (transformers 5.24)",
    defaults={"partial_rotary_factor": 0.5},
    layout=LAYOUT,
    read_fields=_qk_layernorm,
    names=("phi-1", "phi-2", "phi_1", "phi_2"),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
