"""Qwen3.5 (dense): Qwen3-Next's Gated DeltaNet : gated attention layout without experts."""

from mha_cli.core.families.models.qwen3_next import FAMILY as QWEN3_NEXT

FAMILY = QWEN3_NEXT._replace(
    model_types=("qwen3_5", "qwen3_5_text"), config_class="Qwen3_5TextConfig (transformers 5.24)",
    gated_shared_expert=False,
)  # fmt: skip
