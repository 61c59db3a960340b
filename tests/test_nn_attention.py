"""Attention (MHA/GQA/MQA) against independent references: torch.nn.MultiheadAttention, an MHA whose
K/V weights repeat the GQA weights per group, and the full causal forward for cached decode."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from mha_cli.core.schemas import ModelSpec
from mha_cli.nn import Attention, build_attention, record_sdpa_backends
from tests.largest_tensor import LargestTensor

D_MODEL, N_HEADS, HEAD_DIM = 32, 4, 8


def seeded(module: nn.Module, seed: int = 0) -> nn.Module:
    """Fill every parameter (biases too) with seeded normal values."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in module.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 0.3)
    return module


def inputs(b: int = 2, s: int = 7, seed: int = 1) -> torch.Tensor:
    return torch.randn(b, s, D_MODEL, generator=torch.Generator().manual_seed(seed))  # (b, s, d)


def test_mha_equals_torch_multihead_attention_with_the_same_weights() -> None:
    ours = seeded(Attention(D_MODEL, N_HEADS, N_HEADS, D_MODEL // N_HEADS, bias=True, o_bias=True))
    reference = nn.MultiheadAttention(D_MODEL, N_HEADS, bias=True, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        reference.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        reference.out_proj.weight.copy_(ours.o_proj.weight)
        reference.out_proj.bias.copy_(ours.o_proj.bias)
    x = inputs()
    future = torch.ones(7, 7, dtype=torch.bool).triu(1)  # True = may not attend
    expected, expected_weights = reference(x, x, x, attn_mask=future, need_weights=True, average_attn_weights=False)
    with torch.no_grad():
        out = ours(x)
        ref_out, weights = ours.forward_with_weights(x)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ref_out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=1e-5)


def mha_with_repeated_kv(grouped: Attention) -> Attention:
    """An MHA whose per-head K/V weights are the grouped module's, repeated for each query head."""
    mha = Attention(grouped.d_model, grouped.n_heads, grouped.n_heads, grouped.head_dim, bias=True)
    with torch.no_grad():
        mha.q_proj.load_state_dict(grouped.q_proj.state_dict())
        mha.o_proj.load_state_dict(grouped.o_proj.state_dict())
        for name in ("k_proj", "v_proj"):
            source, target = getattr(grouped, name), getattr(mha, name)
            weight = source.weight.view(grouped.n_kv_heads, grouped.head_dim, grouped.d_model)  # (n_kv, h_d, d)
            target.weight.copy_(weight.repeat_interleave(grouped.q_per_kv, 0).reshape(-1, grouped.d_model))
            bias = source.bias.view(grouped.n_kv_heads, grouped.head_dim)  # (n_kv, h_d)
            target.bias.copy_(bias.repeat_interleave(grouped.q_per_kv, 0).reshape(-1))
    return mha


@pytest.mark.parametrize("n_kv_heads", [2, 1], ids=["GQA-2", "MQA"])
def test_grouped_attention_equals_mha_with_repeated_kv_weights(n_kv_heads: int) -> None:
    grouped = seeded(Attention(D_MODEL, N_HEADS, n_kv_heads, HEAD_DIM, bias=True))
    mha = mha_with_repeated_kv(grouped)
    x = inputs()
    with torch.no_grad():
        torch.testing.assert_close(grouped(x), mha(x), atol=1e-5, rtol=1e-5)
        grouped_cache, mha_cache = grouped.new_cache(2, 8), mha.new_cache(2, 8)
        grouped(x[:, :5], grouped_cache, 0)
        mha(x[:, :5], mha_cache, 0)
        step = grouped(x[:, 5:6], grouped_cache, 5)
        torch.testing.assert_close(step, mha(x[:, 5:6], mha_cache, 5), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1], ids=["MHA", "GQA", "MQA"])
def test_token_by_token_decode_equals_the_full_causal_forward(n_kv_heads: int) -> None:
    layer = seeded(Attention(D_MODEL, N_HEADS, n_kv_heads, HEAD_DIM))
    x = inputs(s=9)
    with torch.no_grad():
        full = layer(x)  # (b, 9, d)
        cache = layer.new_cache(batch=2, max_seq=12)
        steps = [layer(x[:, :3], cache, start_pos=0)]  # prefill 3 tokens
        steps += [layer(x[:, pos : pos + 1], cache, start_pos=pos) for pos in range(3, 9)]
        chunked = layer(x[:, 6:9], cache, start_pos=6)  # a multi-token chunk after a prefix
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(chunked, full[:, 6:9], atol=1e-5, rtol=1e-5)


def test_decode_with_a_bf16_cache_stays_close_to_fp32() -> None:
    layer = seeded(Attention(D_MODEL, N_HEADS, 2, HEAD_DIM))
    x = inputs(s=6)
    with torch.no_grad():
        full = layer(x)
        cache = layer.new_cache(2, 6, dtype="bf16")
        steps = torch.cat([layer(x[:, pos : pos + 1], cache, pos) for pos in range(6)], dim=1)
    assert cache.k.dtype == torch.bfloat16
    torch.testing.assert_close(steps, full, atol=3e-2, rtol=3e-2)
    assert not torch.equal(steps, full)  # the cache really rounded to bf16


def test_gqa_decode_never_materialises_kv_repeated_per_query_head() -> None:
    n_heads, n_kv_heads, context = 8, 2, 64
    layer = seeded(Attention(D_MODEL, n_heads, n_kv_heads, HEAD_DIM))
    cache = layer.new_cache(1, context)
    x = inputs(b=1, s=context)
    repeated_k = n_heads * context * HEAD_DIM  # what repeat_interleave(K) would allocate
    with torch.no_grad():
        layer(x[:, :-1], cache, 0)
        with LargestTensor() as decode:
            layer(x[:, -1:], cache, context - 1)
        with LargestTensor() as reference:
            layer.forward_with_weights(x)  # the reference path does repeat K/V: the probe can see it
    assert decode.largest < repeated_k
    assert reference.largest >= repeated_k


def test_record_sdpa_backends_names_the_dispatchers_choice() -> None:
    layer = seeded(Attention(D_MODEL, N_HEADS, 2, HEAD_DIM))
    cache = layer.new_cache(1, 4)
    with torch.no_grad(), record_sdpa_backends() as seen:
        layer(inputs(b=1, s=3), cache, 0)
        layer(inputs(b=1, s=1), cache, 3)
    assert len(seen) == 2
    assert all(name.split()[0] in {"math", "flash", "efficient", "cudnn"} for name in seen)


def test_build_attention_follows_the_spec_and_llama_weight_names() -> None:
    spec = ModelSpec(
        d_model=48, n_layers=1, n_heads=6, n_kv_heads=2, head_dim=16, vocab_size=10, d_ff=64, qkv_bias=True
    )
    layer = build_attention(spec)
    assert isinstance(layer, Attention)
    shapes = {name: tuple(p.shape) for name, p in layer.state_dict().items()}
    assert shapes == {
        "q_proj.weight": (96, 48),
        "q_proj.bias": (96,),
        "k_proj.weight": (32, 48),
        "k_proj.bias": (32,),
        "v_proj.weight": (32, 48),
        "v_proj.bias": (32,),
        "o_proj.weight": (48, 96),
    }


def test_bad_head_counts_are_refused_with_the_values() -> None:
    with pytest.raises(ValueError, match=r"n_heads \(6\) must be divisible by n_kv_heads \(4\)"):
        Attention(24, 6, 4, 4)


def test_native_gqa_prefill_path_equals_the_stacked_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA-only enable_gqa prefill branch (forced on here) gives the stacked path's output."""
    from mha_cli.nn import sdpa

    torch.manual_seed(0)
    q = torch.randn(2, 8, 12, 16)  # (b, n_h, s, h_d)
    k, v = torch.randn(2, 2, 12, 16), torch.randn(2, 2, 12, 16)  # (b, n_kv, t, h_d)
    stacked = sdpa.grouped_attention(q, k, v)
    assert not sdpa._flash_takes("cpu", torch.bfloat16, 16, 16)  # on CPU the stacked path always runs
    monkeypatch.setattr(sdpa, "_flash_takes", lambda *_args: True)
    with record_sdpa_backends() as seen:
        native = sdpa.grouped_attention(q, k, v)
    assert len(seen) == 1
    torch.testing.assert_close(native, stacked)
