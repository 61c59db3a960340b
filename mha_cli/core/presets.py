"""Public models as plain data: the geometry that sizes their KV cache and weights.

Each entry is the model's published ``config.json`` (Hugging Face repo named in ``source``)
restated in our vocabulary, its ``family`` the registry module (``core.families``) whose layout (MLP, norms,
biases) it takes and whose decoder differences ``build_model`` lists; parameter counts in the comments are what ``count_params`` gives
(dense totals exactly as published, MoE totals and active counts within 1-3%). Vision towers,
multi-token-prediction heads and attention sinks are not counted.

The 2025-26 families below price their cache per layer kind (chunked, linear with a fixed state, shared K/V,
indexer key). Their parameter counts are approximate: a linear-attention or state-space layer's weights are
counted as the attention layer it replaces, and per-layer extras (Gemma-3n's AltUp/LAuReL, Llama-4's shared
expert) are left out. Their caches are pinned in tests/test_kv_zoo.py; the fixed-state bytes in the comments
are transformers' convention (``--state-convention transformers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import family as family_of
from mha_cli.core.model_migration import nest_flat_fields
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.suggest import did_you_mean_model

_LLAMA3_VOCAB = 128256
_MINIMAX_ALPHA = 3.5565588200778455
"""MiniMax-Text-01's residual factor (its ``layernorm_*_alpha``; every beta is 1)."""


def _llama3_rope(factor: float) -> dict[str, Any]:
    """Llama 3.1/3.2's RoPE: theta 500,000 and llama3 scaling from an 8,192-token pre-training."""
    return dict(
        theta=500000.0,
        scaling=dict(type="llama3", factor=factor, low_freq_factor=1.0, high_freq_factor=4.0,
                     original_max_position_embeddings=8192),
    )  # fmt: skip


def _deepseek_yarn(mscale: float) -> dict[str, Any]:
    """DeepSeek-V2/V3's RoPE: YaRN x40 from 4,096 tokens, mscale = mscale_all_dim."""
    return dict(
        theta=10000.0,
        scaling=dict(type="yarn", factor=40.0, original_max_position_embeddings=4096, beta_fast=32.0,
                     beta_slow=1.0, mscale=mscale, mscale_all_dim=mscale),
    )  # fmt: skip


