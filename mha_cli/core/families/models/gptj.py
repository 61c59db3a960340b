"""GPT-J: one LayerNorm before a parallel attention + MLP block, interleaved RoPE on ``rotary_dim`` values of each
head, no attention biases, an LM head with a bias."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def rotary_dim_rotation(r: ConfigReader, fields: dict[str, Any]) -> None:
    """``rotary_dim``: the values of each head that rotate (interleaved pairs), the rest pass; absent or null, all
    of them (GPT-J, CodeGen)."""
    rotary_dim = r.get("rotary_dim")
    head_dim = fields.get("head_dim") or fields["d_model"] // fields["n_heads"]
    rope = dict(fields.get("rope") or {})
    rope["partial_rotary_factor"] = (rotary_dim / head_dim) if rotary_dim else 1.0
    fields["rope"] = rope


GPTJ_TREE = (
    (r"^transformer\.wte\.", "model.embed_tokens."),
    (r"^transformer\.ln_f\.", "model.norm."),
    (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
    (r"\.ln_1\.", ".input_layernorm."),
    (r"\.attn\.out_proj\.", ".self_attn.o_proj."),
    (r"\.mlp\.fc_in\.", ".mlp.up_proj."),
    (r"\.mlp\.fc_out\.", ".mlp.down_proj."),
)
"""GPT-J's module tree under the decoder's names; CodeGen shares it (its q/k/v fused otherwise)."""

WEIGHTS = WeightLayout(
    renames=(*GPTJ_TREE, (r"\.attn\.(q|k|v)_proj\.", r".self_attn.\1_proj.")),
    dropped=(r"\.attn\.(bias|masked_bias|embed_positions)$",),
)

FAMILY = Family(
    model_types=("gptj",),
    config_class="GPTJConfig (transformers 5.24)",
    defaults={"rotary_dim": 64},
    spellings={"d_ff": ("n_inner",)},
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "n_norms_per_layer": 1, "lm_head_bias": True},
    interleaved_rope=True,
    read_fields=rotary_dim_rotation,
    names=("gpt-j", "gptj"),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
