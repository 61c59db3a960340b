"""X-MOD run as a causal LM: RoBERTa with a bottleneck adapter per language after every layer's MLP, picked by the
input's language; refused (those adapters are not counted or built)."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("xmod",),
    config_class="XmodConfig (transformers 5.24)",
    refused="its per-language adapters (a bottleneck after every layer's MLP, picked by language) are not counted or"
    " built",
)