PRESET_DATA: dict[str, dict[str, Any]] = {
    # 124M. MHA, learned positions, LayerNorm, GELU MLP, biases everywhere, tied head.
    "gpt2": dict(
        family="gpt2",
        source="openai-community/gpt2 config.json",
        context_length=1024,
        d_model=768,
        n_layers=12,
        attention=dict(n_heads=12),
        block=dict(d_ff=3072, activation="gelu_tanh"),
        embeddings=dict(vocab_size=50257, tied=True, positions=1024),
    ),
    # 6.74B. MHA.
    "llama-2-7b": dict(
        family="llama",
        source="meta-llama/Llama-2-7b-hf config.json",
        context_length=4096,
        d_model=4096,
        n_layers=32,
        attention=dict(n_heads=32),
        block=dict(d_ff=11008),
        embeddings=dict(vocab_size=32000),
    ),
    # 13.0B. MHA 40 heads of 128: 819,200 B/token in bf16.
    "llama-2-13b": dict(
        family="llama",
        source="meta-llama/Llama-2-13b-hf config.json",
        context_length=4096,
        d_model=5120,
        n_layers=40,
        attention=dict(n_heads=40),
        block=dict(d_ff=13824),
        embeddings=dict(vocab_size=32000),
    ),
    # 69.0B. GQA 64 / 8: 327,680 B/token in bf16.
    "llama-2-70b": dict(
        family="llama",
        source="meta-llama/Llama-2-70b-hf config.json",
        context_length=4096,
        d_model=8192,
        n_layers=80,
        attention=dict(n_heads=64, n_kv_heads=8),
        block=dict(d_ff=28672),
        embeddings=dict(vocab_size=32000),
    ),
    # 8.03B. GQA 32 query / 8 KV heads: 131,072 B/token in bf16.
    "llama-3-8b": dict(
        family="llama",
        source="meta-llama/Meta-Llama-3-8B config.json",
        context_length=8192,
        d_model=4096,
        n_layers=32,
        attention=dict(n_heads=32, n_kv_heads=8, rope=dict(theta=500000.0)),
        block=dict(d_ff=14336),
        embeddings=dict(vocab_size=_LLAMA3_VOCAB),
    ),
    # 70.6B. GQA 64 / 8: 327,680 B/token in bf16.
    "llama-3-70b": dict(
        family="llama",
        source="meta-llama/Meta-Llama-3-70B config.json",
        context_length=8192,
        d_model=8192,
        n_layers=80,
        attention=dict(n_heads=64, n_kv_heads=8, rope=dict(theta=500000.0)),
        block=dict(d_ff=28672),
        embeddings=dict(vocab_size=_LLAMA3_VOCAB),
    ),
    # 8.03B. Same geometry as Llama-3-8B, 128K context through RoPE scaling.
    "llama-3.1-8b": dict(
        family="llama",
        source="meta-llama/Llama-3.1-8B config.json",
        context_length=131072,
        d_model=4096,
        n_layers=32,
        attention=dict(n_heads=32, n_kv_heads=8, rope=_llama3_rope(8.0)),
        block=dict(d_ff=14336),
        embeddings=dict(vocab_size=_LLAMA3_VOCAB),
    ),
    # 70.6B. Same geometry as Llama-3-70B, 128K context through RoPE scaling.
    "llama-3.1-70b": dict(
        family="llama",
        source="meta-llama/Llama-3.1-70B config.json",
        context_length=131072,
        d_model=8192,
        n_layers=80,
        attention=dict(n_heads=64, n_kv_heads=8, rope=_llama3_rope(8.0)),
        block=dict(d_ff=28672),
        embeddings=dict(vocab_size=_LLAMA3_VOCAB),
    ),
    # 405.9B. GQA 128 / 8.
    "llama-3.1-405b": dict(
        family="llama",
        source="meta-llama/Llama-3.1-405B config.json",
        context_length=131072,
        d_model=16384,
        n_layers=126,
        attention=dict(n_heads=128, n_kv_heads=8, rope=_llama3_rope(8.0)),
        block=dict(d_ff=53248),
        embeddings=dict(vocab_size=_LLAMA3_VOCAB),
    ),
    # 1.24B. GQA 32 / 8, head_dim 64, tied embeddings.
    "llama-3.2-1b": dict(
        family="llama",
        source="meta-llama/Llama-3.2-1B config.json",
        context_length=131072,
        d_model=2048,
        n_layers=16,
        attention=dict(n_heads=32, n_kv_heads=8, head_dim=64, rope=_llama3_rope(32.0)),
        block=dict(d_ff=8192),
        embeddings=dict(vocab_size=_LLAMA3_VOCAB, tied=True),
    ),
    # 7.24B. GQA 32 / 8 with a 4,096-token sliding window on every layer.
    "mistral-7b-v0.1": dict(
        family="mistral",
        source="mistralai/Mistral-7B-v0.1 config.json",
        context_length=32768,
        d_model=4096,
        n_layers=32,
        attention=dict(n_heads=32, n_kv_heads=8),
        layers=dict(sliding_window=4096),
        block=dict(d_ff=14336),
        embeddings=dict(vocab_size=32000),
    ),
    # 12.2B. head_dim 128 explicit although 5120 / 32 = 160.
    "mistral-nemo-12b": dict(
        family="mistral",
        source="mistralai/Mistral-Nemo-Base-2407 config.json",
        context_length=128000,
        d_model=5120,
        n_layers=40,
        attention=dict(n_heads=32, n_kv_heads=8, head_dim=128, rope=dict(theta=1e6)),
        block=dict(d_ff=14336),
        embeddings=dict(vocab_size=131072),
    ),
    # 3.82B. MHA; its config.json declares a 2,047-token sliding window on every layer.
    "phi-3-mini": dict(
        family="phi3",
        source="microsoft/Phi-3-mini-4k-instruct config.json",
        context_length=4096,
        d_model=3072,
        n_layers=32,
        attention=dict(n_heads=32),
        layers=dict(sliding_window=2047),
        block=dict(d_ff=8192),
        embeddings=dict(vocab_size=32064),
    ),
    # 7.62B. GQA 28 / 4, biases on q, k, v.
    "qwen2.5-7b": dict(
        family="qwen2",
        source="Qwen/Qwen2.5-7B config.json",
        context_length=131072,
        d_model=3584,
        n_layers=28,
        attention=dict(n_heads=28, n_kv_heads=4, rope=dict(theta=1e6)),
        block=dict(d_ff=18944, norm_eps=1e-6),
        embeddings=dict(vocab_size=152064),
    ),
    # 0.6B. head_dim 128 explicit although 1024 / 16 = 64; QK-norm; tied.
    "qwen3-0.6b": dict(
        family="qwen3",
        source="Qwen/Qwen3-0.6B config.json",
        context_length=40960,
        d_model=1024,
        n_layers=28,
        attention=dict(n_heads=16, n_kv_heads=8, head_dim=128, rope=dict(theta=1e6)),
        block=dict(d_ff=3072, norm_eps=1e-6),
        embeddings=dict(vocab_size=151936, tied=True),
    ),
    # 8.19B. GQA 32 / 8, head_dim 128, QK-norm.
    "qwen3-8b": dict(
        family="qwen3",
        source="Qwen/Qwen3-8B config.json",
        context_length=40960,
        d_model=4096,
        n_layers=36,
        attention=dict(n_heads=32, n_kv_heads=8, head_dim=128, rope=dict(theta=1e6)),
        block=dict(d_ff=12288, norm_eps=1e-6),
        embeddings=dict(vocab_size=151936),
    ),
    # 9.24B. head_dim 256; even layers use a 4,096-token window: 344,064 B/token in bf16.
    "gemma-2-9b": dict(
        family="gemma2",
        source="google/gemma-2-9b config.json",
        context_length=8192,
        d_model=3584,
        n_layers=42,
        attention=dict(n_heads=16, n_kv_heads=8, head_dim=256, scale=256**-0.5, logit_softcap=50.0),
        layers=dict(sliding_window=4096, pattern=["local", "global"]),
        block=dict(d_ff=14336, norm_eps=1e-6, activation="gelu_tanh"),
        embeddings=dict(vocab_size=256000, tied=True, final_logit_softcap=30.0),
    ),
    # 27.0B text model (vision tower not counted: gemma-3-27b-it, below, is the checkpoint with it). 5 local
    # (1,024-token window) : 1 global.
    "gemma-3-27b": dict(
        family="gemma3",
        source="google/gemma-3-27b-pt config.json (text_config)",
        context_length=131072,
        d_model=5376,
        n_layers=62,
        attention=dict(
            n_heads=32,
            n_kv_heads=16,
            head_dim=128,
            rope=dict(theta=1e6, scaling=dict(type="linear", factor=8.0)),
            scale=168**-0.5,
            rope_local=dict(theta=10000.0),
        ),
        layers=dict(sliding_window=1024, pattern=["local"] * 5 + ["global"]),
        block=dict(d_ff=21504, norm_eps=1e-6, activation="gelu_tanh"),
        embeddings=dict(vocab_size=262208, tied=True),
    ),
    # 6.92B. MQA: 71 query heads share one KV head; parallel attention/MLP with one LayerNorm.
    "falcon-7b": dict(
        family="falcon",
        source="tiiuae/falcon-7b config.json",
        context_length=2048,
        d_model=4544,
        n_layers=32,
        attention=dict(n_heads=71, n_kv_heads=1, head_dim=64),
        block=dict(d_ff=18176),
        embeddings=dict(vocab_size=65024, tied=True),
    ),
    # 20.9B total, 3.6B active. GQA 64 / 8, head_dim 64, alternating 128-token window, 32 experts top-4.
    "gpt-oss-20b": dict(
        family="gpt_oss",
        source="openai/gpt-oss-20b config.json",
        context_length=131072,
        d_model=2880,
        n_layers=24,
        attention=dict(
            n_heads=64,
            n_kv_heads=8,
            head_dim=64,
            rope=dict(
                theta=150000.0,
                scaling=dict(
                    type="yarn",
                    factor=32.0,
                    original_max_position_embeddings=4096,
                    beta_fast=32.0,
                    beta_slow=1.0,
                    truncate=False,
                ),
            ),
        ),
        layers=dict(sliding_window=128, pattern=["local", "global"]),
        block=dict(
            d_ff=2880,
            moe=dict(
                n_experts=32, n_active_experts=4, d_ff_expert=2880, expert_bias=True, router_bias=True, swiglu_limit=7.0
            ),
        ),
        embeddings=dict(vocab_size=201088),
    ),
    # 30.5B total, 3.3B active. GQA 32 / 4, head_dim 128, QK-norm, 128 experts of 768 top-8, every layer MoE.
    "qwen3-30b-a3b": dict(
        family="qwen3_moe",
        source="Qwen/Qwen3-30B-A3B config.json",
        context_length=40960,
        d_model=2048,
        n_layers=48,
        attention=dict(n_heads=32, n_kv_heads=4, head_dim=128, rope=dict(theta=1e6)),
        block=dict(d_ff=6144, moe=dict(n_experts=128, n_active_experts=8, d_ff_expert=768), norm_eps=1e-6),
        embeddings=dict(vocab_size=151936),
    ),
    # 235.1B total, 22.2B active. GQA 64 / 4, head_dim 128, 128 experts of 1,536 top-8; the 2507 release's 262,144
    # tokens and RoPE base 5e6 (the first Qwen3-235B-A22B has 40,960 and 1e6: not this preset).
    "qwen3-235b-a22b-2507": dict(
        family="qwen3_moe",
        source="Qwen/Qwen3-235B-A22B-Instruct-2507 config.json",
        context_length=262144,
        d_model=4096,
        n_layers=94,
        attention=dict(n_heads=64, n_kv_heads=4, head_dim=128, rope=dict(theta=5e6)),
        block=dict(d_ff=12288, moe=dict(n_experts=128, n_active_experts=8, d_ff_expert=1536), norm_eps=1e-6),
        embeddings=dict(vocab_size=151936),
    ),
    # 46.7B total, 12.7B multiplied per token (published 12.9B active counts the input embedding). GQA 32 / 8, 8 experts
    # top-2, every layer MoE.
    "mixtral-8x7b": dict(
        family="mixtral",
        source="mistralai/Mixtral-8x7B-v0.1 config.json",
        context_length=32768,
        d_model=4096,
        n_layers=32,
        attention=dict(n_heads=32, n_kv_heads=8, rope=dict(theta=1000000.0)),
        block=dict(d_ff=14336, moe=dict(n_experts=8, n_active_experts=2, d_ff_expert=14336)),
        embeddings=dict(vocab_size=32000),
    ),
    # 15.7B total, 2.45B active (published: 2.4B). MLA (latent 512 + RoPE 64), no query latent; 64 experts top-6 + 2 shared.
    "deepseek-v2-lite": dict(
        family="deepseek_v2",
        source="deepseek-ai/DeepSeek-V2-Lite config.json",
        context_length=163840,
        d_model=2048,
        n_layers=27,
        attention=dict(
            n_heads=16,
            mla=dict(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128),
            rope=_deepseek_yarn(0.707),
        ),
        block=dict(
            d_ff=10944,
            moe=dict(
                n_experts=64,
                n_active_experts=6,
                n_shared_experts=2,
                d_ff_expert=1408,
                n_dense_layers=1,
                norm_topk_prob=False,
            ),
            norm_eps=1e-6,
        ),
        embeddings=dict(vocab_size=102400),
    ),
    # 671B total, 36.6B active (published: 37B; MTP module not counted). MLA: 61 * 576 * 2 = 70,272 B/token in bf16.
    "deepseek-v3": dict(
        family="deepseek_v3",
        source="deepseek-ai/DeepSeek-V3 config.json",
        context_length=163840,
        d_model=7168,
        n_layers=61,
        attention=dict(
            n_heads=128,
            mla=dict(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=1536),
            rope=_deepseek_yarn(1.0),
        ),
        block=dict(
            d_ff=18432,
            moe=dict(
                n_experts=256,
                n_active_experts=8,
                n_shared_experts=1,
                d_ff_expert=2048,
                n_dense_layers=3,
                scoring_func="sigmoid",
                topk_method="noaux_tc",
                n_group=8,
                topk_group=4,
                routed_scaling_factor=2.5,
            ),
            norm_eps=1e-6,
        ),
        embeddings=dict(vocab_size=129280),
    ),
    # DeepSeek-V3's architecture (model_type kimi_k2): 64 heads, 384 experts, 1 dense layer; 1.03T parameters.
    # MLA: 61 * 576 * 2 = 70,272 B/token in bf16, as DeepSeek-V3's.
    "kimi-k2": dict(
        family="deepseek_v3",
        source="moonshotai/Kimi-K2-Instruct config.json",
        context_length=131072,
        d_model=7168,
        n_layers=61,
        attention=dict(
            n_heads=64,
            mla=dict(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=1536),
            rope=dict(
                theta=50000.0,
                scaling=dict(
                    type="yarn",
                    factor=32.0,
                    original_max_position_embeddings=4096,
                    beta_fast=1.0,
                    beta_slow=1.0,
                    mscale=1.0,
                    mscale_all_dim=1.0,
                ),
            ),
        ),
        block=dict(
            d_ff=18432,
            moe=dict(
                n_experts=384,
                n_active_experts=8,
                n_shared_experts=1,
                d_ff_expert=2048,
                n_dense_layers=1,
                scoring_func="sigmoid",
                topk_method="noaux_tc",
                n_group=1,
                topk_group=1,
                routed_scaling_factor=2.827,
            ),
            norm_eps=1e-6,
        ),
        embeddings=dict(vocab_size=163840),
    ),
    # 228.7B total, 10.4B active. GQA 48 / 8, head_dim 128, RoPE on 64 of 128 values a head, q/k norms over the whole
    # projection (family layout), 256 experts top-8 on every layer, routing fixed by the family: 62 * 8 * 128 * 2 * 2
    # = 253,952 B/token in bf16.
    "minimax-m2": dict(
        family="minimax_m2",
        source="MiniMaxAI/MiniMax-M2 config.json",
        context_length=196608,
        d_model=3072,
        n_layers=62,
        attention=dict(
            n_heads=48, n_kv_heads=8, head_dim=128, rope=dict(theta=5000000.0, partial_rotary_factor=64 / 128)
        ),
        block=dict(
            d_ff=1536,
            moe=dict(
                n_experts=256,
                n_active_experts=8,
                d_ff_expert=1536,
                scoring_func="sigmoid",
                topk_method="noaux_tc",
            ),
            norm_eps=1e-6,
        ),
        embeddings=dict(vocab_size=200064),
    ),
    # MiniMax-M2's geometry with a 204,800-token window; its MTP modules (use_mtp, num_mtp_modules) are not read, as
    # MiniMaxM2Config builds the model without them: 253,952 B/token in bf16.
    "minimax-m2.7": dict(
        family="minimax_m2",
        source="MiniMaxAI/MiniMax-M2.7 config.json",
        context_length=204800,
        d_model=3072,
        n_layers=62,
        attention=dict(
            n_heads=48, n_kv_heads=8, head_dim=128, rope=dict(theta=5000000.0, partial_rotary_factor=64 / 128)
        ),
        block=dict(
            d_ff=1536,
            moe=dict(
                n_experts=256, n_active_experts=8, d_ff_expert=1536, scoring_func="sigmoid", topk_method="noaux_tc"
            ),
            norm_eps=1e-6,
        ),
        embeddings=dict(vocab_size=200064),
    ),
    # 2025-26 families (bf16 B/token; fixed state per sequence where the model has one) -----------------------
    # 34 layers, 5 local (1,024) : 1 global; heads and head_dim from Gemma3TextConfig's defaults: 139,264 B/token.
    "gemma-3-4b": dict(
        family="gemma3",
        source="google/gemma-3-4b-it config.json (sparse text_config + Gemma3TextConfig defaults)",
        context_length=131072,
        d_model=2560,
        n_layers=34,
        attention=dict(
            n_heads=8,
            n_kv_heads=4,
            head_dim=256,
            rope=dict(theta=1e6, scaling=dict(type="linear", factor=8.0)),
            scale=256**-0.5,
            rope_local=dict(theta=10000.0),
        ),
        layers=dict(sliding_window=1024, pattern=["local"] * 5 + ["global"]),
        block=dict(d_ff=10240, activation="gelu_tanh"),
        embeddings=dict(vocab_size=262208, tied=True),
    ),
    # 36 chunked (8,192-token chunks) : 12 global NoPE layers, 16 experts top-1 + 1 shared: 196,608 B/token.
    "llama-4-scout": dict(
        family="llama4",
        source="meta-llama/Llama-4-Scout-17B-16E config.json (text_config)",
        context_length=10485760,
        d_model=5120,
        n_layers=48,
        attention=dict(n_heads=40, n_kv_heads=8, head_dim=128),
        layers=dict(attention_chunk=8192, pattern=["chunked"] * 3 + ["global"]),
        block=dict(d_ff=16384, moe=dict(n_experts=16, n_active_experts=1, n_shared_experts=1, d_ff_expert=8192)),
        embeddings=dict(vocab_size=202048),
    ),
    # 12 gated-attention : 36 Gated DeltaNet layers: 24,576 B/token + 77,856,768 B of state per sequence.
    "qwen3-next-80b-a3b": dict(
        family="qwen3_next",
        source="Qwen/Qwen3-Next-80B-A3B-Instruct config.json",
        context_length=262144,
        d_model=2048,
        n_layers=48,
        recurrent=dict(kind="gated_deltanet", n_heads=32, head_dim=128, state_dim=128, conv_dim=8192, conv_kernel=4),
        attention=dict(n_heads=16, n_kv_heads=2, head_dim=256, rope=dict(theta=1e7, partial_rotary_factor=0.25)),
        layers=dict(pattern=["linear"] * 3 + ["global"]),
        block=dict(
            d_ff=5120,
            norm_eps=1e-6,
            moe=dict(
                n_experts=512,
                n_active_experts=10,
                n_shared_experts=1,
                d_ff_expert=512,
                d_ff_shared=512,
                shared_expert_gate=True,
            ),
        ),
        embeddings=dict(vocab_size=151936),
    ),
    # 4 attention : 28 Mamba layers (1 in 8 attends): 16,384 B/token + 16,515,072 B of state per sequence.
    "jamba-mini-1.5": dict(
        family="jamba",
        source="ai21labs/AI21-Jamba-Mini-1.5 config.json",
        context_length=262144,
        d_model=4096,
        n_layers=32,
        recurrent=dict(kind="mamba", n_heads=8192, head_dim=1, state_dim=16, conv_dim=8192, conv_kernel=4),
        attention=dict(n_heads=32, n_kv_heads=8),
        layers=dict(pattern=["linear"] * 4 + ["global"] + ["linear"] * 3),
        block=dict(
            d_ff=14336,
            moe=dict(
                n_experts=16,
                n_active_experts=2,
                d_ff_expert=14336,
                layer_period=2,
                layer_offset=1,
                norm_topk_prob=False,
            ),
        ),
        embeddings=dict(vocab_size=65536),
    ),
    # Attention and Mamba-2 side by side in all 44 layers: 45,056 B/token + 139,673,600 B of state per sequence.
    "falcon-h1-7b": dict(
        family="falcon_h1",
        source="tiiuae/Falcon-H1-7B-Instruct config.json",
        context_length=262144,
        d_model=3072,
        n_layers=44,
        recurrent=dict(
            kind="mamba2",
            n_heads=24,
            head_dim=128,
            state_dim=256,
            conv_dim=3584,
            conv_kernel=4,
            on_attention_layers=True,
        ),
        attention=dict(n_heads=12, n_kv_heads=2, head_dim=128),
        block=dict(d_ff=12288),
        embeddings=dict(vocab_size=130048),
    ),
    # 4 attention (NoPE) : 36 Mamba-2 layers, 72 experts top-10: 16,384 B/token + 153,427,968 B of state.
    "granite-4.0-h-small": dict(
        family="granitemoehybrid",
        source="ibm-granite/granite-4.0-h-small config.json",
        context_length=131072,
        d_model=4096,
        n_layers=40,
        recurrent=dict(
            kind="mamba2", n_heads=128, head_dim=64, state_dim=128, conv_dim=8448, conv_kernel=4, conv_bias=True
        ),
        attention=dict(n_heads=32, n_kv_heads=8, scale=1.0, nope_layers="global", rope=dict(theta=10000.0)),
        layers=dict(pattern=["linear"] * 5 + ["global"] + ["linear"] * 4),
        # a shared expert of 1,536 (shared_intermediate_size) beside the 72 routed ones of 768: 32.2B, IBM's 32B
        block=dict(
            d_ff=1536,
            moe=dict(n_experts=72, n_active_experts=10, d_ff_expert=768, n_shared_experts=1, d_ff_shared=1536),
        ),
        embeddings=dict(vocab_size=100352, tied=True),
    ),
    # 10 softmax : 70 lightning-attention layers: 40,960 B/token + 146,800,640 B of state (bf16) per sequence.
    "minimax-text-01": dict(
        family="minimax",
        source="MiniMaxAI/MiniMax-Text-01 config.json",
        context_length=10240000,
        d_model=6144,
        n_layers=80,
        recurrent=dict(kind="lightning", n_heads=64, head_dim=128, state_dim=128, state_dtype="activation"),
        attention=dict(n_heads=64, n_kv_heads=8, head_dim=128),
        layers=dict(pattern=["linear"] * 7 + ["global"]),
        block=dict(
            d_ff=9216,
            moe=dict(n_experts=32, n_active_experts=2, d_ff_expert=9216),
            normed_residual=dict(
                attention=(_MINIMAX_ALPHA, 1.0), linear=(_MINIMAX_ALPHA, 1.0), mlp=(_MINIMAX_ALPHA, 1.0)
            ),
        ),
        embeddings=dict(vocab_size=200064),
    ),
    # 7 MLA : 20 KDA layers: 8,064 B/token + 43,909,120 B of state per sequence.
    "kimi-linear-48b-a3b": dict(
        family="kimi_linear",
        source="moonshotai/Kimi-Linear-48B-A3B-Instruct config.json",
        context_length=1048576,
        d_model=2304,
        n_layers=27,
        recurrent=dict(kind="kda", n_heads=32, head_dim=128, state_dim=128, conv_dim=12288, conv_kernel=4),
        attention=dict(
            n_heads=32, mla=dict(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128)
        ),
        layers=dict(pattern=(["linear"] * 3 + ["global"]) * 6 + ["linear", "linear", "global"]),
        block=dict(
            d_ff=9216,
            moe=dict(n_experts=256, n_active_experts=8, n_shared_experts=1, d_ff_expert=1024, n_dense_layers=1),
        ),
        embeddings=dict(vocab_size=163840),
    ),
    # DeepSeek-V3 geometry + a 128-wide lightning-indexer key per layer: 61 * (576 + 128) * 2 = 85,888 B/token.
    "deepseek-v3.2-exp": dict(
        family="deepseek_v32",
        source="deepseek-ai/DeepSeek-V3.2-Exp config.json",
        context_length=163840,
        d_model=7168,
        n_layers=61,
        attention=dict(
            n_heads=128,
            mla=dict(
                kv_lora_rank=512,
                qk_rope_head_dim=64,
                qk_nope_head_dim=128,
                v_head_dim=128,
                q_lora_rank=1536,
                indexer=dict(index_head_dim=128, index_n_heads=64, index_topk=2048),
            ),
        ),
        block=dict(
            d_ff=18432,
            moe=dict(n_experts=256, n_active_experts=8, n_shared_experts=1, d_ff_expert=2048, n_dense_layers=3),
        ),
        embeddings=dict(vocab_size=129280),
    ),
    # 35 layers, 4 local (512) : 1 global; the last 15 reuse earlier K/V: 20 * 2 * 2 * 256 * 2 = 40,960 B/token.
    "gemma-3n-e4b": dict(
        family="gemma3n",
        source="google/gemma-3n-E4B-it config.json (text_config)",
        context_length=32768,
        d_model=2048,
        n_layers=35,
        attention=dict(
            n_heads=8, n_kv_heads=2, head_dim=256, qk_norm=True, rope=dict(theta=1e6), rope_local=dict(theta=10000.0)
        ),
        layers=dict(sliding_window=512, pattern=["local"] * 4 + ["global"], n_kv_shared_layers=15),
        block=dict(d_ff=16384, norm_eps=1e-6, activation="gelu_tanh", n_norms=4),
        embeddings=dict(
            vocab_size=262400, tied=True, final_logit_softcap=30.0, per_layer_inputs=dict(width=256, vocab_size=262144)
        ),
    ),
    # 3 local (4,096) : 1 global, parallel block with one LayerNorm: 131,072 B/token.
    "command-r7b": dict(
        family="cohere2",
        source="CohereLabs/c4ai-command-r7b-12-2024 config.json",
        context_length=132096,
        d_model=4096,
        n_layers=32,
        attention=dict(n_heads=32, n_kv_heads=8, rope=dict(theta=50000.0, interleaved=True)),
        layers=dict(sliding_window=4096, pattern=["local"] * 3 + ["global"]),
        block=dict(d_ff=14336),
        embeddings=dict(vocab_size=256000, tied=True, logit_scale=0.25),
    ),
    # 3.08B. GQA 16 / 4; every 4th layer has no RoPE (no change to the cache): 73,728 B/token.
    "smollm3-3b": dict(
        family="smollm3",
        source="HuggingFaceTB/SmolLM3-3B config.json",
        context_length=65536,
        d_model=2048,
        n_layers=36,
        attention=dict(n_heads=16, n_kv_heads=4),
        block=dict(d_ff=11008),
        embeddings=dict(vocab_size=128256, tied=True),
    ),
}

