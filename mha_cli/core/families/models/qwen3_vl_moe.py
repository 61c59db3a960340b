"""Qwen3-VL-MoE's language model (``text_config``, ``qwen3_vl_moe_text``): Qwen3-VL's attention (q/k norms) with
Qwen3-MoE's routed experts, no shared one; its router always renormalises the top k."""

from mha_cli.core.families import ANY_VALUE
from mha_cli.core.families.models.qwen3_vl import FAMILY as QWEN3_VL

QWEN3_VL_MOE_TEXT_DEFAULTS = {
    "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 128, "max_position_embeddings": 128000,
    "rope_theta": 500_000.0, "rms_norm_eps": 1e-6, "hidden_act": "silu", "moe_intermediate_size": 1408,
    "num_experts_per_tok": 4, "num_experts": 60,
}  # fmt: skip
"""Qwen3VLMoeTextConfig's defaults (transformers 5.24), for the fields a figure reads."""

FAMILY = QWEN3_VL._replace(
    model_types=("qwen3_vl_moe", "qwen3_vl_moe_text"),
    config_class="Qwen3VLMoeTextConfig (transformers 5.24)",
    defaults=QWEN3_VL_MOE_TEXT_DEFAULTS,
    routing_defaults={"norm_topk_prob": True},
    routing_fixed=("norm_topk_prob",),  # Qwen3VLMoeTextTopKRouter divides the top k by their sum, always
    left_unread={"sliding_window": ANY_VALUE},  # Qwen3VLMoeTextConfig carries it; no layer of its decoder slides
)
