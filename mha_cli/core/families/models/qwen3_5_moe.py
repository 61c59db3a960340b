"""Qwen3.5-MoE: Qwen3-Next's Gated DeltaNet : gated attention layers with routed experts and a gated shared expert,
the mixer's projections split as Qwen3.5's."""

from mha_cli.core.families.models.qwen3_5 import split_gated_deltanet_state
from mha_cli.core.families.models.qwen3_next import FAMILY as QWEN3_NEXT

FAMILY = QWEN3_NEXT._replace(
    model_types=("qwen3_5_moe", "qwen3_5_moe_text"), config_class="Qwen3_5MoeTextConfig (transformers 5.24)",
    state=split_gated_deltanet_state,
    equal_test="tests/test_family_sweep.py (the decoder sweep: qwen3_5_moe_text)",
)  # fmt: skip
