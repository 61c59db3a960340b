"""Static caches: positions land where asked, and every cache's bytes equal the calculator's."""

from __future__ import annotations

import pytest
import torch

from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import bytes_per_token_per_layer, indexer_key_bytes
from mha_cli.core.presets import get_preset, preset_names
from mha_cli.core.schemas import ModelSpec
from mha_cli.nn import KVCache, LatentCache, build_attention

TINY = {
    "MHA": ModelSpec(d_model=32, n_layers=1, n_heads=4, vocab_size=8, d_ff=32),
    "GQA": ModelSpec(d_model=32, n_layers=1, n_heads=4, n_kv_heads=2, head_dim=12, vocab_size=8, d_ff=32),
    "MQA": ModelSpec(d_model=32, n_layers=1, n_heads=4, n_kv_heads=1, vocab_size=8, d_ff=32),
    "MLA": ModelSpec(d_model=32, n_layers=1, n_heads=4, vocab_size=8, d_ff=32,
                     mla={"kv_lora_rank": 24, "qk_rope_head_dim": 6, "qk_nope_head_dim": 8, "v_head_dim": 10}),
}  # fmt: skip


@pytest.mark.parametrize("kv_dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("mla_mode", ["absorbed", "naive"])
@pytest.mark.parametrize("variant", list(TINY))
def test_tiny_cache_bytes_equal_the_calculator(variant: str, mla_mode: str, kv_dtype: str) -> None:
    model = TINY[variant]
    cache = build_attention(model, mla_mode=mla_mode).new_cache(batch=3, max_seq=10, dtype=kv_dtype)
    assert cache.nbytes == bytes_per_token_per_layer(model, kv_dtype, mla_mode) * 3 * 10
    tensors = [cache.kv] if isinstance(cache, LatentCache) else [cache.k, cache.v]
    assert cache.nbytes == sum(t.numel() * t.element_size() for t in tensors)


@pytest.mark.parametrize("kv_dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("name", preset_names())
def test_every_preset_cache_bytes_equal_the_calculator(name: str, kv_dtype: str) -> None:
    model = get_preset(name)
    for mode in ("absorbed", "naive") if model.attention.mla else ("absorbed",):
        layer = build_attention(model, mla_mode=mode, device="meta")  # shapes only, no memory
        cache = layer.new_cache(batch=2, max_seq=64, dtype=kv_dtype, device="meta")
        indexer = indexer_key_bytes(model, kv_dtype)  # DeepSeek-V3.2's indexer key is priced, not built in torch
        assert cache.nbytes == (bytes_per_token_per_layer(model, kv_dtype, mode) - indexer) * 2 * 64


def test_published_reference_points() -> None:
    llama3 = build_attention(get_preset("llama-3-8b"), device="meta").new_cache(1, 1, dtype="bf16", device="meta")
    assert llama3.nbytes * 32 == 131_072  # Llama-3-8B, bf16, per token, 32 layers
    v3 = build_attention(get_preset("deepseek-v3"), device="meta").new_cache(1, 1, dtype="bf16", device="meta")
    assert v3.nbytes == 576 * 2 and v3.nbytes * 61 == 70_272  # DeepSeek-V3 absorbed latent, bf16


@pytest.mark.parametrize("kv_dtype", ["fp8", "int8", "int4"])
def test_quantised_caches_are_refused_clearly(kv_dtype: str) -> None:
    layer = build_attention(TINY["GQA"])
    with pytest.raises(BadInputError, match=f"{kv_dtype} is priced by `mha kv` but not built"):
        layer.new_cache(1, 4, dtype=kv_dtype)


def test_update_writes_the_given_positions_and_returns_the_prefix() -> None:
    cache = KVCache(batch=1, max_seq=6, n_kv_heads=2, head_dim=3)
    k = torch.ones(1, 2, 2, 3)
    keys, _ = cache.update(2, k, 2 * k)
    assert keys.shape == (1, 2, 4, 3)
    assert cache.k[:, :, :2].abs().sum() == 0 and torch.equal(cache.k[:, :, 2:4], k)
    assert torch.equal(cache.v[:, :, 2:4], 2 * k) and cache.k[:, :, 4:].abs().sum() == 0
    with pytest.raises(ValueError, match=r"positions \[5, 7\) do not fit a cache of max_seq=6"):
        cache.update(5, k, k)


def test_latent_cache_update_keeps_latent_and_rope_side_by_side() -> None:
    cache = LatentCache(batch=1, max_seq=4, kv_lora_rank=3, rope_dim=2)
    kv = cache.update(0, torch.full((1, 2, 3), 1.0), torch.full((1, 2, 2), 5.0))
    assert kv.shape == (1, 2, 5)
    assert torch.equal(kv[0, 0], torch.tensor([1.0, 1.0, 1.0, 5.0, 5.0]))
    assert cache.nbytes == 4 * 5 * 4
