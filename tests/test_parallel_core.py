"""Per-rank weight counts under tensor parallelism (core, pure Python), against hand counts."""

from __future__ import annotations

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.params import count_params, params_per_rank, weight_params_per_device
from mha_cli.core.presets import get_preset, preset_names
from mha_cli.core.schemas import MLASpec, ModelSpec, MoESpec
from mha_cli.core.tensor_parallel import padded_vocab, tp_shard_problem, vocab_rows_per_rank
from tests.spec_paths import copy_with

GQA = ModelSpec(d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, head_dim=8, vocab_size=1000, d_ff=256)


def test_gqa_tp2_splits_every_kv_head_block():
    q, kv, o = 64 * 4 * 8, 64 * 1 * 8, 4 * 8 * 64  # 4 query heads and 1 KV head per rank
    mlp = 3 * 64 * 128  # gate, up, down at d_ff / 2
    layer = q + 2 * kv + o + mlp + 2 * 64  # + two RMSNorms
    # vocab 1000 padded to 1024 (a multiple of 64), 512 rows of the embedding and of the head per rank
    assert params_per_rank(GQA, 2) == 2 * layer + 2 * 512 * 64 + 64  # untied embedding + head, final norm


def test_gqa_tp4_replicates_kv_heads():
    q, kv, o = 64 * 2 * 8, 64 * 1 * 8, 2 * 8 * 64  # 2 KV heads over 4 ranks: one whole head per rank
    mlp = 3 * 64 * 64
    layer = q + 2 * kv + o + mlp + 2 * 64
    assert params_per_rank(GQA, 4) == 2 * layer + 2 * 256 * 64 + 64


def test_biases_split_with_their_columns_and_o_bias_replicated():
    model = copy_with(GQA, {"attention.qkv_bias": True, "attention.o_bias": True, "block.mlp_bias": True})
    weights = params_per_rank(GQA, 2)
    biases = 2 * ((4 * 8 + 2 * 8) + 64 + (2 * 128 + 64))  # q,k,v split; o whole; gate/up split, down whole
    assert params_per_rank(model, 2) == weights + biases


def test_mla_replicates_the_latent_projections():
    mla = MLASpec(kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, q_lora_rank=24)
    model = ModelSpec(d_model=64, n_layers=1, n_heads=4, mla=mla, vocab_size=100, d_ff=128, tied_embeddings=True)
    q = 64 * 24 + 24 + 24 * (2 * 24)  # q_a (replicated) + its norm + q_b for 2 of 4 heads (qk_head_dim 24)
    kv = 64 * (32 + 8) + 32 + 32 * 2 * (16 + 16)  # kv_a with the rope key + its norm (replicated) + kv_b, 2 heads
    o = 2 * 16 * 64
    expected = q + kv + o + 3 * 64 * 64 + 2 * 64 + 64 * 64 + 64  # MLP d_ff / 2, norms, tied 128 / 2 rows, final norm
    assert params_per_rank(model, 2) == expected


def test_moe_splits_every_expert_and_replicates_the_router():
    moe = MoESpec(n_experts=4, n_active_experts=2, n_shared_experts=1, d_ff_expert=32, shared_expert_gate=True)
    model = copy_with(GQA, {"n_layers": 1, "block.moe": moe})
    attention = 64 * 4 * 8 + 2 * 64 * 8 + 4 * 8 * 64
    experts = 4 * 3 * 64 * 16 + 3 * 64 * 16  # 4 routed + 1 shared, each at width 32 / 2
    router = 64 * 4 + 64  # router + shared-expert gate, replicated
    assert params_per_rank(model, 2) == attention + experts + router + 2 * 64 + 2 * 512 * 64 + 64


@pytest.mark.parametrize("name", preset_names())
def test_tp1_is_the_whole_model(name):
    model = get_preset(name)
    assert params_per_rank(model, 1, vocab_padding=1) == count_params(model).total


def test_split_parts_add_up_to_the_whole_model():
    unpadded = copy_with(GQA, {"embeddings.vocab_size": 1024})  # a multiple of 64: padding adds nothing
    whole = count_params(unpadded).total
    replicated = 64 + 2 * 2 * 64  # final norm, the layers' norms
    assert 2 * params_per_rank(unpadded, 2) - replicated == whole


