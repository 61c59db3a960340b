"""The real vLLM's sliding-window runs on this CPU (``benchmarks/vllm_cpu/results``, ``window_eval.py``): the
simulated loop with ``core.engine.window_blocks`` runs as many requests at once as the server's gauge showed, and the
old count (a block of tokens in every group) runs fewer: it must lose."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mha_cli.core.engine.window_blocks import admission_blocks, running_at_length, window_groups_of
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


@pytest.mark.parametrize("entry", RUNS, ids=lambda entry: Path(entry["file"]).stem)
def test_the_closed_forms_count_is_what_ran_and_the_logged_concurrency_less(entry):
    """`mha kv`'s requests at once for vLLM 0.19+ with windowed groups (``running_at_length``) at the run's lengths
    is what the server ran; the maximum concurrency the server logged (its start-up lines kept in the run's server
    log: 200 blocks 3.92x, 120 blocks 2.35x) is less, and is the pool over the sizer's blocks for 2,048 tokens."""
    run, _, engine = window_eval.simulated(entry)
    (prompt, output), usable = run.lengths[0], entry["kv_blocks_override"] - window_eval.NULL_BLOCKS
    groups = window_groups_of(engine.groups, engine.block_size, engine.max_model_len)
    running = running_at_length(groups, usable, prompt + output, engine.block_size, capped=True)
    assert running == entry["running_sampled"]["max"]
    log = (BENCHMARKS.parent / entry["server_log"]).read_text()
    logged = float(re.search(r"Maximum concurrency for 2,048 tokens per request: ([\d.]+)x", log).group(1))
    sizer = entry["kv_blocks_override"] / admission_blocks(groups, 2048, engine.block_size, capped=True)
    assert logged == pytest.approx(sizer, abs=0.005) and int(logged) < running
