"""ERNIE 4.5 MoE: ERNIE 4.5's attention with routed and shared experts (``moe_num_experts``, ``moe_k``, its MoE
layers from ``moe_layer_start_index`` every ``moe_layer_interval``)."""

from mha_cli.core.families import Family

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
)
