"""``load_seeded_shard``: a rank's shard of the seed-derived weights written in place, a block of rows at a time,
equals ``shard_tensor`` of the whole seeded tensor (the layout the tp and pp checks compare against one device),
for every split the inventory uses, across block boundaries and the vocabulary's padding; and a rank draws only
the blocks its rows touch, which is what lets a 70B check stack fit a small host."""

from __future__ import annotations

import math
import zlib

import pytest
import torch

from mha_cli.core.schemas import MLASpec, ModelSpec, MoESpec
from mha_cli.nn import build_model
from mha_cli.nn import tensor_parallel as tensor_parallel_module
from mha_cli.nn.tensor_parallel import load_seeded_shard, seeded_blocks, seeded_tensor, shard_tensor

SPECS = {
    "gqa-kv-replicated": ModelSpec(d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, head_dim=8, vocab_size=100,
                                   d_ff=96),
    "moe-fused-experts": ModelSpec(d_model=32, n_layers=1, n_heads=4, vocab_size=70, d_ff=64,
                                   moe=MoESpec(n_experts=4, n_active_experts=2, d_ff_expert=16)),
    "mla": ModelSpec(d_model=32, n_layers=1, n_heads=4, vocab_size=70, d_ff=64,
                     mla=MLASpec(kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, q_lora_rank=12)),
}  # fmt: skip


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 40 elements, so every matrix here spans several blocks and ranks' rows straddle them."""
    monkeypatch.setattr(tensor_parallel_module, "SEED_BLOCK_ELEMENTS", 40)


@pytest.mark.parametrize("tp", [1, 2, 4])
@pytest.mark.parametrize("which", sorted(SPECS))
def test_a_filled_shard_equals_the_cut_of_the_whole(small_blocks, which, tp):
    spec = SPECS[which]
    whole = build_model(spec, device="meta")
    shapes = {name: tensor.shape for name, tensor in whole.state_dict().items()}
    for rank in range(tp):
        model = build_model(spec, dtype=torch.float32, tp_rank=rank, tp_size=tp)
        load_seeded_shard(model, shapes, spec, rank, tp, seed=5)
        for name, tensor in model.state_dict().items():
            expected = shard_tensor(name, seeded_tensor(name, shapes[name], 5), spec, rank, tp)
            assert torch.equal(tensor, expected), (which, tp, rank, name)


def test_one_block_is_drawn_as_the_single_draw_it_always_was():
    """Independent formula: N(0, 1) from the generator seeded seed * 2**32 + crc32(name), / sqrt(fan_in)."""
    name, shape = "model.layers.0.mlp.up_proj.weight", (48, 32)
    generator = torch.Generator().manual_seed(3 * 2**32 + zlib.crc32(name.encode()))
    by_hand = torch.randn(shape, generator=generator) / math.sqrt(32)
    assert torch.equal(seeded_tensor(name, shape, 3), by_hand)


def test_blocks_of_rows_are_the_rows_of_the_whole(small_blocks):
    shape = (23, 7)  # 5 rows a block: blocks end at rows 5, 10, 15, 20, 23
    whole = seeded_tensor("w", shape, 1)
    assert [first for first, _ in seeded_blocks("w", shape, 1)] == [0, 5, 10, 15, 20]
    for start, stop in [(0, 23), (3, 4), (4, 11), (10, 15), (19, 23)]:
        drawn = torch.cat([rows for _, rows in seeded_blocks("w", shape, 1, start, stop)])
        assert torch.equal(drawn, whole[start:stop]), (start, stop)
    assert not torch.equal(whole[:5], whole[5:10])  # each block from its own seed, not one block repeated


def test_a_vocabulary_rank_draws_only_its_blocks(small_blocks, monkeypatch):
    """vocab 100 over 4 ranks: 32 padded rows each; d 64 is one row a block, so rank 3 draws rows 96-99 only."""
    spec = SPECS["gqa-kv-replicated"]
    drawn: list[tuple[str, int]] = []
    real = tensor_parallel_module._seeded_values

    def counting(name, shape, block_shape, seed, index):
        drawn.append((name, index))
        return real(name, shape, block_shape, seed, index)

    monkeypatch.setattr(tensor_parallel_module, "_seeded_values", counting)
    head = torch.empty(32, 64)
    tensor_parallel_module.fill_seeded_shard(head, "lm_head.weight", (100, 64), spec, 3, 4, 0)
    assert drawn == [("lm_head.weight", index) for index in (96, 97, 98, 99)]
    assert not head[4:].any()  # the padding rows are zeros


def test_names_that_differ_are_refused():
    spec = SPECS["mla"]
    model = build_model(spec, dtype=torch.float32)
    shapes = {name: tensor.shape for name, tensor in model.state_dict().items()}
    shapes["model.layers.0.extra.weight"] = torch.Size([4])
    with pytest.raises(ValueError, match=r"missing \['model.layers.0.extra.weight'\]"):
        load_seeded_shard(model, shapes, spec, 0, 1, seed=0)


def test_empty_ranges_and_empty_tensors(small_blocks, monkeypatch):
    """A rank whose rows are all vocabulary padding draws nothing; a zero-row tensor's shard is cut as the whole's."""
    spec = ModelSpec(
        d_model=8, n_layers=1, n_heads=4, head_dim=2, vocab_size=48, d_ff=16
    )  # 5 rows a block; 16 a rank at tp 4
    drawn: list[int] = []
    real = tensor_parallel_module._seeded_values

    def counting(name, shape, block_shape, seed, index):
        drawn.append(index)
        return real(name, shape, block_shape, seed, index)

    monkeypatch.setattr(tensor_parallel_module, "_seeded_values", counting)
    padding_only = torch.full((16, 8), 7.0)
    tensor_parallel_module.fill_seeded_shard(padding_only, "lm_head.weight", (48, 8), spec, 3, 4, 0)
    assert drawn == [] and not padding_only.any()
    name = "model.layers.0.self_attn.o_proj.weight"  # split by rows (its last dim)
    empty = torch.empty(0, 4)
    tensor_parallel_module.fill_seeded_shard(empty, name, (0, 8), spec, 1, 2, 0)
    assert empty.shape == shard_tensor(name, seeded_tensor(name, (0, 8), 0), spec, 1, 2).shape == (0, 4)