# 116.8B total, 5.1B active: gpt-oss-20b's layers, 36 of them, 128 experts top-4 (openai/gpt-oss-120b config.json,
# tests/fixtures/hf_configs: only the layer count, the experts and layer_types differ).
_OSS_20B = PRESET_DATA["gpt-oss-20b"]
PRESET_DATA["gpt-oss-120b"] = {
    **_OSS_20B, "source": "openai/gpt-oss-120b config.json", "n_layers": 36,
    "block": {**_OSS_20B["block"], "moe": {**_OSS_20B["block"]["moe"], "n_experts": 128}},
}  # fmt: skip

_GEMMA3_SIGLIP = dict(kind="siglip", d_model=1152, n_layers=27, n_heads=16, d_ff=4304, patch_size=14, image_size=896,
                      tokens_per_image=256, patches_per_image=4096)  # fmt: skip
"""Gemma 3's SigLIP tower (its vision_config; 256 image tokens, ``mm_tokens_per_image``), in the 4B, 12B and 27B."""
# The checkpoints Hugging Face ids name (-it and -pt alike) are Gemma3ForConditionalGeneration: the text model and the
# SigLIP tower, which vLLM loads and profiles (google/gemma-3-*-it config.json). The text presets leave it out.
PRESET_DATA["gemma-3-27b-it"] = {
    **PRESET_DATA["gemma-3-27b"], "source": "google/gemma-3-27b-it config.json (text_config and vision_config)",
    "vision": {**_GEMMA3_SIGLIP, "projector_width": 5376},
}  # fmt: skip
PRESET_DATA["gemma-3-4b-it"] = {
    **PRESET_DATA["gemma-3-4b"], "source": "google/gemma-3-4b-it config.json (text_config and vision_config)",
    "vision": {**_GEMMA3_SIGLIP, "projector_width": 2560},
}  # fmt: skip


