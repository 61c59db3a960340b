"""Qwen2-MoE: Qwen2's attention, routed experts beside a gated shared expert."""

from mha_cli.core.families import ANY_VALUE, SWITCHED_SLIDES, Family
from mha_cli.core.families.models.qwen2 import window_layers

FAMILY = Family(
    model_types=("qwen2_moe",),
    config_class="Qwen2MoeConfig (transformers 5.24)",
    window_fields=SWITCHED_SLIDES,
    defaults={"max_window_layers": 28, "use_sliding_window": False},
    layout={"qkv_bias": True},
    layer_kinds=window_layers,
    routing_defaults={"norm_topk_prob": False},
    gated_shared_expert=True,
    equal_test="tests/test_nn_moe.py (the MoE block only)",
    left_unread={"max_window_layers": ANY_VALUE, "sliding_window": ANY_VALUE, "qkv_bias": True},
)
