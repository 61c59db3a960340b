"""Sarvam-30B (SarvamMoE): transformers runs it as GLM-4-MoE (full RoPE, per-head q/k norms, sigmoid routing)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.families.models.exaone_moe import num_shared_experts
from mha_cli.core.families.models.glm4_moe import FAMILY as GLM4_MOE
from mha_cli.core.families.models.glm4_moe import qkv_biases_only

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _read_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """The original config.json's spellings (num_shared_experts, use_qkv_bias), GLM-4-MoE's q/k/v-only biases."""
    num_shared_experts(r, fields)
    qkv_biases_only(r, fields)


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
    read_fields=_read_fields,
    routing_defaults={**GLM4_MOE.routing_defaults, "routed_scaling_factor": 2.5},
    routing_fixed=GLM4_MOE.routing_fixed,
    names=("sarvam-30b", "sarvam-moe"),
    equal_test="tests/test_family_sweep.py (the decoder sweep: sarvam_moe)",
    left_unread={"num_nextn_predict_layers": ANY_VALUE},
)
