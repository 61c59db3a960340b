"""Qwen3-MoE: Qwen3's attention, routed experts without a shared one."""

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.families.models.qwen2 import window_layers

FAMILY = Family(
    model_types=("qwen3_moe",),
    config_class="Qwen3MoeConfig (transformers 5.24)",
    defaults={"max_window_layers": 28},
    layout={"qk_norm": True},
    layer_kinds=window_layers,
    routing_defaults={"norm_topk_prob": False},
    equal_test="tests/test_nn_mla_model.py (qwen3-moe: whole decoder)",
    left_unread={"sliding_window": ANY_VALUE},
)
