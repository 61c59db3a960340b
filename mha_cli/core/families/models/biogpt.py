"""BioGPT: fairseq's pre-norm block (LayerNorm, a GELU MLP, biases everywhere), learned positions offset by 2 rows,
token embeddings scaled by sqrt(d_model) (``scale_embedding``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.opt import offset_positions
from mha_cli.core.families.models.xglm import FAIRSEQ_BLOCK
from mha_cli.core.schemas import DEFAULT_NORM_EPS
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _biogpt_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Its LayerNorms keep torch's eps (1e-5): transformers' BioGPT does not pass layer_norm_eps to them."""
    offset_positions(r, fields)
    if r.get("scale_embedding"):
        fields["scale_embeddings"] = True
    fields["norm_eps"] = DEFAULT_NORM_EPS


WEIGHTS = WeightLayout(
    renames=(
        (r"^biogpt\.layer_norm\.", "model.norm."),
        (r"^biogpt\.", "model."),
        (r"^output_projection\.", "lm_head."),
        *FAIRSEQ_BLOCK,
    ),
)

FAMILY = Family(
    model_types=("biogpt",),
    config_class="BioGptConfig (transformers 5.24)",
    defaults={"scale_embedding": True},
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True},
    tied_by_default=True,
    learned_positions="max_position_embeddings",
    read_fields=_biogpt_fields,
    names=("biogpt",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
