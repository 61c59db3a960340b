"""Hunyuan dense (v1): Llama's decoder with per-head q/k norms."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("hunyuan_v1_dense",), config_class="HunYuanDenseV1Config (transformers 5.24)", layout={"qk_norm": True}
)
