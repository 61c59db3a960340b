"""CWM (Code World Model): Llama's decoder with its own sliding-window layout in layer_types."""

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.families.layer_types import class_default_kinds

FAMILY = Family(
    model_types=("cwm",),
    config_class="CwmConfig (transformers 5.24)",
    window_fields=SLIDES,
    layer_kinds=class_default_kinds(
        lambda i, n: i % 4 == 0, "CwmConfig", "every fourth layer from 0 full, the others sliding"
    ),
    equal_test=EQUAL_BY_SWEEP,
)
