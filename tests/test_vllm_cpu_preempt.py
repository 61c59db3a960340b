"""The small-pool runs of the real vLLM 0.32 on this CPU (``benchmarks/vllm_cpu/run_grid.py --kv-blocks``), as
``benchmarks/vllm_cpu/preempt_eval.py`` reads them: the server's counters, scraped before and after each run, agree
with what the client recorded in the run's own file. No vLLM runs here and no fit: the figures are read from the
committed files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
_spec = importlib.util.spec_from_file_location("preempt_eval", ROOT / "benchmarks" / "vllm_cpu" / "preempt_eval.py")
preempt_eval = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(preempt_eval)

POOLS = preempt_eval.pool_runs()


def test_the_runs_are_pairs_of_the_same_load_with_the_cache_on_and_off():
    pairs = {}
    for pool in POOLS:
        load = (pool.run.max_concurrency, pool.kv_blocks, tuple(pool.run.lengths))
        pairs.setdefault(load, set()).add(pool.prefix_caching)
    assert pairs and all(caching == {True, False} for caching in pairs.values())


@pytest.mark.parametrize("pool", POOLS, ids=lambda pool: Path(pool.run.path).stem)
def test_the_servers_counters_agree_with_the_clients_file(pool):
    counters, run = pool.counters, pool.run
    prompts = sum(prompt for prompt, _ in run.lengths)
    outputs = sum(output for _, output in run.lengths)
    # every request finished at its length (--ignore-eos); the driver's warm-ups went before the first scrape
    assert counters["vllm:request_success_total"] == len(run.lengths)
    # vLLM counts a request's prompt and output tokens once, however often it was preempted and recomputed
    assert counters["vllm:prompt_tokens_total"] == prompts
    assert counters["vllm:generation_tokens_total"] == outputs
    # the pool was far too small: requests were preempted
    assert pool.preemptions == counters[preempt_eval.PREEMPTIONS] > 0
    # random prompts share no whole block, and 0.32 keeps a preempted request's re-hits out of these counters
    # (PrefixCacheStats.record(preempted=True)): nothing hit; with the cache off nothing was even looked up
    assert counters["vllm:prefix_cache_hits_total"] == 0
    if not pool.prefix_caching:
        assert counters["vllm:prefix_cache_queries_total"] == 0
    else:  # each new request counted once, its whole prompt: 0.32 records a lookup at admission (Scheduler.schedule)
        assert counters["vllm:prefix_cache_queries_total"] == prompts
