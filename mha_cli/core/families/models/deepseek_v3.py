"""DeepSeek-V3: MLA, sigmoid routing with noaux_tc group selection, a multi-token-prediction module."""

from mha_cli.core.families import ANY_VALUE, MLA_UNREAD, Family

MTP = ("DeepSeek-V3's multi-token-prediction module (not counted by count_params either)",)

FAMILY = Family(
    model_types=("deepseek_v3",),
    config_class="DeepseekV3Config (transformers 5.24)",
    routing_defaults={
        "scoring_func": "sigmoid",
        "topk_method": "noaux_tc",
        "norm_topk_prob": True,
        "routed_scaling_factor": 2.5,
        "n_group": 8,
        "topk_group": 4,
    },
    routing_fixed=("scoring_func", "topk_method"),
    names=("deepseek-v3",),
    differences=MTP,
    equal_test="tests/test_nn_mla_model.py (deepseek-v3: whole decoder, absorbed and naive)",
    left_unread={**MLA_UNREAD, "num_nextn_predict_layers": ANY_VALUE},
)
