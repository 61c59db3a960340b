"""Ministral: Mistral's decoder, its layer_types naming the sliding-window layers."""

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family

FAMILY = Family(
    model_types=("ministral",),
    config_class="MinistralConfig (transformers 5.24)",
    window_fields=SLIDES,
    equal_test=EQUAL_BY_SWEEP,
)
