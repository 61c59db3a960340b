"""Arcee (AFM): Llama's attention, an ungated ReLU-squared MLP (``hidden_act`` relu2)."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

FAMILY = Family(
    model_types=("arcee",),
    config_class="ArceeConfig (transformers 5.24)",
    defaults={"hidden_act": "relu2"},
    names=("arcee",),
    equal_test=EQUAL_BY_SWEEP,
)
