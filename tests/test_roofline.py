"""Roofline bounds against hand arithmetic from the H100 datasheet figures."""

import pytest

from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import plan_memory
from mha_cli.core.params import count_params
from mha_cli.core.presets import get_preset
from mha_cli.core.roofline import attention_pair_flops, causal_pairs, estimate_roofline, experts_touched
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import resolve_target

H100_BANDWIDTH = 3350e9  # B/s, datasheet
H100_BF16 = 989.4e12  # dense FLOP/s
LLAMA_3_8B_PARAMS = 8_030_261_248
LLAMA_3_8B_KV_PER_TOKEN = 131_072  # 32 layers x 2 x 8 KV heads x 128 x 2 B
LLAMA_3_8B_EMBEDDING = 128_256 * 4096  # the untied input embedding: a step reads only its tokens' rows


def llama_weights_read(tokens: int) -> int:
    """bf16 bytes a Llama-3-8B forward over ``tokens`` tokens reads: every matrix, embedding rows only."""
    return 2 * (LLAMA_3_8B_PARAMS - LLAMA_3_8B_EMBEDDING + tokens * 4096)


def roofline(model, seq=8192, batch=1, tp=1, target="h100", mla_cache="absorbed"):
    resolved = resolve_target(target)
    params = count_params(model)
    kv = kv_footprint(model, seq_len=seq, batch=batch, tp=tp, mla_cache=mla_cache)
    plan = plan_memory(resolved, model=model, weight_dtype="bf16", kv=kv)
    return params, estimate_roofline(model, resolved, params=params, weight_dtype="bf16", kv=kv, plan=plan)


def test_decode_is_memory_bound_weights_plus_cache_over_bandwidth():
    _, r = roofline(get_preset("llama-3-8b"))
    expected_bytes = llama_weights_read(1) + LLAMA_3_8B_KV_PER_TOKEN * 8192
    assert r.decode_bytes_per_step == expected_bytes == 16_083_599_360
    assert r.decode_bound == "memory"
    assert r.decode_step_s == pytest.approx(expected_bytes / H100_BANDWIDTH)  # ~5.11 ms
    assert r.decode_tokens_per_s == pytest.approx(1 / r.decode_step_s)


