"""GLM-4 (glm-4-9b, the ``glm`` folder): biases on q, k and v only, interleaved RoPE over half of each head, a
SwiGLU MLP with its gate and up projections fused (``gate_up_proj``)."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.glm4_moe import qkv_biases_only
from mha_cli.core.weight_layout import FusedSplit, WeightLayout

GATE_UP = FusedSplit(
    r"(.*)\.mlp\.gate_up_proj\.weight", (r"\1.mlp.gate_proj.weight", r"\1.mlp.up_proj.weight"), "gate_up"
)
"""GLM's fused MLP input projection: d_ff gate rows, then d_ff up rows."""

FAMILY = Family(
    model_types=("glm",),
    config_class="GlmConfig (transformers 5.24)",
    defaults={"partial_rotary_factor": 0.5, "attention_bias": True, "head_dim": 128},
    interleaved_rope=True,
    read_fields=qkv_biases_only,
    names=("chatglm", "glm-4-9b-chat"),
    equal_test=EQUAL_BY_SWEEP,
    weights=WeightLayout(fused=(GATE_UP,), dropped=(r"\.rotary_emb\.inv_freq$",)),
)
