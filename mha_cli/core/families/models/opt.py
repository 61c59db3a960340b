"""OPT: fairseq's pre-norm block (LayerNorm, a ReLU MLP ``ffn_dim`` wide, biases everywhere), learned positions
offset by 2 rows; OPT-350m's post-LN blocks (``do_layer_norm_before`` false), not its project_in/out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.xglm import FAIRSEQ_BLOCK
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

POSITION_OFFSET = 2
"""OPT's and BioGPT's learned position table has 2 rows before position 0's (fairseq's padding offset)."""


def offset_positions(r: ConfigReader, fields: dict[str, Any]) -> None:
    """The learned table's rows: max_position_embeddings + 2, position p at row p + 2 (OPT, BioGPT)."""
    fields["position_embeddings"] = r.count("max_position_embeddings", "max_position_embeddings") + POSITION_OFFSET
    fields["position_offset"] = POSITION_OFFSET


def _opt_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    offset_positions(r, fields)
    bias = r.get("enable_bias")
    fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = bias is None or bool(bias)
    if r.get("layer_norm_elementwise_affine") is False:
        r.assume(None, "layer_norm_elementwise_affine false: OPT's LayerNorms without weights are built with them")
    if r.get("do_layer_norm_before") is False:  # OPT-350m: post-LN blocks, no final norm
        fields["norm_placement"] = "post_residual"
        fields["final_norm"] = False
    projected = r.get("word_embed_proj_dim")
    if projected is not None and projected != fields["d_model"]:
        r.assume(
            None,
            f"word_embed_proj_dim {projected} != hidden_size: OPT's project_in/out ({projected} <-> hidden_size) are"
            " not built (weights misstated; such a checkpoint does not load into the decoder)",
        )


# OPT: BART-style names under model.decoder (self_attn_layer_norm, fc1, fc2, final_layer_norm per layer).
WEIGHTS = WeightLayout(
    renames=(
        (r"^model\.decoder\.final_layer_norm\.", "model.norm."),
        (r"^model\.decoder\.", "model."),
        *FAIRSEQ_BLOCK,
    ),
)

FAMILY = Family(
    model_types=("opt",),
    config_class="OPTConfig (transformers 5.24)",
    spellings={"d_ff": ("ffn_dim",)},
    layout={"mlp": "plain", "activation": "relu", "norm": "layernorm"},
    tied_by_default=True,
    learned_positions="max_position_embeddings",
    read_fields=_opt_fields,
    names=("opt-",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={"_remove_final_layer_norm": False, "init_std": ANY_VALUE},
)
