"""EXAONE 3.x: Llama's decoder under its own config class (its field names read by the standard reader)."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

FAMILY = Family(
    model_types=("exaone",),
    config_class="ExaoneConfig (transformers 5.24)",
    equal_test=EQUAL_BY_SWEEP,
)
