"""StableLM: LayerNorm (with bias) before attention and MLP."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

FAMILY = Family(
    model_types=("stablelm",),
    config_class="StableLmConfig (transformers 5.24)",
    layout={"norm": "layernorm"},
    equal_test=EQUAL_BY_SWEEP,
)
