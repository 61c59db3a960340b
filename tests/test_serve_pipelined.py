"""Pipeline parallelism in the simulated serving loop (``core.serve.pipelined``): up to pp batches in flight, each
request in at most one, counted by hand; and the closed form (``core.cost.serving``) agreeing with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.serving import predict_serving
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.presets import get_preset
from mha_cli.core.serve.schedulers import EngineState
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload
from mha_cli.core.targets import load_targets

QWEN3_32B = Path(__file__).parent / "fixtures" / "hf_configs" / "qwen3-32b.json"


class _SequenceCost:
    """A step cost to count by hand: 1 ms of host time a batch, then 4 ms a sequence on each of 2 stages."""

    pp = 2
    per_decode = 1  # tokens a decode runs: no drafts
    host_s, per_sequence_s = 1e-3, 4e-3

    def stage_seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> tuple[float, list[float]]:
        return self.host_s, [self.per_sequence_s * (decodes + len(chunks))] * self.pp

    def decode_stages(self, rows: int, context: int) -> tuple[float, list[float]]:
        return self.stage_seconds(rows, context, [])


def _limits(engine: str = "vllm", budget: int = 16) -> EngineLimits:
    return EngineLimits(engine, kv_blocks=1_000, block_size=16, max_num_batched_tokens=budget, max_num_seqs=64)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_two_batches_in_flight_give_the_throughput_counted_by_hand(engine):
    """Two users, prompts of 16 tokens (the budget: one prompt a batch), 4 output tokens. Batch A (user 0's prompt):
    host 0-1 ms, stage 0 1-5, stage 1 5-9; batch B (user 1's) goes without waiting for A: host 1-2, stage 0 5-9,
    stage 1 9-13. A's token at 9 ms; user 0's decode: host 9-10, stage 0 10-14, stage 1 14-18; B's token at 13;
    user 1's decode: host 13-14, stage 0 14-18, stage 1 18-22; and so on: each user a token every 1 + 4 + 4 = 9 ms,
    the two 4 ms apart. One batch through both stages at a time (the loop before) would give both users a token
    every 1 + 2 x 8 = 17 ms."""
    run, times = simulate(Workload(lengths=[(16, 4)] * 2, max_concurrency=2), _limits(engine), _SequenceCost())
    assert times.ttft == pytest.approx([9e-3, 13e-3], abs=1e-12)
    assert times.e2e == pytest.approx([36e-3, 40e-3], abs=1e-12)
    assert times.tpot == pytest.approx([9e-3, 9e-3], abs=1e-12)
    assert run.itl_ms.median == pytest.approx(9.0) and run.itl_ms.p99 == pytest.approx(9.0)
    assert run.duration_s == pytest.approx(40e-3)
    assert run.output_tokens_per_s == pytest.approx(8 / 40e-3)  # 200 tokens/s; 2 every 9 ms once both decode
    assert run.steps == 8


def test_a_request_is_in_one_batch_at_a_time_and_vllms_burst_fills_the_first():
    """vLLM's scheduler fills a batch up to its budget (``Scheduler.schedule``) and skips a request whose token is
    still in flight: four short prompts arriving together all go into the first batch, and the second stays empty
    (the imbalance vllm-project/vllm#39165 describes). Each user then gets a token every 1 + 2 x (4 x 4) = 33 ms,
    and no batch ever holds a request twice (8 batches: one prefill, 7 decodes)."""
    run, times = simulate(Workload(lengths=[(4, 8)] * 4, max_concurrency=4), _limits(budget=64), _SequenceCost())
    assert times.ttft == pytest.approx([33e-3] * 4, abs=1e-12)
    assert times.tpot == pytest.approx([33e-3] * 4, abs=1e-12)
    assert run.steps == 8


def test_sglang_keeps_a_request_in_the_micro_batch_that_ran_its_prompt():
    """SGLang (``event_loop_pp``: each micro-batch its own running batch) with four users of 16-token prompts, one
    prompt a batch, prefill first: prompts 0 and 2 run in micro-batch 0's prefill batches, 1 and 3 in micro-batch 1's
    (TTFT 9, 13, 18, 22 ms: host 1 ms, 4 ms a sequence a stage). Then each micro-batch decodes its own two: micro-batch
    0 sent at 19 ms, stage 0 19-27, stage 1 27-35; micro-batch 1 sent at 23, stage 0 27-35, stage 1 35-43; and every
    17 ms after (1 + 8 + 8): tokens at 35, 52, 69 for requests 0 and 2, 43, 60, 77 for 1 and 3."""
    run, times = simulate(Workload(lengths=[(16, 4)] * 4, max_concurrency=4), _limits("sglang"), _SequenceCost())
    assert times.ttft == pytest.approx([9e-3, 13e-3, 18e-3, 22e-3], abs=1e-12)
    assert times.e2e == pytest.approx([69e-3, 77e-3, 69e-3, 77e-3], abs=1e-12)
    assert run.duration_s == pytest.approx(77e-3)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_closed_form_and_the_loop_agree_on_steady_decode_under_pipeline_parallelism(engine):
    """llama-3-8b on an H100 at pp 2, 16 users of 512 in / 1,024 out, a budget of 8 prompts a batch: the loop's two
    batches of 8 decode side by side, as the closed form's 2 micro-batches of 8 do. The loop's median inter-token gap
    is a micro-batch's period within 0.5% (the loop's contexts are each step's own; the step is linear in them), and
    the closed form's decode step is the serial pass through the stages; the throughput within 4% (3.4% today: the
    period's 3.2%, and the closed form spreads the other prompts' prefill over the request's steps where the loop's
    run starts with all 16 prompts at once; 2% before the period and the serial pass parted)."""
    profile = prior_profile(load_targets()["h100-sxm"])
    users, isl, osl, pp = 16, 512, 1024, 2
    budget = users // pp * isl
    case = ServingCase(get_preset("llama-3-8b"), isl=isl, osl=osl, concurrency=users, pp=pp, chunk_tokens=budget)
    closed = predict_serving(case, profile, None)
    limits = _limits(engine, budget)._replace(kv_blocks=100_000)
    run, _ = simulate(
        Workload(lengths=[(isl, osl)] * users, max_concurrency=users), limits, StepCost(Stepper(case, profile))
    )
    # The loop's gap is a micro-batch's period: one pass through every stage, or pp passes of the slowest stage when
    # that is longer. The closed form takes the first (its documented approximation, core.cost.serving); since the
    # 2026-12-03 refit's step overhead (0.10 ms) the last stage's LM head shows: 2 x 4.21 ms = 8.41 against 8.15.
    host, stages = StepCost(Stepper(case, profile)).decode_stages(users // pp, isl + osl // 2)
    period = max(host + sum(stages), pp * max(stages))
    assert run.itl_ms.median == pytest.approx(period * 1e3, rel=5e-3)
    assert closed.decode_step.seconds == pytest.approx(host + sum(stages), rel=5e-3)
    assert run.output_tokens_per_s == pytest.approx(closed.output_tokens_per_s, rel=4e-2)


def test_plans_pipeline_pick_is_confirmed_by_its_own_simulation(cli):
    """qwen3-32b on 2 H100s under vLLM 0.11.0: its tp 1 x pp 2 layout at the chosen load (the pick until vllm-v1's
    simitl refit; tp 2 now wins by 2%, 517.7 against 507.8 tokens/s per GPU). Its simulated run keeps 2 batches in
    flight as the engine does, so its tokens/s per GPU comes within 20% of the closed form's figure (it was half:
    559 closed form, 286 simulated; the rest is the closed loop's first burst of 128 prompts at once, which the
    closed form's steady state does not have)."""
    found = cli.json("plan", str(QWEN3_32B), "--target", "2xh100", "--engine", "vllm@0.11.0")
    users = found["candidates"][found["chosen"]]["concurrency"]
    pick = next(c for c in found["candidates"] if c["deployment"]["pp"] == 2 and c["concurrency"] == users)
    assert pick["simulated"] is not None
    simulated = pick["simulated"]["deployment_output_tokens_per_s"] / pick["deployment"]["gpus"]
    assert 0.8 * pick["output_tokens_per_s_per_gpu"] <= simulated <= 1.05 * pick["output_tokens_per_s_per_gpu"]


@pytest.mark.parametrize(("model", "tp", "pp"), [("llama-3-8b", 1, 2), ("llama-3-8b", 1, 4), ("gemma-2-9b", 2, 2)])
def test_a_batchs_stages_and_host_add_up_to_its_serial_step(model, tp, pp):
    """``StepCost.stage_seconds`` splits ``seconds`` without losing or adding anything (no eager prompt launch floor
    on this profile): the host's part plus every stage's equals the serial step; the last stage, with the LM head
    and sampler, is the slowest of equal stages."""
    profile = prior_profile(load_targets()["h100-sxm"])
    cost = StepCost(Stepper(ServingCase(get_preset(model), isl=1, osl=1, concurrency=1, tp=tp, pp=pp), profile))
    for decodes, context, chunks in [(8, 1000, []), (5, 3000, [(700, 300), (37, 20)]), (64, 2047, [(8128, 0)])]:
        host, stages = cost.stage_seconds(decodes, context, chunks)
        assert len(stages) == pp
        assert host + sum(stages) == pytest.approx(cost.seconds(decodes, context, chunks), rel=1e-9)
        assert stages[-1] == max(stages)
    assert cost.decode_stages(16, 640) == cost.stage_seconds(16, 640, [])  # on the context grid: exact


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_pool_too_small_preempts_only_requests_out_of_flight_and_every_request_ends(engine, monkeypatch):
    """pp 2 with a pool of 1,500 blocks for 64 users of ~700 + 120 tokens: the schedulers preempt (vLLM) or retract
    (SGLang) requests, never one whose token is in flight (``EngineState.busy``), and every request still gets all
    its tokens: each ends after its first token, once."""
    from mha_cli.core.serve.workload import drawn_lengths

    profile = prior_profile(load_targets()["h100-sxm"])
    cost = StepCost(Stepper(ServingCase(get_preset("llama-3-8b"), isl=1, osl=1, concurrency=1, pp=2), profile))
    workload = Workload(lengths=drawn_lengths(700, 120, 300, range_ratio=0.5, seed=4), max_concurrency=64)
    limits = EngineLimits(engine, kv_blocks=1_500, block_size=16, max_num_batched_tokens=2048, max_num_seqs=48)
    preempt, in_flight = EngineState.preempt_last, []

    def watched(state: EngineState) -> int:
        victim = preempt(state)
        in_flight.append(victim in state.busy)
        return victim

    monkeypatch.setattr(EngineState, "preempt_last", watched)
    run, times = simulate(workload, limits, cost)
    assert run.preemptions > 0 and run.requests == 300
    assert len(in_flight) == run.preemptions and not any(in_flight)
    assert all(0 < ttft <= e2e for ttft, e2e in zip(times.ttft, times.e2e, strict=True))


class _ContextCost(_SequenceCost):
    """``_SequenceCost`` on 3 stages, each stage's time also growing with the decodes' context (so that a wrong
    context moves every figure), and ``per_decode`` tokens a decode (a speculative step's, in the budget)."""

    pp = 3

    def __init__(self, per_decode: int = 1) -> None:
        self.per_decode = per_decode

    def stage_seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> tuple[float, list[float]]:
        tokens = decodes * self.per_decode + sum(size for size, _ in chunks)
        stage = 1e-3 + 2e-6 * tokens + 1e-8 * decodes * context + 3e-9 * sum(s * (s + c) for s, c in chunks)
        return self.host_s, [stage] * self.pp


def _pipelined_cases():
    from mha_cli.core.serve.workload import drawn_lengths

    def limits(pool: int, budget: int, seqs: int = 48, block: int = 16, **more) -> EngineLimits:
        return EngineLimits("vllm", kv_blocks=pool, block_size=block, max_num_batched_tokens=budget, max_num_seqs=seqs,
                            **more)  # fmt: skip

    closed = Workload(lengths=drawn_lengths(700, 120, 300, range_ratio=0.5, seed=4), max_concurrency=64)
    return {
        "a pool too small: preemptions": (closed, limits(1_500, 2048), 1),
        "a roomy pool at most 48 running": (closed, limits(40_000, 8192), 1),
        "a bursty open loop": (
            Workload(lengths=drawn_lengths(1024, 128, 300, range_ratio=0.9, seed=5), rate=30.0, burstiness=0.3, seed=5),
            limits(40_000, 8192, seqs=256), 1,
        ),
        "prompts longer than the budget": (
            Workload(lengths=drawn_lengths(1500, 40, 100, range_ratio=0.5, seed=6), max_concurrency=16),
            limits(40_000, 512), 1,
        ),
        "a shared prefix cached": (
            Workload(lengths=drawn_lengths(600, 80, 200, range_ratio=0.5, seed=7), max_concurrency=32, prefix_len=256),
            limits(3_000, 2048, shares_prefix_blocks=True), 1,
        ),
        "a prefix evicted while its requests decode": (  # review 314: a decode's new block caches it again
            Workload(lengths=[(8, 4), (8, 11), (8, 4), (12, 4)], max_concurrency=2, prefix_len=8),
            limits(5, 64, block=4, shares_prefix_blocks=True), 1,
        ),
        "prefixes in a host tier of two blocks": (  # review 314: a decode's new block stores its prefix back
            Workload(lengths=[(40, 40), (44, 12), (40, 4)], max_concurrency=2, prefix_len=32, prefix_groups=2),
            limits(400, 2048, prefix_caching=False, host_blocks=2, load_s_per_token=1e-6), 1,
        ),
        "drafts in a budget that truncates": (
            Workload(lengths=drawn_lengths(300, 200, 200, range_ratio=0.5, seed=8), max_concurrency=48),
            limits(40_000, 100, drafts_in_budget=True), 3,
        ),
    }  # fmt: skip


@pytest.mark.parametrize("case", list(_pipelined_cases()))
def test_vllms_pipelined_groups_change_nothing(case):
    """vLLM's pipelined loop with each batch's decoding requests advanced as a group (``core.serve.pipelined_groups``)
    gives the run the exact step-by-step loop gives, to the bit: every request's times, every gap, each step and
    preemption, on runs where the exact scheduler must take over (preemptions, a budget too small for everyone,
    prompts in chunks, bursts of arrivals, a shared prefix, one evicted while its requests decode, prefixes in a host
    tier, draft tokens in the budget)."""
    workload, limits, per_decode = _pipelined_cases()[case]
    fast, fast_times = simulate(workload, limits, _ContextCost(per_decode))
    slow, slow_times = simulate(workload, limits, _ContextCost(per_decode), skip_repeated_steps=False)
    assert fast.requests == slow.requests == len(workload.lengths)
    assert (fast.steps, fast.preemptions) == (slow.steps, slow.preemptions)
    assert fast_times == slow_times
    assert fast.itl_ms == slow.itl_ms and fast.duration_s == slow.duration_s
    if case.startswith("a pool too small"):
        assert slow.preemptions > 0


def _hidden_as_busy_turn(run, micro):
    """The reference for SGLang's turn: every running request of another micro-batch (a request still in its
    prompt's chunks is in none) hidden from the whole scheduler as if its token were in flight, found over every
    running request (how the loop scheduled a turn before ``MicroBatches.scope``)."""
    from mha_cli.core.serve.schedulers import schedule

    state = run.state
    if micro is None:
        return schedule(run.limits.engine, state)
    turn, home = micro.turn, micro.home
    others = {r for r in state.running if home.get(r, turn) != turn and state.computed[r] >= state.prompts[r]}
    hidden = others - state.busy
    state.busy |= hidden
    try:
        return schedule(run.limits.engine, state)
    finally:
        state.busy -= hidden


def _sglang_cases():
    """``_pipelined_cases`` and one where SGLang retracts 21 requests, each readmitted to recompute its prompt and
    its tokens (chunks of 512) in another micro-batch's turn."""
    from mha_cli.core.serve.workload import drawn_lengths

    retracting = Workload(lengths=drawn_lengths(700, 300, 300, range_ratio=0.5, seed=4), max_concurrency=64)
    limits = EngineLimits("sglang", kv_blocks=600, block_size=16, max_num_batched_tokens=512, max_num_seqs=48)
    return _pipelined_cases() | {"retractions, each prompt recomputed in chunks": (retracting, limits, 1)}


@pytest.mark.parametrize("case", list(_sglang_cases()))
def test_sglangs_scoped_turn_equals_hiding_the_other_micro_batches(case, monkeypatch):
    """SGLang's pipelined turn schedules only its micro-batch's requests and those in their prompt's chunks
    (``MicroBatches.scope``, kept up as batches are sent, so a turn costs its own rows: an SGLang plan of Llama-3-70B
    at pp 4 took 52 s, now 25): the run equals the reference that hides the other micro-batches' requests from the
    scheduler, to the bit, retractions included."""
    from mha_cli.core.serve import pipelined

    workload, limits, per_decode = _sglang_cases()[case]
    limits = limits._replace(engine="sglang")
    scoped, scoped_times = simulate(workload, limits, _ContextCost(per_decode))
    monkeypatch.setattr(pipelined, "_schedule_turn", _hidden_as_busy_turn)
    hidden, hidden_times = simulate(workload, limits, _ContextCost(per_decode))
    assert (scoped.steps, scoped.preemptions, scoped.requests) == (hidden.steps, hidden.preemptions, hidden.requests)
    assert scoped_times == hidden_times and scoped.itl_ms == hidden.itl_ms
