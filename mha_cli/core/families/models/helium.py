"""Helium: Llama's decoder with RoPE on interleaved pairs."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

FAMILY = Family(
    model_types=("helium",),
    config_class="HeliumConfig (transformers 5.24)",
    interleaved_rope=True,
    equal_test=EQUAL_BY_SWEEP,
)
