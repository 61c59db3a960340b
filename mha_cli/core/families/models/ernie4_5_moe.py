"""ERNIE 4.5 MoE: ERNIE 4.5's attention with routed and shared experts."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("ernie4_5_moe",),
    config_class="Ernie4_5_MoeConfig (transformers 5.24)",
    tied_by_default=True,
    interleaved_rope=True,
)
