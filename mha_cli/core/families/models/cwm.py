"""CWM (Code World Model): Llama's decoder with its own sliding-window layout in layer_types."""

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family

FAMILY = Family(
    model_types=("cwm",),
    config_class="CwmConfig (transformers 5.24)",
    window_fields=SLIDES,
    equal_test=EQUAL_BY_SWEEP,
)