def preset_names() -> list[str]:
    return list(PRESET_DATA)


CHECKPOINT_WEIGHTS: dict[str, str] = {
    "deepseek-v3": "fp8-block",  # config.json quantization_config: fp8, weight_block_size [128, 128]
    "deepseek-v3.2-exp": "fp8-block",  # the same as DeepSeek-V3's
    "kimi-k2": "fp8-block",  # config.json quantization_config: fp8, weight_block_size [128, 128]
    "minimax-m2": "fp8-block",  # config.json quantization_config: fp8, weight_block_size [128, 128]
    "minimax-m2.7": "fp8-block",  # the same as MiniMax-M2's
    "gpt-oss-20b": "mxfp4",  # config.json quantization_config: mxfp4 (experts), the rest bf16
    "gpt-oss-120b": "mxfp4",  # the same as gpt-oss-20b's
}
"""The weight format a preset's published checkpoint stores (its config.json's ``quantization_config``);
presets not listed are bf16 checkpoints."""


CHECKPOINT_DTYPES: dict[str, str] = {
    "llama-2-7b": "float16",  # meta-llama/Llama-2-7b-hf config.json (tests/fixtures/hf_configs/llama-2-7b.json)
}
"""The unquantised dtype a preset's published config.json names where it is not bfloat16 (``torch_dtype``): priced
as that config.json is (``core.sources``: float16 weights and cache). The preset was priced bf16 where its config.json
was fp16, with a bf16 warning on a V100 the file did not get (trial 270)."""


def checkpoint_weights(name: str) -> str | None:
    """The format preset ``name``'s checkpoint is stored in, when it is quantised."""
    return CHECKPOINT_WEIGHTS.get(name.strip().lower())


@cache
def get_preset(name: str) -> ModelSpec:
    """The preset ``name`` (case-insensitive) as a validated ``ModelSpec``."""
    key = name.strip().lower()
    if key not in PRESET_DATA:
        raise BadInputError(
            f"unknown preset {name!r}: {did_you_mean_model(name, PRESET_DATA, 'run `mha presets` for the list')}"
        )
    data = PRESET_DATA[key]
    return ModelSpec.model_validate({"name": key, **with_layout(family_of(data["family"]).layout, data)})


def with_layout(layout: Mapping[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """A preset's fields over its family's layout (flat, ``core.families``), part by part: the preset's own win."""
    merged = nest_flat_fields(dict(layout))
    for name, value in data.items():
        inner = merged.get(name)
        merged[name] = {**inner, **value} if isinstance(inner, dict) and isinstance(value, dict) else value
    return merged


def find_preset(name: str) -> ModelSpec | None:
    """The preset ``name`` if there is one, else ``None``."""
    return get_preset(name) if name.strip().lower() in PRESET_DATA else None
