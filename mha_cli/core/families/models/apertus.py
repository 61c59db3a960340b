"""Apertus: Llama's attention with per-head q/k norms, its norms named attention_layernorm and
feedforward_layernorm, a plain MLP with the xIELU activation (two learned scalars a layer)."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout

FAMILY = Family(
    model_types=("apertus",),
    config_class="ApertusConfig (transformers 5.24)",
    defaults={"hidden_act": "xielu"},
    layout={"qk_norm": True},
    names=("apertus",),
    equal_test=EQUAL_BY_SWEEP,
    weights=WeightLayout(
        renames=(
            (r"\.attention_layernorm\.", ".input_layernorm."),
            (r"\.feedforward_layernorm\.", ".post_attention_layernorm."),
        ),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
)
