"""SGLang under a full queue of equal requests runs in waves (benchmarks/lockstep_itl.py, priors_2025.md sglh200):
prefill first (``managers/scheduler.py`` ``get_next_batch_to_run``), so a wave's prompts run one after another, then
the wave decodes together; a request's TPOT carries only the prompts after its own, (running - 1) / 2 on average."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.presets import get_preset
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload
from mha_cli.core.targets import load_targets


def test_a_full_queue_of_equal_requests_decodes_in_waves():
    profile = prior_profile(load_targets()["h100-sxm"])
    cost = StepCost(Stepper(ServingCase(model=get_preset("llama-3-8b"), isl=1, osl=1, concurrency=1), profile))
    isl, osl, running = 1000, 20, 4
    # one prompt a prefill step (budget = isl), 4 slots, 8 users queued: 16 requests, four waves of 4
    limits = EngineLimits("sglang", kv_blocks=100_000, block_size=1, max_num_batched_tokens=isl, max_num_seqs=running)
    run, times = simulate(Workload(lengths=[(isl, osl)] * 16, max_concurrency=8), limits, cost)
    prefill = cost.seconds(0, 0, [(isl, 0)])  # a lone prompt step: no decode rides with it
    decodes = sum(cost.decode_seconds(running, isl + k) for k in range(osl - 1))  # the wave's 19 steps together
    # the j-th prompt of a wave waits for the running - 1 - j prompts after it, then the wave's decodes
    by_hand = [((running - 1 - j) * prefill + decodes) / (osl - 1) for j in range(running)] * 4
    # (rel 1e-5: the simulator's decode steps read the context a token apart from this sum; one prompt apart is 17%)
    assert sorted(times.tpot) == pytest.approx(sorted(by_hand), rel=1e-5)
    mean = ((running - 1) / 2 * prefill + decodes) / (osl - 1)
    assert run.tpot_ms.mean == pytest.approx(mean * 1e3, rel=1e-5)
    # the closed form's staggered arrivals put all running - 1 other prompts in each request's life: more
    assert run.tpot_ms.mean < ((running - 1) * prefill + decodes) / (osl - 1) * 1e3
