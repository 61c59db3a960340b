"""GPT-2: learned positions, LayerNorm, a GELU MLP, biases everywhere, fused Conv1D weights; tied head."""

from mha_cli.core.families import Family

LEARNED_POSITIONS = (
    "GPT-2 stores fused Conv1D weights (c_attn, c_fc) under transformer.h.N; here Llama's names and separate q/k/v",
    "GPT-2's MLP uses the tanh approximation of GELU; this one exact GELU",
)
"""What the decoder does not reproduce of GPT-2 (and, for a spec of no known family, of learned positions)."""

FAMILY = Family(
    model_types=("gpt2",),
    config_class="GPT2Config (transformers 5.24)",
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True},
    tied_by_default=True,
    learned_positions="n_positions",
    names=("gpt2", "gpt-2"),
    differences=LEARNED_POSITIONS,
)
