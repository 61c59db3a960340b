"""ERNIE 4.5 MoE: ERNIE 4.5's attention with routed and shared experts (``moe_num_experts``, ``moe_k``, its MoE
layers from ``moe_layer_start_index`` every ``moe_layer_interval``); softmax scores, experts chosen by score +
correction bias, weighted by the unbiased scores renormalised."""

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout

# The router's correction bias sits in a statistics module (gate.moe_statics), one row per expert group (1, E).
WEIGHTS = WeightLayout(
    renames=((r"\.mlp\.gate\.moe_statics\.e_score_correction_bias$", ".mlp.gate.e_score_correction_bias"),),
    squeezed=(r"\.mlp\.gate\.moe_statics\.e_score_correction_bias$",),
)

FAMILY = Family(
    model_types=("ernie4_5_moe",),
    config_class="Ernie4_5_MoeConfig (transformers 5.24)",
    spellings={
        "experts": ("moe_num_experts",),
        "experts_per_token": ("moe_k",),
        "shared_experts": ("moe_num_shared_experts",),
    },
    tied_by_default=True,
    interleaved_rope=True,
    routing_defaults={"scoring_func": "softmax", "topk_method": "noaux_tc", "norm_topk_prob": True},
    routing_fixed=("scoring_func", "topk_method", "norm_topk_prob"),
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
    # num_nextn_predict_layers: transformers 5.25's name for ERNIE 4.5's multi-token-prediction layers (attribute map
    # "num_mtp_layers"), which neither transformers' model nor count_params builds (as DeepSeek-V3's and GLM-4.5's)
    left_unread={"use_bias": False, "moe_norm_min": ANY_VALUE, "num_nextn_predict_layers": ANY_VALUE},
    uncounted="weights understated by one value per expert per MoE layer: the router's correction bias, a parameter in"
    " transformers, is a buffer here; the cache is exact",
)
