"""Helium: Llama's decoder with RoPE on interleaved pairs."""

from mha_cli.core.families import Family

FAMILY = Family(model_types=("helium",), config_class="HeliumConfig (transformers 5.24)", interleaved_rope=True)
