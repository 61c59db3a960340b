"""ERNIE 4.5: Llama's decoder with RoPE on interleaved pairs; tied embeddings; ``use_bias`` on every projection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def use_bias(r: ConfigReader, fields: dict[str, Any]) -> None:
    """ERNIE's ``use_bias`` puts biases on q, k, v, o and the MLP's three projections."""
    if r.get("use_bias") is not None:
        fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = bool(r.get("use_bias"))


FAMILY = Family(
    model_types=("ernie4_5",),
    config_class="Ernie4_5Config (transformers 5.24)",
    tied_by_default=True,
    interleaved_rope=True,
    read_fields=use_bias,
    equal_test=EQUAL_BY_SWEEP,
)
