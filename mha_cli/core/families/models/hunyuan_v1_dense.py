"""Hunyuan dense (v1): Llama's decoder with per-head q/k norms."""

from mha_cli.core.families import Family
from mha_cli.core.weight_layout import WeightLayout

HUNYUAN_QK_NORM = "HunYuan normalises q and k after RoPE; this one before"

# Llama's names but its per-head q/k norms, query_layernorm and key_layernorm.
WEIGHTS = WeightLayout(
    renames=(
        (r"\.self_attn\.query_layernorm\.", ".self_attn.q_norm."),
        (r"\.self_attn\.key_layernorm\.", ".self_attn.k_norm."),
    ),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("hunyuan_v1_dense",),
    config_class="HunYuanDenseV1Config (transformers 5.24)",
    layout={"qk_norm": True},
    differences=(HUNYUAN_QK_NORM,),
    weights=WEIGHTS,
)
