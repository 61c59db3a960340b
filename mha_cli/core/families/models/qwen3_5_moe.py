"""Qwen3.5-MoE: Qwen3-Next's Gated DeltaNet : gated attention layers with routed experts and a gated shared expert."""

from mha_cli.core.families.models.qwen3_next import FAMILY as QWEN3_NEXT

FAMILY = QWEN3_NEXT._replace(
    model_types=("qwen3_5_moe", "qwen3_5_moe_text"), config_class="Qwen3_5MoeTextConfig (transformers 5.24)"
)
