"""Mellum: Llama's decoder with per-head q/k norms."""

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.families.layer_types import class_default_kinds

FAMILY = Family(
    model_types=("mellum",),
    config_class="MellumConfig (transformers 5.24)",
    window_fields=SLIDES,
    layer_kinds=class_default_kinds(lambda i, n: True, "MellumConfig", "every layer full"),
    layout={"qk_norm": True},
    equal_test=EQUAL_BY_SWEEP,
    left_unread={"num_nextn_predict_layers": ANY_VALUE, "mtp_layer_types": ANY_VALUE, "mtp_mlp_layer_types": ANY_VALUE},
)
