"""Qwen3.5 (dense): Qwen3-Next's Gated DeltaNet : gated attention layout without experts."""

from mha_cli.core.families import Family
from mha_cli.core.families.models.qwen3_next import GATED_ATTENTION, GATED_DELTANET_DEFAULTS, every_nth_attention
from mha_cli.core.families.state_readers import gated_deltanet_state

FAMILY = Family(
    model_types=("qwen3_5", "qwen3_5_text"),
    config_class="Qwen3_5TextConfig (transformers 5.24)",
    defaults=GATED_DELTANET_DEFAULTS,
    layout={"qk_norm": True},
    layer_kinds=every_nth_attention,
    fixed_state="Gated DeltaNet",
    state=gated_deltanet_state,
    differences=GATED_ATTENTION,
)
