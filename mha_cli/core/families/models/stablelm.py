"""StableLM: LayerNorm (with bias) before attention and MLP; ``use_qkv_bias`` on q, k, v (StableLM-2-1.6B)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def qkv_bias(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("use_qkv_bias") is not None:
        fields["qkv_bias"] = bool(r.get("use_qkv_bias"))


FAMILY = Family(
    model_types=("stablelm",),
    config_class="StableLmConfig (transformers 5.24)",
    layout={"norm": "layernorm"},
    read_fields=qkv_bias,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={"qk_layernorm": False, "use_parallel_residual": False},  # StableLM-2-12B's: refused, not built
)
