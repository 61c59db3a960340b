"""XGLM: fairseq's block (LayerNorm, a GELU MLP, biases everywhere), sinusoidal positions, scaled embeddings."""

from mha_cli.core.families import Family

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
)
