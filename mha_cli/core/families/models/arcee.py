"""Arcee (AFM): Llama's attention, an ungated ReLU-squared MLP."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("arcee",),
    config_class="ArceeConfig (transformers 5.24)",
    names=("arcee",),
    differences=("Arcee's MLP is up -> ReLU squared -> down, without a gate; this one is SiLU-gated or exact GELU",),
)
