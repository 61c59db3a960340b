"""EXAONE 4: OLMo 2's post-norm block with per-head q/k norms; RoPE on its sliding layers only when it has a window
(``sliding_window_pattern``: every nth layer full attention, without RoPE)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, SLIDES, Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def nope_full_attention(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Exaone4Attention rotates q and k only on sliding layers once the config has a ``sliding_window``: its
    full-attention layers are NoPE (without a window every layer is rotary)."""
    if r.config.get("sliding_window") is not None:
        fields["nope_layers"] = "global"


FAMILY = Family(
    model_types=("exaone4",),
    config_class="Exaone4Config (transformers 5.24)",
    window_fields=SLIDES,
    defaults={"num_key_value_heads": 32, "sliding_window_pattern": 4},
    layout={"norm_placement": "post", "qk_norm": True},
    read_fields=nope_full_attention,
    names=("exaone4", "exaone-4"),
    equal_test="tests/test_family_sweep.py (the decoder sweep: exaone4)",
    left_unread={"sliding_window_pattern": ANY_VALUE},
)
