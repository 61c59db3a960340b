"""OLMo 2: post-norms inside the residual, q/k norms over the whole projection."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("olmo2",),
    config_class="Olmo2Config (transformers 5.24)",
    names=("olmo2", "olmo-2"),
    differences=(
        "OLMo 2 normalises each sublayer's output inside the residual (post-norm); this one normalises its input",
        "OLMo 2's q/k norms span the whole projection; these are per head",
    ),
)
