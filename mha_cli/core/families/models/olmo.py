"""OLMo (1): Llama's pre-norm block with LayerNorms that carry no weight and no bias (eps 1e-5), q, k and v
clamped to ``clip_qkv`` when set."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.olmoe import clip_qkv

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """``clip_qkv``; OlmoLayerNorm's eps is 1e-5 whatever the config says."""
    clip_qkv(r, fields)
    fields["norm_eps"] = 1e-5


FAMILY = Family(
    model_types=("olmo",),
    config_class="OlmoConfig (transformers 5.24)",
    layout={"norm": "layernorm", "norm_bias": False, "norm_weights": False},
    read_fields=_fields,
    names=("olmo-1b", "olmo-7b"),
    equal_test=EQUAL_BY_SWEEP,
)
