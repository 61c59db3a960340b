"""GLM-4.5 (GLM-4-MoE): Llama's attention (partial RoPE, optional per-head q/k norms), DeepSeek-V3's sigmoid routing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

SIGMOID_NOAUX = ("scoring_func", "topk_method")
"""Routing fields GLM-4-MoE's router hard-codes: sigmoid scores, experts chosen by score + correction bias."""


def qkv_biases_only(r: ConfigReader, fields: dict[str, Any]) -> None:
    """``attention_bias`` (Sarvam's original ``use_qkv_bias``) biases q, k and v; o_proj never has one."""
    fields["qkv_bias"] = bool(r.get("attention_bias", "use_qkv_bias"))
    fields["o_bias"] = False


FAMILY = Family(
    model_types=("glm4_moe",),
    config_class="Glm4MoeConfig (transformers 5.24)",
    defaults={"partial_rotary_factor": 0.5, "n_shared_experts": 1, "first_k_dense_replace": 1},
    routing_defaults={
        "scoring_func": "sigmoid",
        "topk_method": "noaux_tc",
        "norm_topk_prob": True,
        "routed_scaling_factor": 1.0,
        "n_group": 1,
        "topk_group": 1,
    },
    routing_fixed=SIGMOID_NOAUX,
    read_fields=qkv_biases_only,
    names=("glm-4.5", "glm4-moe", "glm-4-moe"),
    differences=(
        "GLM-4.5's multi-token-prediction layers (num_nextn_predict_layers; not counted by count_params either)",
    ),
    equal_test="tests/test_family_sweep.py (the decoder sweep: glm4_moe)",
    left_unread={"num_nextn_predict_layers": ANY_VALUE},
)
