"""MiMo-V2-Flash: its sliding-window layers hold twice ``num_key_value_heads``; refused."""

from mha_cli.core.families import SLIDES, Family

FAMILY = Family(
    model_types=("mimo_v2_flash",),
    config_class="MiMoV2FlashConfig (transformers 5.24)",
    window_fields=SLIDES,
    refused="its sliding-window layers hold twice num_key_value_heads (transformers' MiMo-V2-Flash attention), a"
    " per-kind head count mha does not price",
)