def test_vocab_padding_follows_vllm():
    assert padded_vocab(128_256) == 128_256  # Llama 3: 2004 x 64 already
    assert padded_vocab(50_257) == 50_304  # GPT-2
    assert padded_vocab(151_936) == 151_936 and padded_vocab(152_064) == 152_064  # Qwen
    assert vocab_rows_per_rank(128_256, 8) == 16_032
    assert vocab_rows_per_rank(50_257, 1) == 50_304
    assert vocab_rows_per_rank(1000, 3) == 342  # ceil(1024 / 3): vLLM itself requires tp to divide it


def test_llama_3_8b_at_tp4_weights_per_rank_by_hand():
    """Llama-3-8B (4096 x 32, 32/8 heads of 128, d_ff 14336, vocab 128256 untied) on each of 4 ranks."""
    q = o = 4096 * 8 * 128  # 8 of 32 query heads
    k = v = 4096 * 2 * 128  # 2 of 8 KV heads
    mlp = 3 * 4096 * (14336 // 4)
    layer = q + k + v + o + mlp + 2 * 4096
    embedding_and_head = 2 * (128_256 // 4) * 4096  # 32,064 rows of each
    expected = 32 * layer + embedding_and_head + 4096
    assert expected == 2_007_764_992
    assert params_per_rank(get_preset("llama-3-8b"), 4) == expected
    assert weight_params_per_device(get_preset("llama-3-8b"), 4) * 2 == 4_015_529_984  # bf16: 3.74 GiB


def test_llama_3_70b_at_tp8_weights_per_rank_by_hand():
    """Llama-3-70B (8192 x 80, 64/8 heads of 128, d_ff 28672, vocab 128256 untied) on each of 8 ranks."""
    q = o = 8192 * 8 * 128  # 8 of 64 query heads
    k = v = 8192 * 1 * 128  # 1 of 8 KV heads
    mlp = 3 * 8192 * (28672 // 8)
    layer = q + k + v + o + mlp + 2 * 8192
    embedding_and_head = 2 * 16_032 * 8192
    expected = 80 * layer + embedding_and_head + 8192
    assert expected == 8_820_367_360
    assert params_per_rank(get_preset("llama-3-70b"), 8) == expected
    replicated_head = 80 * layer + 2 * 128_256 * 8192 + 8192  # the old layout: embedding and head on every rank
    assert replicated_head - expected == 2 * (128_256 - 16_032) * 8192  # 1.84e9 weights (3.4 GiB bf16) saved


def test_refuses_a_tp_that_does_not_divide():
    assert "n_heads (8) must be divisible by tp (3)" in tp_shard_problem(GQA, 3)
    assert "d_ff (100)" in tp_shard_problem(copy_with(GQA, {"block.d_ff": 100}), 8)
    with pytest.raises(BadInputError, match="tp \\(8\\) must be a multiple"):
        params_per_rank(ModelSpec(d_model=48, n_layers=1, n_heads=24, n_kv_heads=3, vocab_size=10, d_ff=48), 8)


def test_gpt2_at_tp2_pads_its_vocabulary_by_hand():
    """GPT-2 small (768 x 12, 12 MHA heads, plain MLP of 3,072, biases, LayerNorm, tied 50,257-token vocabulary,
    1,024 learned positions) on each of 2 ranks: the vocabulary padded to 50,304, 25,152 rows per rank."""
    q_k_v = 3 * 768 * 384 + 3 * 384  # 6 of 12 heads, with their biases
    o = 384 * 768 + 768  # its input rows; the bias whole (added once after the all-reduce)
    mlp = 768 * 1536 + 1536 + 1536 * 768 + 768  # up (and bias) split, down split, its bias whole
    layer = q_k_v + o + mlp + 2 * 2 * 768  # two LayerNorms, weight and bias
    expected = 12 * layer + 25_152 * 768 + 1024 * 768 + 2 * 768  # tied embedding rows, positions, final norm
    assert expected == 62_659_584
    assert params_per_rank(get_preset("gpt2"), 2) == expected
    assert (
        params_per_rank(get_preset("gpt2"), 2, vocab_padding=1) == expected - (25_152 - 25_129) * 768
    )  # ceil(50,257/2)
