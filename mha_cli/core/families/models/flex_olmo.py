"""FlexOlmo: OLMo 2's block (post-norms, whole-projection q/k norms) with softmax-routed experts on every layer."""

from mha_cli.core.families import Family
from mha_cli.core.families.models.olmo2 import OLMO2_LAYOUT

FAMILY = Family(
    model_types=("flex_olmo",),
    config_class="FlexOlmoConfig (transformers 5.24)",
    defaults={"num_experts": 7, "num_experts_per_tok": 5},
    layout=OLMO2_LAYOUT,
    routing_defaults={"norm_topk_prob": False},
    names=("flexolmo", "flex-olmo"),
    equal_test="tests/test_family_sweep.py (the decoder sweep: flex_olmo)",
)
