"""CTRL: fixed sinusoidal positions, token embeddings scaled by sqrt(d_model), pre-norm LayerNorm blocks, a ReLU MLP
``dff`` wide, biases everywhere, a tied head with a bias of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

BLOCK_EPS = 1e-6
"""The eps of CTRL's block LayerNorms, fixed in its modeling code (layer_norm_epsilon sets the final norm's only)."""


def _ctrl_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    fields.pop("rope", None)
    r.assumptions[:] = [note for note in r.assumptions if not note.startswith("rope_theta absent")]
    fields["sinusoidal_positions"] = True
    eps = r.get("layer_norm_epsilon")
    if eps is not None and float(eps) != BLOCK_EPS:
        r.assume(None, f"layer_norm_epsilon {eps}: CTRL's final LayerNorm's, built with its blocks' {BLOCK_EPS}")
    fields["norm_eps"] = BLOCK_EPS


WEIGHTS = WeightLayout(
    renames=(
        (r"^transformer\.w\.", "model.embed_tokens."),
        (r"^transformer\.layernorm\.", "model.norm."),
        (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
        (r"\.layernorm1\.", ".input_layernorm."),
        (r"\.layernorm2\.", ".post_attention_layernorm."),
        (r"\.multi_head_attention\.W(q|k|v)\.", r".self_attn.\1_proj."),
        (r"\.multi_head_attention\.dense\.", ".self_attn.o_proj."),
        (r"\.ffn\.0\.", ".mlp.up_proj."),
        (r"\.ffn\.2\.", ".mlp.down_proj."),
    ),
)

LAYOUT = {
    "mlp": "plain", "mlp_bias": True, "activation": "relu", "norm": "layernorm", "qkv_bias": True,
    "o_bias": True, "scale_embeddings": True, "lm_head_bias": True,
}  # fmt: skip

FAMILY = Family(
    model_types=("ctrl",),
    config_class="CTRLConfig (transformers 5.24)",
    spellings={"d_ff": ("dff",)},
    layout=LAYOUT,
    tied_by_default=True,
    read_fields=_ctrl_fields,
    names=("ctrl",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
