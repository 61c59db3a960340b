"""Qwen2 / Qwen2.5: q/k/v biases; with a sliding window, only the layers from ``max_window_layers`` on slide."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.families import ANY_VALUE, SWITCHED_SLIDES, Family
from mha_cli.core.families.layer_types import sliding_window

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def window_layers(r: ConfigReader, n_layers: int) -> list[LayerKind] | None:
    """Qwen's layers below ``max_window_layers`` attend globally, the rest slide (Qwen2Config, Qwen3Config)."""
    if not sliding_window(r):
        return None
    first_sliding = min(n_layers, r.count("max_window_layers", "max_window_layers", zero=True))  # 0: all slide
    return ["global"] * first_sliding + ["local"] * (n_layers - first_sliding)


FAMILY = Family(
    model_types=("qwen2",),
    config_class="Qwen2Config (transformers 5.24)",
    window_fields=SWITCHED_SLIDES,
    defaults={"max_window_layers": 28, "use_sliding_window": False},
    layout={"qkv_bias": True},
    layer_kinds=window_layers,
    equal_test="tests/test_nn_model.py::test_same_logits_as_transformers[qwen2]",
    left_unread={"sliding_window": ANY_VALUE, "max_window_layers": ANY_VALUE},
)
