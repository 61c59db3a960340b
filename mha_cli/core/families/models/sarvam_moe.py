"""Sarvam-30B (SarvamMoE): transformers runs it as GLM-4-MoE (full RoPE, per-head q/k norms, sigmoid routing)."""

from mha_cli.core.families import Family
from mha_cli.core.families.models.exaone_moe import shared_experts_and_dense_layers
from mha_cli.core.families.models.glm4_moe import FAMILY as GLM4_MOE

FAMILY = Family(
    model_types=("sarvam_moe",),
    config_class="SarvamMoEConfig (transformers 5.24)",
    defaults={
        "head_dim": 64,
        "use_qk_norm": True,
        "num_key_value_heads": 4,
        "n_shared_experts": 1,
        "first_k_dense_replace": 1,
        "num_experts_per_tok": 6,
    },
    read_fields=shared_experts_and_dense_layers,  # the original config.json spells num_shared_experts
    routing_defaults={**GLM4_MOE.routing_defaults, "routed_scaling_factor": 2.5},
    routing_fixed=GLM4_MOE.routing_fixed,
    names=("sarvam-30b", "sarvam-moe"),
    equal_test="tests/test_family_sweep.py (the decoder sweep: sarvam_moe)",
)
