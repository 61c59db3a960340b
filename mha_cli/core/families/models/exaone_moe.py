"""EXAONE MoE: per-head q/k norms, routed experts."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("exaone_moe",), config_class="ExaoneMoeConfig (transformers 5.24)", layout={"qk_norm": True}
)
