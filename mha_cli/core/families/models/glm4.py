"""GLM-4-0414 (``glm4``): GLM-4's attention and fused MLP with sandwich norms, four a layer (each sublayer's input
and output normed)."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.glm import GATE_UP
from mha_cli.core.families.models.glm4_moe import qkv_biases_only
from mha_cli.core.weight_layout import WeightLayout

SANDWICH_NORMS = (
    (r"\.post_attention_layernorm\.", ".pre_feedforward_layernorm."),
    (r"\.post_self_attn_layernorm\.", ".post_attention_layernorm."),
    (r"\.post_mlp_layernorm\.", ".post_feedforward_layernorm."),
)
"""GLM-4's four norms under Gemma 2's names (in this order: its post_attention_layernorm normalises the MLP's input,
its post_self_attn_layernorm the attention's output, its post_mlp_layernorm the MLP's output)."""

FAMILY = Family(
    model_types=("glm4",),
    config_class="Glm4Config (transformers 5.24)",
    defaults={"partial_rotary_factor": 0.5, "attention_bias": True, "head_dim": 128},
    layout={"n_norms_per_layer": 4},
    interleaved_rope=True,
    read_fields=qkv_biases_only,
    names=("glm4", "glm-4-32b", "glm-4-9b-0414", "glm-z1"),
    equal_test=EQUAL_BY_SWEEP,
    weights=WeightLayout(renames=SANDWICH_NORMS, fused=(GATE_UP,), dropped=(r"\.rotary_emb\.inv_freq$",)),
)
