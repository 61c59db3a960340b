"""Granite-MoE-SWA: Granite MoE's decoder with sliding-window and global layers and attention sinks."""

from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.families.layer_types import class_default_kinds
from mha_cli.core.families.models.granite import read_granite_scalars
from mha_cli.core.families.models.granite_swa import LAYER_ROPE_THETA
from mha_cli.core.families.models.granitemoe import WEIGHTS

FAMILY = Family(
    model_types=("granitemoe_swa",),
    config_class="GraniteMoeSWAConfig (transformers 5.24)",
    window_fields=SLIDES,
    layer_kinds=class_default_kinds(
        lambda i, n: i % 4 == 0, "GraniteMoeSWAConfig", "every fourth layer from 0 full, the others sliding"
    ),
    layout={"attn_sinks": True},
    tied_by_default=True,
    names=("granitemoe-swa", "granitemoe_swa", "granite-moe-swa"),
    read_fields=read_granite_scalars,
    differences=LAYER_ROPE_THETA,
    weights=WEIGHTS,
    left_unread={"layer_rope_theta": ANY_VALUE, "shared_intermediate_size": 0},
)
