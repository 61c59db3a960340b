"""Granite-SWA: Granite's decoder with sliding-window and global layers (``layer_types``) and attention sinks."""

from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.families.layer_types import class_default_kinds
from mha_cli.core.families.models.granite import read_granite_scalars

LAYER_ROPE_THETA = (
    "Granite-SWA's layer_rope_theta (a RoPE base per layer, 0 for none): every layer here rotates by rope_theta",
)
"""What the decoder does not read of Granite-SWA's configuration (the default: every layer at rope_theta)."""

FAMILY = Family(
    model_types=("granite_swa",),
    config_class="GraniteSWAConfig (transformers 5.24)",
    window_fields=SLIDES,
    layer_kinds=class_default_kinds(
        lambda i, n: i % 4 == 0, "GraniteSWAConfig", "every fourth layer from 0 full, the others sliding"
    ),
    layout={"attn_sinks": True},
    tied_by_default=True,
    names=("granite-swa", "granite_swa"),
    read_fields=read_granite_scalars,
    differences=LAYER_ROPE_THETA,
    left_unread={"layer_rope_theta": ANY_VALUE},  # both listed in differences,
)
