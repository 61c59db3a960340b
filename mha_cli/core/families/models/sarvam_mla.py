"""Sarvam-105B (SarvamMLA): transformers runs it as DeepSeek-V3 (MLA, sigmoid routing with a correction bias)."""

from mha_cli.core.families import ANY_VALUE, MLA_UNREAD, Family
from mha_cli.core.families.models.deepseek_v3 import FAMILY as DEEPSEEK_V3
from mha_cli.core.families.models.exaone_moe import num_shared_experts

FAMILY = Family(
    model_types=("sarvam_mla",),
    config_class="SarvamMLAConfig (transformers 5.24)",
    defaults={"n_shared_experts": 1, "first_k_dense_replace": 1, "num_experts_per_tok": 8},
    read_fields=num_shared_experts,  # the original config.json spells num_shared_experts
    routing_defaults={**DEEPSEEK_V3.routing_defaults, "n_group": 1, "topk_group": 1},
    routing_fixed=DEEPSEEK_V3.routing_fixed,
    names=("sarvam-105b", "sarvam-mla"),
    equal_test="tests/test_family_sweep.py (the decoder sweep: sarvam_mla)",
    left_unread={**MLA_UNREAD, "num_nextn_predict_layers": ANY_VALUE},
)