def test_prefill_is_compute_bound_params_plus_causal_attention():
    params, r = roofline(get_preset("llama-3-8b"))
    attention = 32 * (8192 * 8193 // 2) * 2 * 32 * (128 + 128)
    head = 128_256 * 4096  # the output head multiplies the last token only (trial 246: it counted all 8,192)
    assert params.embeddings - params.lookup_tables == head
    assert r.prefill_flops == 2 * (params.active - head) * 8192 + 2 * head + attention
    assert r.prefill_bound == "compute"
    assert r.prefill_s == pytest.approx(r.prefill_flops / H100_BF16)


def test_tensor_parallel_divides_bytes_and_multiplies_flops():
    _, one = roofline(get_preset("llama-3-8b"), batch=8)
    _, eight = roofline(get_preset("llama-3-8b"), batch=8, tp=8, target="8xh100")
    assert eight.decode_bytes_per_step == -(-llama_weights_read(8) // 8) + 8 * 8192 * LLAMA_3_8B_KV_PER_TOKEN // 8
    assert eight.prefill_s == pytest.approx(one.prefill_s / 8)


def test_replicas_each_read_their_share_of_the_batch():
    # 8 x H100, tp 1: 8 replicas, 64 sequences -> 8 per device; the bug read all 64 caches on one device.
    _, r = roofline(get_preset("llama-3-8b"), seq=32768, batch=64, target="8xh100")
    assert (r.tp, r.replicas, r.sequences_per_replica) == (1, 8, 8)
    assert r.decode_bytes_per_step == llama_weights_read(8) + 8 * 32768 * LLAMA_3_8B_KV_PER_TOKEN == 49_369_653_248
    assert r.decode_tokens_per_s == pytest.approx(64 / r.decode_step_s)


def test_large_batches_turn_decode_compute_bound():
    _, r = roofline(get_preset("llama-3-8b"), seq=128, batch=4096)
    assert r.decode_bound == "compute"


def test_sliding_windows_and_mla_in_the_attention_term():
    gemma = get_preset("gemma-2-9b")  # 21 local layers (window 4096) + 21 global
    full, window = 10000 * 10001 // 2, 4096 * 4097 // 2 + (10000 - 4096) * 4096
    assert causal_pairs(gemma, 10000) == 21 * full + 21 * window
    assert causal_pairs(gemma, 1000) == 42 * (1000 * 1001 // 2)  # window longer than the sequence


def test_mla_decode_is_absorbed_prefill_naive_deepseek_v3():
    v3 = get_preset("deepseek-v3")  # 128 heads, latent 512, RoPE 64, nope 128, v 128, 61 layers
    assert attention_pair_flops(v3) == 2 * 128 * (192 + 128) == 81_920
    assert attention_pair_flops(v3, absorbed=True) == 2 * 128 * (2 * 512 + 64) == 278_528
    params, absorbed = roofline(v3, seq=4096, tp=8, target="8xh200")
    assert absorbed.decode_flops_per_step - 2 * params.active == 278_528 * 61 * 4096
    head = 129_280 * 7168  # DeepSeek-V3's output head, the last token's only
    assert absorbed.prefill_flops - 2 * (params.active - head) * 4096 - 2 * head == 81_920 * 61 * (4096 * 4097 // 2)
    _, naive = roofline(v3, seq=4096, tp=8, target="8xh200", mla_cache="naive")
    assert naive.decode_flops_per_step - 2 * params.active == 81_920 * 61 * 4096


def test_moe_decode_reads_only_the_experts_its_tokens_route_to():
    assert experts_touched(8, 2, 1) == 2
    assert experts_touched(8, 2, 4) == pytest.approx(8 * (1 - 0.75**4))  # 5.46875
    v3 = get_preset("deepseek-v3")  # 58 MoE layers, 256 routed experts top-8, expert 3 x 7168 x 2048
    expert = 3 * 7168 * 2048
    params, r = roofline(v3, seq=4096, tp=8, target="8xh200")
    assert r.experts_read_per_layer == pytest.approx(8)  # one token picks 8 distinct experts
    unread = 58 * (256 - 8) * expert + 129_280 * 7168 - 7168  # + the embedding but this token's row
    assert r.decode_weight_bytes_per_step == pytest.approx(-(-2 * (params.total - unread) // 8), abs=8)


def test_tiny_moe_by_hand():
    model = ModelSpec(
        d_model=64, n_layers=2, n_heads=4, vocab_size=100, d_ff=128,
        moe=dict(n_experts=8, n_active_experts=2, d_ff_expert=32),
    )  # fmt: skip
    expert = 3 * 64 * 32  # gated: gate, up, down
    params, one = roofline(model, seq=16, batch=1)
    embedding_unread = 100 * 64 - 64  # untied input embedding: one token's row is read
    assert one.decode_weight_bytes_per_step == 2 * (params.total - 2 * 6 * expert - embedding_unread)  # 6 of 8 unread
    _, four = roofline(model, seq=16, batch=4)
    unread = 2 * (8 - 8 * (1 - 0.75**4)) * expert + 100 * 64 - 4 * 64
    assert four.decode_weight_bytes_per_step == pytest.approx(2 * (params.total - unread), abs=1)


def test_chunked_layers_attend_within_their_chunk_llama_4_scout():
    """Llama 4 Scout: 12 global layers and 36 chunked ones (chunk 8,192): a new token at 128K attends to 131,072
    tokens in each global layer and to the 8,192 its chunked layers hold; a prefill's chunked query i sees its
    chunk up to itself, 16 whole chunks of 8,192 x 8,193 / 2 pairs."""
    from mha_cli.core.roofline import attended_tokens, causal_pairs

    scout = get_preset("llama-4-scout")
    assert (scout.n_global_layers, scout.count_layers("chunked"), scout.layers.attention_chunk) == (12, 36, 8192)
    assert attended_tokens(scout, 131072) == 12 * 131072 + 36 * 8192
    assert causal_pairs(scout, 131072) == 12 * (131072 * 131073 // 2) + 36 * 16 * (8192 * 8193 // 2)
    assert causal_pairs(scout, 10000) == 12 * (10000 * 10001 // 2) + 36 * (8192 * 8193 // 2 + 1808 * 1809 // 2)
