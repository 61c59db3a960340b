"""XGLM: fairseq's block (LayerNorm, a GELU MLP, biases everywhere), sinusoidal positions, scaled embeddings."""

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.weight_layout import WeightLayout

FAIRSEQ_BLOCK = (
    (r"\.self_attn\.out_proj\.", ".self_attn.o_proj."),
    (r"\.self_attn_layer_norm\.", ".input_layernorm."),
    (r"\.final_layer_norm\.", ".post_attention_layernorm."),
    (r"\.fc1\.", ".mlp.up_proj."),
    (r"\.fc2\.", ".mlp.down_proj."),
)
"""fairseq's (BART-style) block names under the decoder's: self_attn_layer_norm, fc1, fc2 and final_layer_norm per
layer; OPT and BioGPT share them."""

# XGLM: the fairseq block; layer_norm at the end.
WEIGHTS = WeightLayout(
    renames=((r"^model\.layer_norm\.", "model.norm."), *FAIRSEQ_BLOCK),
    dropped=(r"^model\.embed_positions\.weights$",),
)

FAMILY = Family(
    model_types=("xglm",),
    config_class="XGLMConfig (transformers 5.24)",
    spellings={"heads": ("attention_heads",), "d_ff": ("ffn_dim",)},
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True},
    tied_by_default=True,
    names=("xglm",),
    differences=(
        "XGLM adds sinusoidal position embeddings and scales the token embeddings by sqrt(d_model); here RoPE",
    ),
    weights=WEIGHTS,
    left_unread={"init_std": ANY_VALUE, "scale_embedding": ANY_VALUE},
)
