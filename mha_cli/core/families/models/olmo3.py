"""OLMo 3: OLMo 2's block (post-norms, whole-projection q/k norms) with sliding-window layers (``layer_types``)."""

from mha_cli.core.families import SLIDES, Family
from mha_cli.core.families.models.olmo2 import OLMO2_LAYOUT

FAMILY = Family(
    model_types=("olmo3",),
    config_class="Olmo3Config (transformers 5.24)",
    window_fields=SLIDES,
    defaults={"sliding_window": 4096},
    layout=OLMO2_LAYOUT,
    local_cycle=("local", "local", "local", "global"),
    local_cycle_note="layer_types absent: three sliding-window layers, then a full-attention one (the olmo3 default)",
    names=("olmo3", "olmo-3"),
    differences=(
        "OLMo 3 scales RoPE (rope_parameters) on its full-attention layers only, its sliding layers unscaled; here"
        " every layer takes the full-attention layers' RoPE",
    ),
)
