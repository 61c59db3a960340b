"""What ``build_model`` leaves out of a family it builds only by geometry (for the verify report).

``build_model`` reproduces the Llama, Mistral, Qwen2/Qwen3 and DeepSeek-V2/V3 decoders exactly (same state-dict
names, same logits as transformers). For other families it builds the same geometry (heads, head
width, windows, MLP sizes, norms per layer, biases, tying), so weights and cache bytes are right,
but some of the family's arithmetic or parameter names differ. ``omitted_details`` lists those
differences, one sentence each.

The family is read from the spec's ``name`` and ``source`` (a preset's name, or "model_type X" that
``hf_import`` writes), and from the spec's structure where that says enough (learned positions,
a parallel block, post-norms).
"""

from __future__ import annotations

from mha_cli.core.schemas import ModelSpec

_GEMMA = [
    "Gemma's RMSNorm multiplies by (1 + weight); this one by weight",
    "Gemma scales the token embeddings by sqrt(d_model); not here",
    "Gemma's MLP is GeGLU (tanh GELU); this one is SwiGLU",
]
_GEMMA2 = [
    "Gemma 2's soft-capping of attention logits (50) and of the final logits (30)",
    "Gemma 2's softmax scale query_pre_attn_scalar^-0.5; this one uses head_dim^-0.5",
]
_GEMMA3 = [
    "Gemma 3's local layers use their own RoPE theta (rope_local_base_freq 10,000); here every layer uses the spec's",
    "Gemma 3's softmax scale query_pre_attn_scalar^-0.5; this one uses head_dim^-0.5",
]
_PHI3 = [
    "Phi-3 stores fused qkv_proj and gate_up_proj weights; here q/k/v and gate/up are separate (same sizes)",
    "Phi-3's longrope scaling (128k variants) is not modelled",
]
_GPT_OSS = [
    "gpt-oss's attention sinks (a learned logit per head in every softmax)",
    "gpt-oss's clamped SwiGLU (alpha 1.702, (up + 1) gating)",
]
_DEEPSEEK_V3 = ["DeepSeek-V3's multi-token-prediction module (not counted by count_params either)"]
_STARCODER2 = [
    "StarCoder2's MLP is c_fc / c_proj with tanh GELU and its norms LayerNorm, under its own names; here"
    " Llama's names and exact GELU"
]
_LLAMA4 = [
    "Llama 4's chunked attention (attention_chunk_size tokens on its RoPE layers): built attending to every earlier"
    " token, although the cache is priced at one chunk",
    "Llama 4's every 4th layer skips RoPE (NoPE) and tunes its attention temperature; here every layer is rotary",
    "Llama 4's L2 norm of q and k (use_qk_norm) on its RoPE layers",
    "Llama 4's MoE: a sigmoid router that scales each token before its expert, a shared expert beside the routed"
    " ones, expert weights stored fused (gate_up_proj); here softmax top-k routing and separate matrices",
]
_SMOLLM3 = ["SmolLM3's every 4th layer skips RoPE (no_rope_layers); here every layer is rotary"]
_OLMO2 = [
    "OLMo 2 normalises each sublayer's output inside the residual (post-norm); this one normalises its input",
    "OLMo 2's q/k norms span the whole projection; these are per head",
]
_COHERE2 = [
    "Cohere's LayerNorm has no bias; this one has one",
    "Cohere applies RoPE to interleaved pairs and not at all on its global layers (NoPE); here rotate-half on every"
    " layer",
    "Cohere multiplies the final logits by logit_scale",
]
_FALCON = ["Falcon stores a fused query_key_value weight under transformer.h.N; here Llama's names and separate q/k/v"]
_LEARNED_POSITIONS = [
    "GPT-2 stores fused Conv1D weights (c_attn, c_fc) under transformer.h.N; here Llama's names and separate q/k/v",
    "GPT-2's MLP uses the tanh approximation of GELU; this one exact GELU",
]


_ARCEE = ["Arcee's MLP is up -> ReLU squared -> down, without a gate; this one is SiLU-gated or exact GELU"]
_GRANITE = [
    "Granite's multipliers: embedding_multiplier on the embeddings, attention_multiplier as the softmax scale,"
    " residual_multiplier on each branch, the logits divided by logits_scaling; none here"
]
_MINICPM3 = [
    "MiniCPM3 scales the embeddings by scale_emb, each residual branch by scale_depth / sqrt(n_layers) and the final"
    " hidden states by dim_model_base / hidden_size; none here"
]

_BY_NAME: tuple[tuple[tuple[str, ...], list[str]], ...] = (
    (("arcee",), _ARCEE),
    (("granite",), _GRANITE),
    (("minicpm3",), _MINICPM3),
    (("phi3", "phi-3"), _PHI3),
    (("gpt-oss",), _GPT_OSS),
    (("deepseek-v3",), _DEEPSEEK_V3),
    (("llama4", "llama-4"), _LLAMA4),
    (("starcoder2",), _STARCODER2),
    (("smollm3",), _SMOLLM3),
    (("olmo2", "olmo-2"), _OLMO2),
)
"""Families recognised by name alone (a spelling in the spec's name or source), and what the decoder omits of each."""


def _family_text(spec: ModelSpec) -> str:
    return f"{spec.name} {spec.source or ''}".lower().replace("_", "-")


def omitted_details(spec: ModelSpec) -> list[str]:
    """Family details of ``spec`` that the built decoder does not reproduce (empty for Llama/Mistral/Qwen, DeepSeek-V2)."""
    text = _family_text(spec)
    details: list[str] = []
    if "gemma" in text or spec.n_norms_per_layer == 4:
        details += _GEMMA
        if "gemma3" in text or "gemma-3" in text:
            details += _GEMMA3
        elif "gemma2" in text or "gemma-2" in text:
            details += _GEMMA2
    for names, family_details in _BY_NAME:
        if any(name in text for name in names):
            details += family_details
    if "cohere" in text or "command-r" in text:
        details += _COHERE2
    elif "falcon" in text or spec.n_norms_per_layer == 1:
        details += _FALCON
    if spec.position_embeddings:
        details += _LEARNED_POSITIONS
    return details
