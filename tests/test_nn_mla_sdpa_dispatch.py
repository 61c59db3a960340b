"""The attention dispatcher (``plan_attention``): which path each shape takes on CUDA and on CPU, that
every path equals explicit softmax attention, and that the chunked path bounds the score matrix
even in PyTorch's math backend (the kernel that materialises it)."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from mha_cli.nn.sdpa import (
    SCORE_BUDGET,
    grouped_attention,
    plan_attention,
    record_attention_paths,
    record_sdpa_backends,
    reference_attention,
)
from tests.largest_tensor import LargestTensor

BF16, FP32 = torch.bfloat16, torch.float32

# (case, n_heads, n_kv_heads, s, t, qk_dim, v_dim, device, dtype) -> (path, calls)
PLANS = [
    # Absorbed DeepSeek-V3 MLA: 128 heads over one 576-wide latent (512 + 64 RoPE), 32K cached tokens.
    ("mla-576 decode cuda", 128, 1, 1, 32768, 576, 576, "cuda", BF16, "grouped", 1),
    ("mla-576 prefill cuda", 128, 1, 8192, 8192, 576, 576, "cuda", BF16, "grouped-chunked", 128),
    ("mla-576 decode cpu", 128, 1, 1, 32768, 576, 576, "cpu", BF16, "grouped", 1),
    ("mla-576 prefill cpu", 128, 1, 8192, 8192, 576, 576, "cpu", FP32, "grouped-chunked", 128),
    # Llama-3-8B-like GQA, head_dim 128: flash takes the prefill natively.
    ("gqa-128 prefill cuda", 32, 8, 8192, 8192, 128, 128, "cuda", BF16, "native-gqa", 1),
    ("gqa-128 decode cuda", 32, 8, 1, 8192, 128, 128, "cuda", BF16, "grouped", 1),
    ("gqa-128 prefill cuda fp32", 32, 8, 8192, 8192, 128, 128, "cuda", FP32, "grouped-chunked", 32),
    ("gqa-128 short prefill cpu", 32, 8, 512, 512, 128, 128, "cpu", FP32, "grouped", 1),
    # head_dim 512 (wider than flash): never native GQA, chunked on CUDA even for MHA.
    ("gqa-512 prefill cuda", 16, 4, 8192, 8192, 512, 512, "cuda", BF16, "grouped-chunked", 16),
    ("mha-512 prefill cuda", 16, 16, 8192, 8192, 512, 512, "cuda", BF16, "grouped-chunked", 16),
    ("mha-512 prefill cpu", 16, 16, 8192, 8192, 512, 512, "cpu", FP32, "grouped", 1),
    ("gqa-512 decode cuda", 16, 4, 1, 8192, 512, 512, "cuda", BF16, "grouped", 1),
]


@pytest.mark.parametrize(
    ("n_heads", "n_kv", "s", "t", "qk_dim", "v_dim", "device", "dtype", "path", "calls"),
    [case[1:] for case in PLANS],
    ids=[case[0] for case in PLANS],
)
def test_the_dispatcher_picks_the_path_for_each_shape(n_heads, n_kv, s, t, qk_dim, v_dim, device, dtype, path, calls):
    plan = plan_attention(batch=1, n_heads=n_heads, n_kv_heads=n_kv, s=s, t=t, qk_dim=qk_dim, v_dim=v_dim,
                          device_type=device, dtype=dtype)  # fmt: skip
    assert (plan.path, plan.n_calls) == (path, calls), plan.reason
    if plan.path == "grouped-chunked":  # no call covers more scores than the budget
        assert plan.chunk * n_heads * t <= SCORE_BUDGET < 2 * plan.chunk * n_heads * t


def _qkv(n_heads: int, n_kv: int, s: int, t: int, width: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(2, n_heads, s, width, generator=generator)  # (b, n_h, s, h_d)
    k = torch.randn(2, n_kv, t, width, generator=generator)  # (b, n_kv, t, h_d)
    v = torch.randn(2, n_kv, t, width, generator=generator)  # (b, n_kv, t, h_d)
    return q, k, v


EXECUTED = [  # (case, n_heads, n_kv, s, t, width, score_budget, expected path)
    ("mla-576 prefill", 8, 1, 24, 24, 576, 2 * 8 * 24 * 5, "grouped-chunked"),
    ("mla-576 decode", 8, 1, 1, 24, 576, SCORE_BUDGET, "grouped"),
    ("mla-576 3 new tokens after 21", 8, 1, 3, 24, 576, 2 * 8 * 24 * 2, "grouped-chunked"),
    ("gqa-128 prefill", 8, 2, 16, 16, 128, SCORE_BUDGET, "grouped"),
    ("gqa-128 prefill chunked", 8, 2, 16, 16, 128, 2 * 8 * 16 * 3, "grouped-chunked"),
    ("mha-512 prefill", 4, 4, 16, 16, 512, SCORE_BUDGET, "grouped"),
    ("gqa-512 chunk after prefix", 4, 2, 5, 16, 512, 2 * 4 * 16, "grouped-chunked"),
]


@pytest.mark.parametrize(
    ("n_heads", "n_kv", "s", "t", "width", "budget", "path"), [c[1:] for c in EXECUTED], ids=[c[0] for c in EXECUTED]
)
def test_every_path_equals_explicit_softmax_attention(n_heads, n_kv, s, t, width, budget, path):
    q, k, v = _qkv(n_heads, n_kv, s, t, width)
    with record_sdpa_backends() as backends, record_attention_paths() as paths:
        out = grouped_attention(q, k, v, scale=0.05, score_budget=budget)
    expected, _ = reference_attention(q, k, v, scale=0.05)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    assert paths == [f"{path}: {backends[0]}"]


def test_chunks_bound_the_scores_even_in_the_math_backend() -> None:
    """Absorbed-MLA prefill, 16 heads folded over one 72-wide latent: the math backend (what CUDA falls to
    for heads wider than 256) builds each call's scores; chunking keeps them to a budget, one call does not."""
    n_heads, s, width = 16, 64, 8
    q, k, v = _qkv(n_heads, 1, s, s, width)
    all_scores = 2 * n_heads * s * s  # (b, n_h, s, t) for every head at once
    budget = all_scores // 4
    assert q.numel() <= budget  # so the largest tensor is a score block, not the input
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        with LargestTensor() as chunked:
            grouped_attention(q, k, v, score_budget=budget)
        with LargestTensor() as single:
            grouped_attention(q, k, v, score_budget=all_scores)  # one call: the control that must be large
    assert chunked.largest <= budget
    assert single.largest >= all_scores
