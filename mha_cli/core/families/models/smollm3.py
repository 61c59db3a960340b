"""SmolLM3: Llama's decoder; every 4th layer skips RoPE."""

from mha_cli.core.families import ANY_VALUE, SWITCHED_SLIDES, Family

FAMILY = Family(
    model_types=("smollm3",),
    config_class="SmolLM3Config (transformers 5.24)",
    window_fields=SWITCHED_SLIDES,
    defaults={"use_sliding_window": False},
    tied_by_default=True,
    names=("smollm3",),
    differences=("SmolLM3's every 4th layer skips RoPE (no_rope_layers); here every layer is rotary",),
    left_unread={"sliding_window": ANY_VALUE, "no_rope_layers": ANY_VALUE, "no_rope_layer_interval": ANY_VALUE},
)
