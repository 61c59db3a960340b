"""The serving loop under speculative decoding: the tokens a decode step keeps, the blocks it holds (vLLM's scheduled
and lookahead slots), by hand; the loop's shortcuts against its step-by-step run. The control: the output counted in
chunks of T tokens, one token of cache each, as the simulator priced it before, which holds too few blocks."""

from __future__ import annotations

import pytest

from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.speculative import AcceptedTokens
from mha_cli.core.serve.workload import Workload, drawn_lengths

STEP_S = 1e-3


class FlatCost:
    """A step a hand can count: 1 ms, whatever it runs."""

    pp, per_decode = 1, 4  # k = 3 drafts verified with the decode's own token

    def seconds(self, decodes: int, context: int, chunks: list) -> float:
        return STEP_S

    def decode_seconds(self, rows: int, context: int) -> float:
        return STEP_S


class ContextCost(FlatCost):
    """1 ms and 10 ns a decode per token of context: a step's time follows the tokens the rows kept."""

    def seconds(self, decodes: int, context: int, chunks: list) -> float:
        return STEP_S + 1e-8 * decodes * context

    def decode_seconds(self, rows: int, context: int) -> float:
        return self.seconds(rows, context, [])


def _vllm(blocks: int, **spec: float) -> EngineLimits:
    return EngineLimits(
        "vllm", kv_blocks=blocks, block_size=16, max_num_batched_tokens=2048, max_num_seqs=8, drafts_in_budget=True,
        **spec,  # type: ignore[arg-type]
    )  # fmt: skip


def _most_blocks(run, limits: EngineLimits) -> int:
    return round(max(point.kv_used for point in run.trace) * limits.kv_blocks)


def test_accepted_tokens_deal_t_a_step_in_whole_tokens():
    # T = 2.5: after s steps 1 + floor(2.5 s) tokens, so the steps keep 2, 3, 2, 3, ...
    accepted = AcceptedTokens(2.5, 1)
    assert [accepted.take(0, 1000) for _ in range(4)] == [2, 3, 2, 3]
    assert accepted.after(0, 2, 1000) == 5 and accepted.after(0, 2, 4) == 4  # capped at what it still needs
    fresh = AcceptedTokens(2.5, 1)
    assert fresh.steps_to(0, 40) == 16 and fresh.steps_to(0, 1) == 1  # 40 tokens after the first: 16 steps
    assert AcceptedTokens(1.0, 1).steps_to(0, 7) == 7
    # against counting step by step: the steps to a length, and the tokens rows keep together (``decode_run``)
    rows = AcceptedTokens(2.37, 5)
    for request, steps in enumerate((0, 1, 3, 7, 12)):
        rows.steps[request] = steps
    for request in range(5):
        for left in range(1, 30):
            steps = rows.steps_to(request, left)
            assert rows.after(request, steps, left) == left and rows.after(request, steps - 1, 10**6) < left
    residues = rows.residues(list(range(5)))
    for steps in range(12):
        assert rows.kept_together(residues, steps) == sum(rows.after(r, steps, 10**6) for r in range(5))
    with pytest.raises(ValueError, match="at least 1"):
        AcceptedTokens(0.5, 1)


def test_the_admission_lookahead_is_vllm_023s():
    """vLLM 0.21-0.22 give a waiting request no lookahead slots (``0 if request.num_computed_tokens == 0``); 0.23.0 on
    give it k (review 332 #4: the release rule and its way to the simulator)."""
    from mha_cli.core.engine.vllm_rule_releases import lookahead_at_admission

    assert not lookahead_at_admission((0, 22)) and lookahead_at_admission((0, 23)) and lookahead_at_admission(None)


def test_vllm_holds_the_kept_tokens_and_its_scheduled_and_lookahead_slots():
    """One request of 32 prompt and 41 output tokens, blocks of 16, k = 3 at T = 2.5. By hand: the prompt's step
    takes its 32 tokens and, from vLLM 0.23, 3 lookahead slots (3 blocks; 2 before 0.23, which gave a waiting request
    none: review 331 #1); decode step s (0-15) starts with 32 + floor(2.5 s) tokens
    computed and allocates them + 1 + 3 scheduled + 3 lookahead slots; the last, s = 15, reaches 32 + 37 + 7 = 76
    tokens: 5 blocks. 16 decode steps (1 + floor(2.5 x 16) = 41 tokens), 17 steps in all. TPOT: 16 steps of 1 ms
    over 40 tokens, 0.4 ms; the gap between streamed chunks: one step, 1 ms."""
    workload = Workload(lengths=[(32, 41)])
    limits = _vllm(10, acceptance_length=2.5, lookahead_tokens=3)
    run, times = simulate(workload, limits, FlatCost(), trace=True, skip_repeated_steps=False)  # type: ignore[arg-type]
    assert run.steps == 17 and _most_blocks(run, limits) == 5
    for at_admission, blocks in ((True, 3), (False, 2)):  # after the prompt's step
        first, _ = simulate(workload, limits._replace(lookahead_at_admission=at_admission), FlatCost(), trace=True,
                            skip_repeated_steps=False)  # type: ignore[arg-type]  # fmt: skip
        assert round(first.trace[0].kv_used * limits.kv_blocks) == blocks
    assert times.tpot == [pytest.approx(16 * STEP_S / 40)]
    assert run.itl_ms.median == pytest.approx(STEP_S * 1000)
    assert run.output_tokens_per_s == pytest.approx(41 / (17 * STEP_S))
    # control: the output as 17 chunks of one token each (the simulator before) reaches 32 + 16 tokens: 3 blocks
    chunked = Workload(lengths=[(32, 17)])
    before, _ = simulate(chunked, _vllm(10), FlatCost(), trace=True, skip_repeated_steps=False)  # type: ignore[arg-type]
    assert before.steps == 17 and _most_blocks(before, _vllm(10)) == 3


