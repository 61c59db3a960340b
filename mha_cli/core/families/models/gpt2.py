"""GPT-2: learned positions, LayerNorm, a GELU MLP, biases everywhere, fused Conv1D weights; tied head."""

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout, split_qkv

LEARNED_POSITIONS: tuple[str, ...] = ()
"""What the decoder does not reproduce of GPT-2 (and, for a spec of no known family, of learned positions): nothing
since its tanh GELU (``activation_function`` gelu_new) is read into ``ModelSpec.activation``."""

GPT2_TREE = (
    (r"^transformer\.wte\.", "model.embed_tokens."),
    (r"^transformer\.wpe\.", "model.embed_positions."),
    (r"^transformer\.ln_f\.", "model.norm."),
    (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
    (r"\.ln_1\.", ".input_layernorm."),
    (r"\.ln_2\.", ".post_attention_layernorm."),
)
"""GPT-2's module tree (embeddings, blocks, their two LayerNorms) under the decoder's names; GPT-Neo shares it."""

GPT2_BLOCK = (
    (r"\.attn\.c_attn\.", ".self_attn.qkv_proj."),
    (r"\.attn\.c_proj\.", ".self_attn.o_proj."),
    (r"\.mlp\.c_fc\.", ".mlp.up_proj."),
    (r"\.mlp\.c_proj\.", ".mlp.down_proj."),
)
"""GPT-2's block (fused c_attn, its projections, the MLP's c_fc and c_proj) under the decoder's names; GPT-BigCode and
GPT-1 share it."""

# GPT-2 (and GPT-SW3, its config class): Conv1D weights (in, out); c_attn holds q, k, v one after the other.
WEIGHTS = WeightLayout(
    renames=(*GPT2_TREE, *GPT2_BLOCK),
    fused=(split_qkv("qkv"),),
    transposed=(r"\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$",),
    dropped=(r"\.attn\.(bias|masked_bias)$",),
)

FAMILY = Family(
    model_types=("gpt2",),
    config_class="GPT2Config (transformers 5.24)",
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True},
    tied_by_default=True,
    learned_positions="n_positions",
    names=("gpt2", "gpt-2"),
    differences=LEARNED_POSITIONS,
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": ANY_VALUE,
    },
)
