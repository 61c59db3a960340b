"""GPT-NeoX-Japanese: GPT-NeoX's names in a sequential pre-norm block without biases (but the last layer's attention
output, ``dense_bias``), an MLP ``intermediate_multiple_size`` x d_model wide, rotate-half RoPE; tied head."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.gpt_neox import WEIGHTS as NEOX_WEIGHTS
from mha_cli.core.families.models.gpt_neox import partial_rotation
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _width(r: ConfigReader) -> int:
    """``intermediate_multiple_size`` (default 4) x hidden_size."""
    multiple = r.get("intermediate_multiple_size")
    return int(r.count("hidden size", "hidden_size") * (4 if multiple is None else multiple))


def _rotation(r: ConfigReader, fields: dict[str, Any]) -> None:
    partial_rotation(r, fields, "rotary_pct", "rotary_emb_base")


WEIGHTS = WeightLayout(
    renames=(
        (r"^gpt_neox_japanese\.", "gpt_neox."),
        (r"\.attention\.dense_bias$", ".self_attn.o_proj.bias"),
        *NEOX_WEIGHTS.renames,
    ),
    fused=NEOX_WEIGHTS.fused,
    dropped=NEOX_WEIGHTS.dropped,
)

FAMILY = Family(
    model_types=("gpt_neox_japanese",),
    config_class="GPTNeoXJapaneseConfig (transformers 5.24)",
    layout={"mlp": "plain", "norm": "layernorm", "last_o_bias": True},
    defaults={"rotary_pct": 1.0},
    tied_by_default=True,
    dense_width=_width,
    read_fields=_rotation,
    names=("gpt-neox-japanese", "gpt_neox_japanese"),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
