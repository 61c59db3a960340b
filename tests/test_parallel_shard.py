"""``shard_state_dict`` against transformers' own modules: the sum of the rank shards' outputs (what the
all-reduce computes) equals the whole module's output, for attention (GQA split and replicated, MQA),
MLA, the dense MLP and a fused-expert MoE block. Each shard is a transformers module built with the
rank's head count or width and loaded with the sliced weights, so the layout is checked by a peer."""

from __future__ import annotations

import pytest
import torch
from transformers import DeepseekV3Config, LlamaConfig, Qwen3MoeConfig
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaMLP, LlamaRotaryEmbedding
from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

from mha_cli.core.schemas import MLASpec, ModelSpec, MoESpec
from mha_cli.core.tensor_parallel import kv_head_range
from mha_cli.nn.tensor_parallel import seeded_tensor, shard_state_dict

D = 64


def _sharded_sum(make, prefix: str, spec: ModelSpec, tp: int, run) -> tuple[torch.Tensor, torch.Tensor]:
    """(whole module's output, sum over ranks of each shard's output), weights named ``prefix + name``."""
    torch.manual_seed(0)
    whole = make(None)
    full = {prefix + name: tensor for name, tensor in whole.state_dict().items()}
    parts = []
    for rank in range(tp):
        shard = make(rank)
        sliced = shard_state_dict(full, spec, rank, tp)
        shard.load_state_dict({name.removeprefix(prefix): t for name, t in sliced.items()}, strict=True)
        parts.append(run(shard))
    return run(whole), torch.stack(parts).sum(0)


@pytest.mark.parametrize(
    ("n_kv", "tp"), [(2, 2), (2, 4), (1, 2), (8, 4)], ids=["gqa-split", "gqa-replicated", "mqa", "mha"]
)
def test_attention_shards_sum_to_the_whole(n_kv, tp):
    spec = ModelSpec(d_model=D, n_layers=1, n_heads=8, n_kv_heads=n_kv, head_dim=8, vocab_size=10, d_ff=128)
    first, last = kv_head_range(n_kv, 0, tp)

    def make(rank):
        heads, kv = (8, n_kv) if rank is None else (8 // tp, last - first)
        config = LlamaConfig(hidden_size=D, num_attention_heads=heads, num_key_value_heads=kv, head_dim=8)
        config._attn_implementation = "eager"
        return LlamaAttention(config, layer_idx=0).eval()

    x = torch.randn(2, 5, D)  # (b, s, d)
    rope = LlamaRotaryEmbedding(LlamaConfig(hidden_size=D, num_attention_heads=8, head_dim=8))
    position = rope(x, torch.arange(5)[None])

    def run(module):
        return module(x, position_embeddings=position, attention_mask=None)[0].detach()  # (b, s, d)

    whole, summed = _sharded_sum(make, "model.layers.0.self_attn.", spec, tp, run)
    torch.testing.assert_close(summed, whole, rtol=1e-5, atol=1e-5)


def test_a_wrong_kv_head_breaks_the_sum():
    """Control: giving rank 0 the KV head of the last ranks (as a wrong replication rule would) changes the output."""
    spec = ModelSpec(d_model=D, n_layers=1, n_heads=8, n_kv_heads=2, head_dim=8, vocab_size=10, d_ff=128)
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=D, num_attention_heads=8, num_key_value_heads=2, head_dim=8)
    config._attn_implementation = "eager"
    whole = LlamaAttention(config, layer_idx=0).eval()
    full = {"model.layers.0.self_attn." + name: tensor for name, tensor in whole.state_dict().items()}
    x = torch.randn(1, 5, D)
    position = LlamaRotaryEmbedding(config)(x, torch.arange(5)[None])
    shard_config = LlamaConfig(hidden_size=D, num_attention_heads=2, num_key_value_heads=1, head_dim=8)
    shard_config._attn_implementation = "eager"
    total = 0
    for rank in range(4):
        sliced = shard_state_dict(full, spec, rank, 4)
        if rank == 0:  # swap in rank 3's KV head
            wrong = shard_state_dict(full, spec, 3, 4)
            for name in sliced:
                if ".k_proj." in name or ".v_proj." in name:
                    sliced[name] = wrong[name]
        shard = LlamaAttention(shard_config, layer_idx=0).eval()
        shard.load_state_dict({n.removeprefix("model.layers.0.self_attn."): t for n, t in sliced.items()})
        total = total + shard(x, position_embeddings=position, attention_mask=None)[0].detach()
    assert not torch.allclose(total, whole(x, position_embeddings=position, attention_mask=None)[0], atol=1e-3)