def test_sglang_holds_the_kept_tokens_only():
    """The same request on SGLang's pages of one token: 32 + 41 - 1 = 72 computed at the end, no slots past them."""
    limits = EngineLimits(
        "sglang", kv_blocks=200, block_size=1, max_num_batched_tokens=2048, max_num_seqs=8, acceptance_length=2.5
    )
    run, _ = simulate(Workload(lengths=[(32, 41)]), limits, FlatCost(), trace=True, skip_repeated_steps=False)  # type: ignore[arg-type]
    assert run.steps == 17 and _most_blocks(run, limits) == 72


def test_two_requests_that_fit_as_chunks_are_preempted_as_vllm_runs_them():
    """Two such requests at once in 8 blocks: as chunks each holds 3 at most, so both run through; as vLLM holds
    them (5 each near their end) one is preempted."""
    workload = Workload(lengths=[(32, 41)] * 2, max_concurrency=2)
    run, _ = simulate(workload, _vllm(8, acceptance_length=2.5, lookahead_tokens=3), FlatCost())  # type: ignore[arg-type]
    assert run.preemptions > 0
    before, _ = simulate(Workload(lengths=[(32, 17)] * 2, max_concurrency=2), _vllm(8), FlatCost())  # type: ignore[arg-type]
    assert before.preemptions == 0


@pytest.mark.parametrize(
    ("engine", "blocks", "block_size"),
    [("vllm", 40_000, 16), ("vllm", 500, 16), ("sglang", 25_000, 1), ("trtllm", 1_500, 16)],
)
def test_the_shortcuts_change_nothing_under_speculative_decoding(engine, blocks, block_size):
    """Repeated decode steps skipped (``decode_run``, its horizon over the kept tokens and the slots) give what the
    step-by-step run gives, with preemptions (vLLM's pool of 500 blocks) and a T that is no whole number."""
    workload = Workload(lengths=drawn_lengths(300, 150, 120, range_ratio=0.5, seed=3), max_concurrency=24)
    limits = EngineLimits(
        engine, kv_blocks=blocks, block_size=block_size, max_num_batched_tokens=2048, max_num_seqs=24,
        drafts_in_budget=engine != "sglang", acceptance_length=2.37, lookahead_tokens=3 if engine == "vllm" else 0,
    )  # fmt: skip
    fast, fast_times = simulate(workload, limits, ContextCost())  # type: ignore[arg-type]
    slow, slow_times = simulate(workload, limits, ContextCost(), skip_repeated_steps=False)  # type: ignore[arg-type]
    assert fast.steps == slow.steps and fast.preemptions == slow.preemptions
    assert fast_times.ttft == pytest.approx(slow_times.ttft, rel=1e-6)
    assert fast_times.e2e == pytest.approx(slow_times.e2e, rel=1e-6)
    assert fast.itl_ms.mean == pytest.approx(slow.itl_ms.mean, rel=1e-6)
    if blocks == 500:
        assert slow.preemptions > 0


def test_a_request_preempted_when_a_decode_run_would_start_comes_back_at_once():
    """Review 328 #1: a step that preempts admits nobody, and under speculative decoding the request it preempted
    comes back needing fewer blocks than it freed (its lookahead slots), so the next step admits it: the repeated
    decode steps may not start there. T = 4, k = 3, a pool of 4 blocks of 16: the shortcut ran request 0 alone for
    8 steps (13 steps, 1 preemption) where the step-by-step run readmits request 1 at once (12 steps, 2)."""
    workload = Workload(lengths=[(17, 31), (27, 11)], max_concurrency=3)
    limits = EngineLimits(
        "vllm", kv_blocks=4, block_size=16, max_num_batched_tokens=2048, max_num_seqs=3, prefix_caching=False,
        drafts_in_budget=True, acceptance_length=4.0, lookahead_tokens=3,
    )  # fmt: skip
    fast, fast_times = simulate(workload, limits, ContextCost())  # type: ignore[arg-type]
    slow, slow_times = simulate(workload, limits, ContextCost(), skip_repeated_steps=False)  # type: ignore[arg-type]
    assert (slow.steps, slow.preemptions) == (12, 2)
    assert (fast.steps, fast.preemptions) == (slow.steps, slow.preemptions) and fast_times == slow_times


def test_a_preempted_request_back_as_a_decode_keeps_one_token():
    """Review 328 #3: vLLM clears a preempted request's draft tokens, so when it comes back with all but its last
    token cached its first decode step verifies none and keeps 1 token; the next keeps its share of T again."""
    from mha_cli.core.serve.simulate import _Run

    limits = _vllm(100, acceptance_length=2.5, lookahead_tokens=3)
    run = _Run(Workload(lengths=[(32, 41)]), limits, FlatCost(), 0.0)  # type: ignore[arg-type]
    state = run.state
    state.computed[0], state.generated[0] = 40, 9  # back with all but its last token cached, as a decode
    state.running.append(0)
    state.undrafted.add(0)
    run.one_step([0], [])
    assert (state.computed[0], state.generated[0]) == (41, 10) and 0 not in state.undrafted
    run.one_step([0], [])
    assert (state.computed[0], state.generated[0]) == (43, 12)  # 1 + floor(2.5) after its first drafted step
