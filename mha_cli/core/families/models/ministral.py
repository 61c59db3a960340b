"""Ministral: Mistral's decoder, its layer_types naming the sliding-window layers."""

from mha_cli.core.families import Family

FAMILY = Family(model_types=("ministral",), config_class="MinistralConfig (transformers 5.24)")
