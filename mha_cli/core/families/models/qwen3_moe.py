"""Qwen3-MoE: Qwen3's attention, routed experts without a shared one; with ``use_sliding_window`` every layer slides
(Qwen3MoeConfig has no ``max_window_layers`` and Qwen3MoeAttention takes ``config.sliding_window`` on every layer,
transformers 5.24)."""

from mha_cli.core.families import ANY_VALUE, SWITCHED_SLIDES, Family

FAMILY = Family(
    model_types=("qwen3_moe",),
    config_class="Qwen3MoeConfig (transformers 5.24)",
    window_fields=SWITCHED_SLIDES,
    defaults={"use_sliding_window": False},
    layout={"qk_norm": True},
    routing_defaults={"norm_topk_prob": False},
    equal_test="tests/test_nn_mla_model.py (qwen3-moe: whole decoder)",
    left_unread={"sliding_window": ANY_VALUE},
)
