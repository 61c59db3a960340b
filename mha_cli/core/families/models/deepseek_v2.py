"""DeepSeek-V2: MLA attention, greedy softmax routing over routed and shared experts."""

from mha_cli.core.families import MLA_UNREAD, Family

FAMILY = Family(
    model_types=("deepseek_v2",),
    config_class="DeepseekV2Config (transformers 5.24)",
    routing_defaults={"scoring_func": "softmax", "topk_method": "greedy", "norm_topk_prob": False},
    equal_test="tests/test_nn_mla_model.py (deepseek-v2: whole decoder)",
    left_unread=MLA_UNREAD,
)
