"""MLA: the absorbed path equals the naive one (with and without caches), cached decode equals the
full forward, and the absorbed cache holds only kv_lora_rank + rope values per token."""

from __future__ import annotations

import pytest
import torch

from mha_cli.core.schemas import ModelSpec
from mha_cli.nn import KVCache, LatentCache, MLAttention, build_attention

D_MODEL = 32


def make_mla(q_lora_rank: int | None = 12, rope: int = 4, seed: int = 0) -> MLAttention:
    torch.manual_seed(seed)
    layer = MLAttention(D_MODEL, 4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=rope, v_head_dim=6,
                        q_lora_rank=q_lora_rank)  # fmt: skip
    with torch.no_grad():
        for param in layer.parameters():
            param.add_(torch.randn_like(param) * 0.1)  # norms' weights away from 1 too
    return layer


def inputs(b: int = 2, s: int = 7) -> torch.Tensor:
    return torch.randn(b, s, D_MODEL, generator=torch.Generator().manual_seed(1))  # (b, s, d)


@pytest.mark.parametrize(("q_lora_rank", "rope"), [(12, 4), (None, 4), (12, 0)], ids=["q-lora", "direct-q", "no-rope"])
def test_absorbed_equals_naive(q_lora_rank: int | None, rope: int) -> None:
    layer = make_mla(q_lora_rank, rope)
    x = inputs()
    with torch.no_grad():
        absorbed = layer(x)
        layer.mode = "naive"
        naive = layer(x)
        reference, weights = layer.forward_with_weights(x)
    torch.testing.assert_close(absorbed, naive, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(reference, naive, atol=1e-5, rtol=1e-5)
    assert weights.shape == (2, 4, 7, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 7))


@pytest.mark.parametrize("mode", ["absorbed", "naive"])
def test_cached_decode_equals_the_full_forward(mode: str) -> None:
    layer = make_mla()
    layer.mode = mode
    x = inputs(s=8)
    with torch.no_grad():
        full = layer(x)
        cache = layer.new_cache(batch=2, max_seq=8)
        steps = [layer(x[:, :3], cache, 0)] + [layer(x[:, pos : pos + 1], cache, pos) for pos in range(3, 8)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_absorbed_and_naive_decode_agree_token_by_token() -> None:
    layer = make_mla()
    x = inputs(s=6)
    outputs = {}
    with torch.no_grad():
        for mode in ("absorbed", "naive"):
            layer.mode = mode
            cache = layer.new_cache(2, 6)
            outputs[mode] = torch.cat([layer(x[:, pos : pos + 1], cache, pos) for pos in range(6)], dim=1)
    torch.testing.assert_close(outputs["absorbed"], outputs["naive"], atol=1e-5, rtol=1e-5)


def test_the_absorbed_cache_holds_the_latent_and_rope_key_only() -> None:
    layer = make_mla()
    x = inputs(s=5)
    cache = layer.new_cache(2, 5)
    assert isinstance(cache, LatentCache)
    assert cache.kv.shape == (2, 5, 16 + 4)  # kv_lora_rank + rope per token, not 2 * n_heads * head_dim
    with torch.no_grad():
        layer(x, cache, 0)
        latent, k_rope = layer._latent(x, torch.arange(5))
    torch.testing.assert_close(cache.latent, latent)
    torch.testing.assert_close(cache.rope_key, k_rope)
    layer.mode = "naive"
    naive_cache = layer.new_cache(2, 5)
    assert isinstance(naive_cache, KVCache)
    assert naive_cache.k.shape == (2, 4, 5, 8 + 4)
    assert naive_cache.v.shape == (2, 4, 5, 6)
    assert naive_cache.nbytes / cache.nbytes == (4 * (12 + 6)) / 20


def test_a_cache_of_the_other_mode_is_refused() -> None:
    layer = make_mla()
    layer.mode = "naive"
    wrong = LatentCache(2, 7, 16, 4)
    with pytest.raises(TypeError, match="needs a KVCache"):
        layer(inputs(), wrong, 0)


def test_build_attention_maps_the_mla_block_and_deepseek_names() -> None:
    spec = ModelSpec(d_model=64, n_layers=1, n_heads=4, vocab_size=10, d_ff=64,
                     mla={"kv_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 12,
                          "q_lora_rank": 24})  # fmt: skip
    layer = build_attention(spec, mla_mode="naive")
    assert isinstance(layer, MLAttention) and layer.mode == "naive"
    shapes = {name: tuple(p.shape) for name, p in layer.state_dict().items()}
    assert shapes == {
        "q_a_proj.weight": (24, 64),
        "q_a_layernorm.weight": (24,),
        "q_b_proj.weight": (4 * 24, 24),
        "kv_a_proj_with_mqa.weight": (32 + 8, 64),
        "kv_a_layernorm.weight": (32,),
        "kv_b_proj.weight": (4 * (16 + 12), 32),
        "o_proj.weight": (64, 4 * 12),
    }


def _partial_sum(layer: MLAttention, x: torch.Tensor) -> torch.Tensor:
    """The rank's output before the all-reduce (o_proj's bias is added after it)."""
    seen: list[torch.Tensor] = []

    def keep(partial: torch.Tensor) -> torch.Tensor:
        seen.append(partial)
        return partial

    with torch.no_grad():
        layer(x, reduce=keep)
    return seen[0]


def test_tensor_parallel_heads_sum_to_the_whole_layer() -> None:
    """Rank r holds heads [2r, 2r + 2) of q_b_proj and kv_b_proj and the matching o_proj columns; the
    latent projections are replicated. The ranks' partial outputs sum to the whole layer's, in both modes."""
    from mha_cli.nn.mla import build_mla

    spec = ModelSpec(d_model=D_MODEL, n_layers=1, n_heads=4, vocab_size=10, d_ff=64, o_bias=True,
                     mla={"kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 6,
                          "q_lora_rank": 12})  # fmt: skip
    whole = build_mla(spec)
    with torch.no_grad():
        for param in whole.parameters():
            param.copy_(torch.randn_like(param) * 0.3)
    full, x = whole.state_dict(), inputs()
    for mode in ("absorbed", "naive"):
        whole.mode = mode
        partials = []
        for rank in range(2):
            part = build_mla(spec, mla_mode=mode, tp_rank=rank, tp_size=2)
            assert (part.n_heads, part.o_proj.in_features) == (2, 2 * 6)
            heads = slice(2 * rank, 2 * rank + 2)
            sliced = dict(full)
            sliced["q_b_proj.weight"] = full["q_b_proj.weight"].view(4, 12, 12)[heads].reshape(-1, 12)
            sliced["kv_b_proj.weight"] = full["kv_b_proj.weight"].view(4, 14, 16)[heads].reshape(-1, 16)
            sliced["o_proj.weight"] = full["o_proj.weight"].view(D_MODEL, 4, 6)[:, heads].reshape(D_MODEL, -1)
            part.load_state_dict(sliced, strict=True)
            partials.append(_partial_sum(part, x))
        with torch.no_grad():
            expected = whole(x)
        torch.testing.assert_close(sum(partials) + whole.o_proj.bias, expected, atol=1e-5, rtol=1e-5)
