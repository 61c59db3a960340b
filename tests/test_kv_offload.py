"""The host KV pool (``core.engine.offload``): its tokens by hand per engine, the load time over the host link, the
refusals, and the host layout's block bytes against the vLLM blog's published table."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mha_cli.core.deployment import merge_deployment
from mha_cli.core.engine.offload import HOST_DMA_SHARE, host_pool, transfer_seconds
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import plan_memory
from mha_cli.core.presets import get_preset
from mha_cli.core.targets import resolve_target

GIB = 2**30
PUBLISHED = yaml.safe_load((Path(__file__).parent / "fixtures" / "kv_offload_published.yaml").read_text())


def engine_plan(engine: str | None = None, *, tp: int = 1, model: str = "llama-3.1-8b", target: str = "h100"):
    spec = get_preset(model)
    deployment = merge_deployment(None, model=spec, seq_len=8192, tp=tp, engine=engine)
    kv = kv_footprint(spec, seq_len=8192, tp=tp)
    return plan_memory(resolve_target(f"{tp}x{target}"), model=spec, kv=kv, weight_dtype="bf16",
                       deployment=deployment).engine  # fmt: skip


def test_vllm_host_pool_by_hand():
    """Llama-3.1-8B in bf16: 131,072 B a token; a 16-token block of every layer is 2,097,152 B (2 MiB, a whole number
    of 4,096-B pages); 64 GiB / 2 MiB = 32,768 blocks = 524,288 tokens, all of the 64 GiB."""
    pool = host_pool(engine_plan(), asked_bytes_per_rank=64 * GIB, workers=1, target_id="h100-sxm", prefix_caching=True)
    assert pool.bytes_per_token == 131_072 and pool.block_tokens == 16
    assert (pool.host_blocks, pool.host_tokens, pool.host_bytes_per_rank) == (32_768, 524_288, 64 * GIB)
    assert pool.flags == ["--kv-offloading-size", "64", "--kv-offloading-backend", "native"]
    assert pool.host_tokens > pool.gpu_tokens  # the second pool is beside the GPU's, not in it


def test_vllm_size_counts_every_worker():
    """tp 2: 4 of the 8 KV heads a rank, 65,536 B a token, 1 MiB a block; vLLM's size is summed over the 2 workers
    (128 GiB) and cut into chunks of one block on each (2 MiB): 65,536 chunks = 1,048,576 tokens on each rank."""
    pool = host_pool(engine_plan(tp=2), asked_bytes_per_rank=64 * GIB, workers=2, target_id="h100-sxm",
                     prefix_caching=True)  # fmt: skip
    assert pool.bytes_per_token == 65_536
    assert (pool.host_blocks, pool.host_tokens) == (65_536, 1_048_576)
    assert pool.flags[:2] == ["--kv-offloading-size", "128"]


def test_sglang_takes_whole_gb_per_rank():
    """64 GiB = 68.7 GB: --hicache-size 68; 68 x 10^9 // 131,072 = 518,798 tokens, + 1 page of 1 token = 518,799."""
    pool = host_pool(engine_plan("sglang"), asked_bytes_per_rank=64 * GIB, workers=1, target_id="h100-sxm",
                     prefix_caching=True)  # fmt: skip
    assert pool.flags == ["--enable-hierarchical-cache", "--hicache-size", "68"]
    assert pool.host_tokens == 68 * 10**9 // 131_072 + 1 == 518_799


def test_trtllm_blocks_of_32():
    """The PyTorch backend's 32-token blocks: 4 MiB each, 64 GiB / 4 MiB = 16,384 blocks = 524,288 tokens."""
    pool = host_pool(engine_plan("trtllm"), asked_bytes_per_rank=64 * GIB, workers=1, target_id="h100-sxm",
                     prefix_caching=True)  # fmt: skip
    assert (pool.block_tokens, pool.host_blocks, pool.host_tokens) == (32, 16_384, 524_288)
    assert pool.flags == [f"kv_cache_config: {{host_cache_size: {64 * GIB}}}"]


def test_load_time_over_pcie5_by_hand():
    """A 4,096-token prefix of Llama-3.1-8B: 4,096 x 131,072 B = 536,870,912 B over PCIe 5.0's 63 GB/s = 8.52 ms;
    priced at the ~50 GB/s a copy reaches (HOST_DMA_SHARE): 10.74 ms."""
    assert transfer_seconds(4096, 131_072, 63.0) == pytest.approx(536_870_912 / 63e9) == pytest.approx(8.5218e-3, 1e-4)
    pool = host_pool(engine_plan(), asked_bytes_per_rank=64 * GIB, workers=1, target_id="h100-sxm", prefix_caching=True)
    assert (pool.link, pool.link_gbs) == ("pcie5", 63.0)
    assert (
        pool.load_seconds(4096) == pytest.approx(536_870_912 / (63e9 * HOST_DMA_SHARE)) == pytest.approx(10.74e-3, 1e-3)
    )


def test_refusals_are_one_line():
    with pytest.raises(BadInputError, match="vLLM V0 has no KV offload"):
        host_pool(engine_plan("vllm@0.7"), asked_bytes_per_rank=GIB, workers=1, target_id="h100-sxm",
                  prefix_caching=True)  # fmt: skip
    sglang = engine_plan("sglang")
    with pytest.raises(BadInputError, match="must be larger than the device pool"):  # 5 GB: 38,148 tokens
        host_pool(sglang, asked_bytes_per_rank=5 * GIB, workers=1, target_id="h100-sxm", prefix_caching=True)
    with pytest.raises(BadInputError, match="whole GB"):
        host_pool(sglang, asked_bytes_per_rank=GIB // 2, workers=1, target_id="h100-sxm", prefix_caching=True)


def test_host_tier_without_the_prefix_cache_is_named():
    """SGLang's HiCache and TensorRT-LLM's secondary pool keep what the prefix cache would: off, they hold nothing."""
    pool = host_pool(engine_plan("trtllm"), asked_bytes_per_rank=GIB, workers=1, target_id="h100-sxm",
                     prefix_caching=False)  # fmt: skip
    assert any("holds nothing" in note for note in pool.notes)
    vllm = host_pool(engine_plan(), asked_bytes_per_rank=GIB, workers=1, target_id="h100-sxm", prefix_caching=False)
    assert not any("holds nothing" in note for note in vllm.notes)  # vLLM's needs no GPU prefix cache


@pytest.mark.parametrize("row", PUBLISHED["block_sizes"], ids=lambda row: row["model"])
def test_host_block_bytes_match_the_vllm_blog(row):
    """The host layout's block (one block of every layer on a rank) against the blog's "new block size" table;
    Qwen3-8B's published 1.97 MB is not what its config gives (36 layers x 8 KV heads x 128 x 2 x 2 B x 16 =
    2.25 MiB, the blog's own figure for Qwen3-4B, which has the same KV shape): kept as a known disagreement."""
    kv = kv_footprint(get_preset(row["preset"]), seq_len=4096, tp=row["tp"])
    predicted = row["block"] * kv.bytes_per_token_per_rank / 2**20
    if row["model"] == "qwen3-8b":
        assert predicted == 2.25 and row["new_mib"] == 1.97
        return
    assert predicted == pytest.approx(row["new_mib"], abs=0.006)  # the post rounds to 2 decimals