def test_replicated_kv_heads_go_to_consecutive_ranks():
    assert [kv_head_range(2, rank, 8) for rank in range(8)] == [(0, 1)] * 4 + [(1, 2)] * 4
    assert [kv_head_range(8, rank, 4) for rank in range(4)] == [(0, 2), (2, 4), (4, 6), (6, 8)]


@pytest.mark.parametrize("tp", [2, 4])
def test_mlp_shards_sum_to_the_whole(tp):
    spec = ModelSpec(d_model=D, n_layers=1, n_heads=8, vocab_size=10, d_ff=128)

    def make(rank):
        return LlamaMLP(LlamaConfig(hidden_size=D, intermediate_size=128 if rank is None else 128 // tp))

    x = torch.randn(2, 5, D)
    whole, summed = _sharded_sum(make, "model.layers.0.mlp.", spec, tp, lambda m: m(x).detach())
    torch.testing.assert_close(summed, whole, rtol=1e-5, atol=1e-5)


def test_fused_expert_shards_sum_to_the_whole():
    tp = 2
    moe = MoESpec(n_experts=4, n_active_experts=2, d_ff_expert=32)
    spec = ModelSpec(d_model=D, n_layers=1, n_heads=8, vocab_size=10, d_ff=128, moe=moe)

    def make(rank):
        width = 32 if rank is None else 32 // tp
        config = Qwen3MoeConfig(hidden_size=D, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=width)
        block = Qwen3MoeSparseMoeBlock(config)
        for name, param in block.named_parameters():  # transformers leaves the fused experts uninitialised
            param.data.copy_(seeded_tensor(name, param.shape, 0) if rank is None else param.data)
        return block.eval()

    x = torch.randn(2, 5, D)
    whole, summed = _sharded_sum(make, "model.layers.0.mlp.", spec, tp, lambda m: m(x).detach())
    torch.testing.assert_close(summed, whole, rtol=1e-5, atol=1e-5)


def test_mla_shards_sum_to_the_whole():
    tp = 2
    mla = MLASpec(kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, q_lora_rank=24)
    spec = ModelSpec(d_model=D, n_layers=1, n_heads=4, mla=mla, vocab_size=10, d_ff=128)
    shape = {"hidden_size": D, "q_lora_rank": 24, "kv_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
             "v_head_dim": 16}  # fmt: skip

    def make(rank):
        heads = 4 if rank is None else 4 // tp
        config = DeepseekV3Config(num_attention_heads=heads, num_key_value_heads=heads, **shape)
        config._attn_implementation = "eager"
        return DeepseekV3Attention(config, layer_idx=0).eval()

    x = torch.randn(2, 5, D)
    rope = DeepseekV3RotaryEmbedding(DeepseekV3Config(num_attention_heads=4, **shape))
    position = rope(x, torch.arange(5)[None])

    def run(module):
        return module(x, position_embeddings=position, attention_mask=None)[0].detach()

    whole, summed = _sharded_sum(make, "model.layers.0.self_attn.", spec, tp, run)
    torch.testing.assert_close(summed, whole, rtol=1e-5, atol=1e-5)


def test_replicated_names_and_seeded_weights():
    spec = ModelSpec(d_model=D, n_layers=1, n_heads=8, vocab_size=10, d_ff=128)
    full = {
        name: seeded_tensor(name, (D,), 7) for name in ("model.layers.0.input_layernorm.weight", "model.norm.weight")
    }
    for rank in range(4):
        assert all(torch.equal(t, full[n]) for n, t in shard_state_dict(full, spec, rank, 4).items())
    assert torch.equal(seeded_tensor("a", (3, 4), 7), seeded_tensor("a", (3, 4), 7))
    assert not torch.equal(seeded_tensor("a", (3, 4), 7), seeded_tensor("b", (3, 4), 7))
    assert seeded_tensor("model.norm.weight", (D,), 7).mean().item() == pytest.approx(1, abs=0.1)


@pytest.mark.parametrize("name", ["model.embed_tokens.weight", "lm_head.weight"])
def test_vocab_blocks_stack_to_the_padded_whole(name):
    """vocab 100 padded to 128 (vLLM's multiple of 64): 4 ranks of 32 rows; the last 28 rows are zeros."""
    spec = ModelSpec(d_model=D, n_layers=1, n_heads=8, vocab_size=100, d_ff=128)
    whole = seeded_tensor(name, (100, D), 7)
    blocks = [shard_state_dict({name: whole}, spec, rank, 4)[name] for rank in range(4)]
    assert [tuple(block.shape) for block in blocks] == [(32, D)] * 4
    stacked = torch.cat(blocks)  # (128, D)
    assert torch.equal(stacked[:100], whole) and not stacked[100:].any()
