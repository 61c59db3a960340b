"""Qwen3: per-head RMSNorm of q and k, no biases; Qwen2's max_window_layers."""

from mha_cli.core.families import ANY_VALUE, SWITCHED_SLIDES, Family
from mha_cli.core.families.models.qwen2 import window_layers

FAMILY = Family(
    model_types=("qwen3",),
    config_class="Qwen3Config (transformers 5.24)",
    window_fields=SWITCHED_SLIDES,
    defaults={"max_window_layers": 28, "use_sliding_window": False},
    layout={"qk_norm": True},
    layer_kinds=window_layers,
    equal_test="tests/test_nn_model.py::test_same_logits_as_transformers[qwen3]",
    left_unread={"sliding_window": ANY_VALUE, "max_window_layers": ANY_VALUE},
)
