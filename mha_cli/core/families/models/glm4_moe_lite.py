"""GLM-4.7-Flash (GLM-4-MoE-Lite): DeepSeek-V3's MLA and sigmoid routing with its correction bias, one group."""

from mha_cli.core.families import EQUAL_BY_SWEEP, MLA_UNREAD, Family
from mha_cli.core.families.models.glm4_moe import SIGMOID_NOAUX

FAMILY = Family(
    model_types=("glm4_moe_lite",),
    config_class="Glm4MoeLiteConfig (transformers 5.24)",
    routing_defaults={
        "scoring_func": "sigmoid",
        "topk_method": "noaux_tc",
        "norm_topk_prob": True,
        "routed_scaling_factor": 1.8,
        "n_group": 1,
        "topk_group": 1,
    },
    routing_fixed=SIGMOID_NOAUX,
    names=("glm-4.7-flash", "glm4-moe-lite"),
    equal_test=EQUAL_BY_SWEEP,
    left_unread=MLA_UNREAD,
)
