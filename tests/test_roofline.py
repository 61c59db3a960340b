"""Roofline bounds against hand arithmetic from the H100 datasheet figures."""

import pytest

from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.presets import get_preset
from mha_cli.core.roofline import attention_pair_flops, causal_pairs, estimate_roofline
from mha_cli.core.targets import resolve_target

H100_BANDWIDTH = 3350e9  # B/s, datasheet
H100_BF16 = 989.4e12  # dense FLOP/s


def _llama_8b(seq=8192, batch=1, tp=1, target="h100"):
    model = get_preset("llama-3-8b")
    params = count_params(model)
    kv = kv_footprint(model, seq_len=seq, batch=batch, tp=tp)
    weights = -(-2 * params.total // tp)
    return (
        model,
        params,
        estimate_roofline(
            model, resolve_target(target), active_params=params.active, weight_bytes_per_device=weights, kv=kv
        ),
    )


def test_decode_is_memory_bound_weights_plus_cache_over_bandwidth():
    _, _, r = _llama_8b()
    expected_bytes = 2 * 8_030_261_248 + 131_072 * 8192
    assert r.decode_bytes_per_step == expected_bytes
    assert r.decode_bound == "memory"
    assert r.decode_step_s == pytest.approx(expected_bytes / H100_BANDWIDTH)  # ~5.11 ms
    assert r.decode_tokens_per_s == pytest.approx(1 / r.decode_step_s)


def test_prefill_is_compute_bound_params_plus_causal_attention():
    _, _, r = _llama_8b()
    attention = 32 * (8192 * 8193 // 2) * 2 * 32 * (128 + 128)
    expected = 2 * 8_030_261_248 * 8192 + attention
    assert r.prefill_flops == expected
    assert r.prefill_bound == "compute"
    assert r.prefill_s == pytest.approx(expected / H100_BF16)


def test_tensor_parallel_divides_bytes_and_multiplies_flops():
    _, _, one = _llama_8b(batch=8)
    _, _, eight = _llama_8b(batch=8, tp=8, target="8xh100")
    assert eight.decode_bytes_per_step == -(-2 * 8_030_261_248 // 8) + 8 * 8192 * 131_072 // 8
    assert eight.prefill_s == pytest.approx(one.prefill_s / 8)


def test_large_batches_turn_decode_compute_bound():
    _, _, r = _llama_8b(seq=128, batch=4096)
    assert r.decode_bound == "compute"


def test_sliding_windows_and_mla_in_the_attention_term():
    gemma = get_preset("gemma-2-9b")  # 21 local layers (window 4096) + 21 global
    full, window = 10000 * 10001 // 2, 4096 * 4097 // 2 + (10000 - 4096) * 4096
    assert causal_pairs(gemma, 10000) == 21 * full + 21 * window
    assert causal_pairs(gemma, 1000) == 42 * (1000 * 1001 // 2)  # window longer than the sequence
    v3 = get_preset("deepseek-v3")
    assert attention_pair_flops(v3) == 2 * 128 * (192 + 128)
