"""The real vLLM's sliding-window runs on this CPU (``benchmarks/vllm_cpu/results``, ``window_eval.py``): the
simulated loop with ``core.serve.window_blocks`` runs as many requests at once as the server's gauge showed, and the
old count (a block of tokens in every group) runs fewer: it must lose."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmark_modules import BENCHMARKS, load_benchmark

window_eval = load_benchmark("vllm_cpu/window_eval")
RUNS = window_eval.window_runs()


def test_both_pools_were_run():
    assert sorted(entry["kv_blocks_override"] for entry in RUNS) == [120, 200]
    assert all((BENCHMARKS / "vllm_cpu" / "results" / entry["file"]).exists() for entry in RUNS)


@pytest.mark.parametrize("entry", RUNS, ids=lambda entry: Path(entry["file"]).stem)
def test_the_rule_runs_what_the_server_ran_and_the_old_count_fewer(entry):
    _, sims, engine = window_eval.simulated(entry)
    measured = entry["running_sampled"]["max"]
    rule, old = sims[window_eval.WAYS[0]], sims[window_eval.WAYS[1]]
    assert rule.max_running == measured  # 5 on 200 blocks, 3 on 120
    assert rule.preemptions == entry["metrics_delta"]["vllm:num_preemptions_total"] == 0
    assert old.max_running == 1 < measured
    assert [group.kind for group in engine.groups].count("sliding") == 7
