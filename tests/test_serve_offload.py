"""Prefix tiers in the serving simulator (``core.serve.offload``): several shared prefixes cycling through a GPU pool
too small for them, with and without a host tier; hand-sized cases on a step cost that records every chunk."""

from __future__ import annotations

import pytest

from mha_cli.core.serve.offload import PrefixTiers
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.workload import Workload


class Recording:
    """1 ms a step; records every prefill chunk as (tokens, context before it)."""

    pp = 1  # one pipeline stage: the serial loop (core.serve.pipelined runs pp > 1)

    def __init__(self) -> None:
        self.chunks: list[tuple[int, int]] = []

    def seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        self.chunks += chunks
        return 1e-3

    def decode_seconds(self, rows: int, context: int) -> float:
        return 1e-3


LOAD = 1e-6
"""Seconds a token takes to come back from the host in these cases."""


def run(*, blocks: int = 80, host_blocks: int = 0, groups: int = 3, engine: str = "vllm", caching: bool = True,
        block: int = 16, count: int = 6):  # fmt: skip
    """``count`` requests of 1,000 prompt + 2 output tokens, one at a time, carrying ``groups`` prefixes of 512
    tokens in turn, on a pool of ``blocks`` blocks of 16."""
    limits = EngineLimits(engine=engine, kv_blocks=blocks, block_size=block, max_num_batched_tokens=8192,
                          max_num_seqs=64, prefix_caching=caching, host_blocks=host_blocks, load_s_per_token=LOAD)  # fmt: skip
    cost = Recording()
    workload = Workload([(1000, 2)] * count, max_concurrency=1, prefix_len=512, prefix_groups=groups)
    sim, _ = simulate(workload, limits, cost)
    return sim, cost.chunks


def test_a_cycle_larger_than_the_gpu_pool_finds_nothing_cached():
    """80 blocks of 16 (1,280 tokens) hold two 512-token prefixes beside nothing running: requests cycling through 3
    evict each prefix just before it is asked for again (LRU), so all 6 compute their whole prompt."""
    sim, chunks = run()
    assert chunks == [(1000, 0)] * 6 and sim.prefix_cache_hit_rate == 0 and sim.host_hit_rate == 0


def test_the_host_tier_serves_them_and_the_step_waits_for_the_load():
    """A host pool of 200 blocks (3,200 tokens) holds all 3 prefixes: the second round loads each (512 tokens) and
    computes the other 488; each load adds 512 x 1 us to its step."""
    plain, _ = run()
    sim, chunks = run(host_blocks=200)
    assert chunks == [(1000, 0)] * 3 + [(488, 512)] * 3
    assert sim.host_hit_rate == sim.prefix_cache_hit_rate == pytest.approx(3 * 512 / 6000)
    assert sim.duration_s == pytest.approx(plain.duration_s + 3 * 512 * LOAD)
    assert sim.steps == plain.steps


def test_a_host_pool_too_small_for_the_cycle_serves_nothing_either():
    """64 host blocks (1,024 tokens) hold two of the three prefixes: the cycle evicts each before its turn."""
    sim, chunks = run(host_blocks=64)
    assert chunks == [(1000, 0)] * 6 and sim.host_hit_rate == 0


def test_the_control_a_gpu_pool_that_holds_every_prefix_gains_nothing_from_the_host():
    """1,000 blocks hold all three prefixes: the second round hits on the GPU, with or without a host tier, and the
    runs are the same to the step."""
    without, chunks = run(blocks=1000)
    with_host, chunks_host = run(blocks=1000, host_blocks=200)
    assert chunks == chunks_host == [(1000, 0)] * 3 + [(488, 512)] * 3
    assert with_host.host_hit_rate == 0
    assert with_host.duration_s == without.duration_s and with_host.ttft_ms == without.ttft_ms


def test_one_prefix_through_the_tiers_matches_the_single_prefix_path():
    """An independent path: one shared prefix, priced by the tiers (a host pool forces them) and by the scheduler's
    own single-prefix cache, on a pool that is not the limit: the same chunks."""
    tiered, chunks = run(blocks=1000, host_blocks=200, groups=1)
    single, single_chunks = run(blocks=1000, groups=1)
    assert chunks == single_chunks == [(1000, 0)] + [(488, 512)] * 5
    assert tiered.prefix_cache_hit_rate == single.prefix_cache_hit_rate


def test_without_the_gpu_prefix_cache_vllms_host_tier_still_serves_sglangs_does_not():
    """vLLM's offload stores every computed block whatever the GPU cache does; SGLang's HiCache extends its radix
    cache (the plan gives it no host tier with the cache off: ``offload_limits``)."""
    _, vllm = run(blocks=1000, host_blocks=200, caching=False)
    assert vllm == [(1000, 0)] * 3 + [(488, 512)] * 3  # from the host: 3 loads
    _, sglang = run(blocks=16_000, caching=False, engine="sglang", block=1)
    assert sglang == [(1000, 0)] * 6


def test_the_gpu_tier_never_evicts_a_prefix_running_requests_link():
    """Prefixes 0 then 1 (64 tokens = 4 blocks of 16 each) are cached, 8 blocks; prefix 0 is the least recently used
    but a running request links it. Request 2 (prefix 2) looks up with room for 4 blocks (none free, the 4 that
    request links): only prefix 1 can go, so prefix 0 stays (evicting the least recently used would drop prefix 0,
    which vLLM's ``ref_cnt > 0`` and SGLang's ``lock_ref > 0`` forbid) and request 3 (prefix 0) finds its 64."""
    tiers = PrefixTiers(prefix_len=64, groups=3, block_size=16, host_blocks=0, load_s_per_token=0.0, gpu_caching=True)
    tiers.store(0, 64)
    tiers.store(1, 64)
    assert tiers.lookup(2, 992, free_blocks=4, in_use=frozenset({0})) == 0
    assert dict(tiers.gpu) == {0: 64} and tiers.gpu_tokens == 64
    assert tiers.lookup(3, 992, free_blocks=4, in_use=frozenset({0})) == 64
    # every cached prefix linked: nothing goes, even beyond the room (their blocks are the running requests')
    tiers.store(1, 64)
    assert tiers.lookup(2, 992, free_blocks=0, in_use=frozenset({0, 1})) == 0
    assert list(tiers.gpu) == [0, 1] and tiers.gpu_tokens == 128
    # nothing linked: the least recently used goes first, as before
    assert tiers.lookup(2, 992, free_blocks=4) == 0 and dict(tiers.gpu) == {1: 64}


def test_the_ttft_band_holds_the_host_tiers_load(cli):
    """Trial 289 #6: the band was the prefix-recomputed TTFT's ([28.1, 58.3] ms around 40.5), the 8.05 ms load from the
    host tier added to the point alone (48.5 ms); it is the band around the TTFT with its load."""
    found = cli.json("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--isl", "4096", "--osl", "256", "--rate",
                     "5", "--shared-prefix", "3072", "--shared-prefixes", "200", "--kv-offload-gib", "150",
                     "--closed-form")  # fmt: skip
    low, high = found["uncertainty"]["ttft_ms"]
    r = found["uncertainty"]["ttft_relative"]  # the TTFT's own held-out error (vLLM V1's, trial 404 #1)
    assert found["offload"]["regime"] == "host" and found["offload"]["load_ms"] > 8
    assert (low, high) == pytest.approx((found["ttft_ms"] / (1 + r), found["ttft_ms"] / (1 - r)))
