"""Ministral 3: Mistral's decoder under its own config class."""

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family

FAMILY = Family(
    model_types=("ministral3",),
    config_class="Ministral3Config (transformers 5.24)",
    window_fields=SLIDES,
    equal_test=EQUAL_BY_SWEEP,
)
