"""The serving simulator (``core.serve``): its step cost against the cost model's own step, its statistics against
numpy, its schedulers' rules on hand-sized cases, and the loop's invariants."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.engine.vllm_rule_releases import admission_watermark, admits_whole_prompt
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.serve.schedulers import EngineState, schedule
from mha_cli.core.serve.simulate import EngineLimits, engine_limits, simulate
from mha_cli.core.serve.stats import percentile, summarise, summarise_weighted
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload, drawn_lengths, read_lengths
from mha_cli.core.targets import load_targets


def _cost(model: str = "llama-3-8b", *, tp: int = 1, pp: int = 1, target: str = "h100-sxm") -> StepCost:
    profile = prior_profile(load_targets()[target])
    return StepCost(Stepper(ServingCase(model=get_preset(model), isl=1, osl=1, concurrency=1, tp=tp, pp=pp), profile))


@pytest.mark.parametrize(
    ("model", "tp", "pp"),
    [
        ("llama-3-8b", 1, 1),
        ("deepseek-v3", 8, 1),
        ("gemma-2-9b", 2, 2),
        ("mixtral-8x7b", 2, 1),
        ("qwen3-next-80b-a3b", 2, 1),
    ],
)
def test_step_cost_equals_the_cost_models_step(model, tp, pp):
    cost = _cost(model, tp=tp, pp=pp)
    stepper = cost.stepper
    for decodes, context, chunks in [(8, 1000, []), (0, 0, [(512, 0)]), (5, 3000, [(700, 300), (37, 20)]),
                                     (0, 0, [(1, 100)]), (64, 2047, [(8128, 0)])]:  # fmt: skip
        shapes = ([decode_shape(decodes, context)] if decodes else []) + [
            prefill_shape(tokens, context=before) for tokens, before in chunks
        ]
        expected = stepper.step(*shapes).seconds
        # token counts above 512 sit on a grid of 64 points an octave: interpolated within 0.5 % (the experts an
        # MoE step touches bend the most between grid points)
        assert cost.seconds(decodes, context, chunks) == pytest.approx(expected, rel=5e-3)
    exact = stepper.step(decode_shape(16, 640)).seconds
    assert cost.decode_seconds(16, 640) == pytest.approx(exact, rel=1e-12)  # on the context grid: exact
    between = cost.decode_seconds(16, 650)
    assert exact < between < stepper.step(decode_shape(16, 672)).seconds


def test_statistics_equal_numpys_percentiles():
    draw = np.random.default_rng(3)
    values = list(draw.exponential(0.05, 997))
    stats = summarise(values)
    assert stats.mean == pytest.approx(np.mean(values) * 1e3)
    for q, figure in ((50, stats.median), (90, stats.p90), (99, stats.p99)):
        assert figure == pytest.approx(np.percentile(values, q) * 1e3)
    pairs = [(0.010, 500), (0.012, 300), (0.2, 7), (0.011, 193)]  # a step's time repeated for its rows
    expanded = [value for value, repeats in pairs for _ in range(repeats)]
    weighted = summarise_weighted(pairs)
    for q, figure in ((50, weighted.median), (90, weighted.p90), (99, weighted.p99)):
        assert figure == pytest.approx(np.percentile(expanded, q) * 1e3)
    assert weighted.mean == pytest.approx(np.mean(expanded) * 1e3)
    assert percentile([], 99) == 0.0


def test_lengths_are_drawn_as_vllms_random_dataset_draws_them(tmp_path):
    pairs = drawn_lengths(1000, 100, 5000, range_ratio=0.25, seed=1)
    inputs, outputs = [p for p, _ in pairs], [o for _, o in pairs]
    assert min(inputs) == 750 and max(inputs) == 1250  # floor(n (1 - r)) .. ceil(n (1 + r)), both included
    assert min(outputs) == 75 and max(outputs) == 125
    assert abs(np.mean(inputs) - 1000) < 5
    assert drawn_lengths(1000, 100, 3) == [(1000, 100)] * 3
    gaps = np.diff(Workload(lengths=[(1, 1)] * 20001, rate=50.0, burstiness=0.5, seed=2).arrivals())
    assert np.mean(gaps) == pytest.approx(1 / 50, rel=0.03)  # gamma gaps of mean 1 / rate
    assert np.var(gaps) == pytest.approx(1 / (0.5 * 50**2), rel=0.1)  # shape 0.5: variance 1 / (k rate^2)
    text = tmp_path / "lengths.txt"
    text.write_text("# input output\n128 64\n256,32\n\n")
    assert read_lengths(text) == [(128, 64), (256, 32)]
    listed = tmp_path / "lengths.json"
    listed.write_text('[[10, 2], {"input_len": 7, "output_len": 3}]')
    assert read_lengths(listed) == [(10, 2), (7, 3)]
    for bad, message in (("12\n", "two token counts"), ("0 5\n", "at least 1"), ("", r"no \(input, output\) pair")):
        text.write_text(bad)
        with pytest.raises(BadInputError, match=message):
            read_lengths(text)
    with pytest.raises(BadInputError, match=r"missing\.txt: no such file"):
        read_lengths(tmp_path / "missing.txt")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # reading it would block for ever: refused before it is opened
    with pytest.raises(BadInputError, match="fifo: not a file"):
        read_lengths(fifo)


def _state(prompts, outputs, *, blocks=100, block_size=4, budget=10, max_seqs=8) -> EngineState:
    state = EngineState(list(prompts), list(outputs), blocks=blocks, block_size=block_size, budget=budget,
                        max_seqs=max_seqs)  # fmt: skip
    state.waiting.extend(range(len(prompts)))
    return state


def _advance(state: EngineState, plan) -> None:
    """What the loop does after a step: computed tokens, and a token sampled where all known tokens are computed."""
    decodes, chunks = plan
    for request in decodes:
        state.computed[request] += 1
        state.generated[request] += 1
    for request, tokens in chunks:
        state.computed[request] += tokens
        if state.computed[request] == state.known(request):
            state.generated[request] += 1


def test_vllm_runs_decodes_first_then_chunks_prompts_under_the_budget():
    state = _state([8, 8], [3, 3], budget=10)
    first = schedule("vllm", state)
    assert first == ([], [(0, 8), (1, 2)])  # request 1's prompt is chunked: 2 of its 8 tokens fit the budget
    _advance(state, first)
    second = schedule("vllm", state)
    assert second == ([0], [(1, 6)])  # the running decode first, then the rest of the chunked prompt
    state = _state([4, 4, 4], [2, 2, 2], max_seqs=2)
    assert schedule("vllm", state) == ([], [(0, 4), (1, 4)])  # max_num_seqs caps the running requests
    assert list(state.waiting) == [2]


def test_vllm_v1_decodes_take_their_draft_tokens_of_the_budget():
    """vLLM V1 under speculative decoding schedules a running request's ``num_tokens_with_spec - num_computed_tokens``
    tokens, its k draft tokens with its one, capped at the budget left: with k = 3, request 0's decode takes 4 of the
    10 and request 1's prompt chunk gets 6. Control: a decode that takes 1 (V0, SGLang, no drafter) leaves it 9."""
    plans = []
    for decode_tokens in (1, 4):
        state = _state([4, 12], [3, 3], budget=10)
        state.decode_tokens = decode_tokens
        state.waiting.remove(1)
        first = schedule("vllm", state)
        _advance(state, first)
        state.waiting.append(1)
        plans.append(schedule("vllm", state))
    assert plans == [([0], [(1, 9)]), ([0], [(1, 6)])]
    state = _state([4, 4, 12], [3, 3, 3], budget=8)
    state.decode_tokens = 4
    state.waiting.remove(2)
    _advance(state, schedule("vllm", state))
    state.waiting.append(2)
    state.budget = 6  # two decodes of 4 each in a budget of 6: the second gets 2, the prompt none
    assert schedule("vllm", state) == ([0, 1], []) and list(state.waiting) == [2]


def test_the_engines_whose_decodes_take_their_drafts_of_the_budget():
    """vLLM V1 and TensorRT-LLM count a decode's draft tokens in the step budget; vLLM V0 and SGLang do not."""
    model = get_preset("llama-3-8b")
    kv = kv_footprint(model, seq_len=8192)
    target = load_targets()["h100-sxm"]
    counted = {}
    for engine, generation in [("vllm", "vllm-v0"), ("vllm", "vllm-v1"), ("vllm", "vllm-0.21"), ("sglang", None),
                               ("trtllm", None)]:  # fmt: skip
        settings = resolve_settings(DeploymentSpec(engine=engine, engine_generation=generation), target, 1)
        plan = plan_engine(model, kv, target, settings, weights_bytes_per_rank=16 * 10**9, sequences_per_replica=1)
        counted[generation or engine] = engine_limits(plan).drafts_in_budget
    assert counted == {"vllm-v0": False, "vllm-v1": True, "vllm-0.21": True, "sglang": False, "trtllm": True}


def test_vllm_preempts_the_last_admitted_request_by_recompute():
    state = _state([4, 4], [4, 4], blocks=2, block_size=4, budget=16)
    first = schedule("vllm", state)
    assert first == ([], [(0, 4), (1, 4)]) and state.free_blocks == 0
    _advance(state, first)
    # both decodes need a fifth slot, a new block each: the pool has none, so request 1 (admitted last) is preempted
    second = schedule("vllm", state)
    assert second == ([0], []) and state.preemptions == 1
    assert list(state.waiting) == [1] and state.computed[1] == 0 and state.held[1] == 0 and state.generated[1] == 1
    _advance(state, second)
    # nothing new is admitted in a step that preempted; later, request 1 recomputes its prompt and its token (5)
    state.running.remove(0)
    state.release(0)
    assert schedule("vllm", state) == ([], [(1, 5)])


def test_vllm_v1_keeps_a_preempted_requests_blocks_cached_and_counts_them_when_it_comes_back():
    """vLLM 0.8-0.18 with prefix caching (vllm/v1/core, 0.11.0: ``KVCacheManager.free`` queues a preempted request's
    blocks at the free queue's tail, ``get_num_blocks_to_allocate`` counts its hit blocks with ``ref_cnt == 0``).
    A pool of 10 blocks of 4, a budget of 8: request 0 (28 tokens, 7 blocks) is prefilling when request 1 is
    admitted on a 4-token chunk; request 0's first decode takes a block, so request 1's next chunk (7 tokens, to 11:
    3 blocks) finds 1 free and it is preempted, its first block cached. Back in the queue it hits that block
    (computed 4) but needs it beside the chunk's 2: 3 > 2 free, so it waits; blind to its cache it is admitted on
    a 7-token chunk (2 blocks) and preempted again at the next step."""
    plans = {}
    for caches in (True, False):
        state = _state([28, 28], [6, 6], blocks=10, block_size=4, budget=8)
        state.caches_own_blocks = caches
        steps = []
        for _ in range(8):
            plan = schedule("vllm", state)
            steps.append(plan)
            _advance(state, plan)
        plans[caches] = (steps, state)
    cached_steps, cached = plans[True]
    assert cached_steps[:4] == [([], [(0, 8)]), ([], [(0, 8)]), ([], [(0, 8)]), ([], [(0, 4), (1, 4)])]
    assert cached_steps[4] == ([0], []) and cached.preemptions == 1  # request 1 preempted: nothing admitted
    assert all(step == ([0], []) for step in cached_steps[5:]) and list(cached.waiting) == [1]
    assert cached.computed[1] == 4 and cached.own_hit[1] == 1 and cached.free_blocks == 2
    blind_steps, blind = plans[False]
    assert blind_steps[5] == ([0], [(1, 7)]) and blind.preemptions > 1  # admitted, preempted, admitted, ...


def test_a_preempted_requests_cached_blocks_go_once_the_free_queues_head_reaches_them():
    """FIFO eviction (``BlockPool.get_new_blocks`` takes the free queue's head): request 1, preempted with 3 whole
    blocks computed (12 of 14 tokens, 4 blocks held), queues behind the 2 blocks already free; its partial block
    sits first among its own (freed tail first). Request 0 taking 2 blocks leaves them all; a third takes the
    partial block, a fourth its last cached block, and 3 blocks returned by request 2 after it queue behind it."""
    state = _state([8, 14, 4], [4, 4, 4], blocks=11, block_size=4, budget=32)
    state.caches_own_blocks = True
    _advance(state, schedule("vllm", state))  # 8 + 14 + 4 tokens: 2 + 4 + 1 blocks, 4 free
    state.computed[1] = 12
    assert state.grow(1, 14) and state.free_blocks == 4
    assert state.grow(0, 16) and state.free_blocks == 2  # request 0 takes two more blocks: 2 free
    state.running.remove(1)
    state.running.append(1)
    assert state.preempt_last() == 1 and state.free_blocks == 6
    state.try_waiting(1)
    assert state.own_hit[1] == 3 and state.computed[1] == 12
    assert state.grow(0, 24) and state.free_blocks == 4  # the 2 queued ahead: request 1's cache whole
    state.try_waiting(1)
    assert state.own_hit[1] == 3
    state.running.remove(2)
    state.release(2)  # one block back, behind request 1's
    assert state.grow(0, 28)  # the partial block
    state.try_waiting(1)
    assert state.own_hit[1] == 3
    assert state.grow(0, 32)  # its last cached block (the tail goes first)
    state.try_waiting(1)
    assert state.own_hit[1] == 2 and state.computed[1] == 8
    assert state.grow(1, 12) and state.held[1] == 3 and not state.own_blocks  # 2 hit blocks taken back, 1 new


def test_a_preempted_request_back_with_all_but_its_last_token_cached_decodes():
    """Request 0 (8-token prompt, blocks of 4) decodes its first token when the pool's 2 blocks cannot hold a third:
    preempted, its 2 whole blocks cached. Back, it hits both (8 of its 9 tokens: ``get_computed_blocks`` stops at
    ``num_tokens - 1``) and has 1 token to compute past its prompt: a decode row, as the cohort shortcut
    (``simulate._Run.aggregate_step``) and a running request's step price it, not a 1-token prefill chunk."""
    state = _state([8], [4], blocks=3, budget=64)
    state.caches_own_blocks = True
    _advance(state, schedule("vllm", state))  # the prompt: 2 blocks, its first token sampled
    state.free_blocks = 0  # another request took the last block
    assert state.preempt_last() == 0 and state.free_blocks == 2
    state.try_waiting(0)
    assert state.own_hit[0] == 2 and state.computed[0] == 8
    state.free_blocks = 3  # the other request ended
    state.released_blocks += 1
    assert schedule("vllm", state) == ([0], [])


def test_a_request_back_with_none_of_its_blocks_left_keeps_no_cached_blocks_entry():
    """Request 0 preempted with 2 cached blocks; the head then takes all 3 free blocks (its 2 among them): back, it
    hits nothing, is admitted from scratch, and no ``own_blocks`` entry outlives its admission (one stayed through
    its run and after it ended, read by nothing)."""
    state = _state([8], [4], blocks=3, budget=64)
    state.caches_own_blocks = True
    _advance(state, schedule("vllm", state))
    assert state.preempt_last() == 0 and state.own_blocks[0].cached == 2
    state.free_blocks -= 3  # another request took every free block, request 0's cached ones last
    state.try_waiting(0)
    assert state.own_hit[0] == 0 and state.computed[0] == 0
    state.free_blocks += 3  # and gave them back
    state.released_blocks += 3
    assert schedule("vllm", state) == ([], [(0, 9)])
    assert state.own_blocks == {}


class _Shapes:
    """A step cost of 1 ms that records each step's shape: decode rows and prefill chunks."""

    pp = 1

    def __init__(self) -> None:
        self.steps: list[tuple[int, tuple[tuple[int, int], ...]]] = []

    def seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        self.steps.append((decodes, tuple(chunks)))
        return 1e-3

    def decode_seconds(self, rows: int, context: int) -> float:
        self.steps.append((rows, ()))
        return 1e-3


def test_the_cohort_shortcut_prices_a_returning_preempted_request_as_the_exact_path_does():
    """Two 6/4 requests on 5 blocks of 4 with vLLM V1's cached preempted blocks: one is preempted and comes back
    with all but one of its tokens cached. The shortcut and the exact scheduler run the same steps, of the same
    shapes (the exact path once priced its last token as a 1-token prefill chunk)."""
    limits = EngineLimits("vllm", kv_blocks=5, block_size=4, max_num_batched_tokens=64, max_num_seqs=8,
                          caches_preempted_blocks=True)  # fmt: skip
    fast, slow = _Shapes(), _Shapes()
    run, _ = simulate(Workload([(6, 4)] * 2), limits, fast)
    simulate(Workload([(6, 4)] * 2), limits, slow, skip_repeated_steps=False)
    assert run.preemptions == 1
    assert fast.steps == slow.steps


def test_vllm_admits_a_waiting_request_only_when_the_pool_holds_its_whole_prompt():
    """vLLM 0.19+ (``scheduler_reserve_full_isl``): request 1's first chunk (4 tokens, one block) fits the block
    request 0 leaves, its whole prompt (two blocks) does not, so it waits. vLLM 0.18 admitted it on the chunk and
    preempted it at the next step, when request 0's first output token took the block."""
    old = _state([8, 8], [2, 2], blocks=3, block_size=4, budget=12)
    first = schedule("vllm", old)
    assert first == ([], [(0, 8), (1, 4)])
    _advance(old, first)
    assert schedule("vllm", old) == ([0], []) and old.preemptions == 1 and list(old.waiting) == [1]
    new = _state([8, 8], [2, 2], blocks=3, block_size=4, budget=12)
    new.whole_prompt_admission = True
    first = schedule("vllm", new)
    assert first == ([], [(0, 8)]) and list(new.waiting) == [1] and new.free_blocks == 1
    _advance(new, first)
    assert schedule("vllm", new) == ([0], []) and new.preemptions == 0 and new.free_blocks == 0


def test_vllm_long_prompts_beyond_the_pool_wait_instead_of_thrashing():
    """DeepSeek-V3 at 130,000 + 1,072 tokens on one DP-attention rank of 8 x H200 (a pool of 26,786 blocks of 16:
    3 whole requests, 2,411 blocks spare beside them) at a hundredth: prompts of 1,300 tokens (82 blocks), pool of
    268 blocks, 4 users. From 0.19 the fourth waits for the first to end (3 x 82 = 246 blocks held, 22 free < 82);
    admitted on its first chunk instead (0.18), it filled the spare blocks, was preempted and recomputed over and
    over: `mha plan deepseek-ai/DeepSeek-V3 --target 8xh200 --isl 130000 --osl 1072 --concurrency 32` simulated 2,070
    preemptions and 2 tokens/s per GPU where the closed form gave 15."""
    cost = _cost()
    limits = EngineLimits("vllm", kv_blocks=268, block_size=16, max_num_batched_tokens=128, max_num_seqs=1024)
    workload = Workload(lengths=[(1300, 100)] * 4, max_concurrency=4)
    run, times = simulate(workload, limits, cost)
    assert run.preemptions == 0 and run.max_running == 3
    assert times.ttft[3] > times.e2e[0]  # its first token after the first request's last: it waited for the blocks
    chunk_admitted, chunk_times = simulate(workload, limits._replace(whole_prompt_admission=False), cost)
    assert chunk_admitted.preemptions > 10 and chunk_admitted.max_running == 4  # 32 on this host
    # the recomputed chunks ride in the running requests' decode steps: each of them ends later
    assert all(late > on_time for late, on_time in zip(chunk_times.e2e, times.e2e, strict=True))


def test_vllm_v0_leaves_its_watermark_free_when_it_admits():
    """V0 (``BlockSpaceManager.can_allocate``, 0.7.3): a pool of 100 blocks of 16 keeps int(0.01 x 100) = 1 free.
    Request 0's 1,000 tokens take 63 blocks; request 1's 592 tokens need the 37 left: admitted without the
    watermark, it waits with it (37 + 1 > 37)."""
    for keep, admitted in ((0, [(0, 1000), (1, 592)]), (1, [(0, 1000)])):
        state = _state([1000, 592], [2, 2], blocks=100, block_size=16, budget=4096)
        state.watermark_blocks = keep
        assert schedule("vllm", state) == ([], admitted)
        assert state.free_blocks == (0 if keep == 0 else 37)
    assert int(admission_watermark((0, 7)) * 100) == 1


@pytest.mark.parametrize(("release", "share"), [(None, 0.0), ((0, 34), 0.0), ((0, 8), 0.0), ((0, 7), 0.01),
                                                ((0, 2), 0.01)])  # fmt: skip
def test_the_release_that_keeps_a_watermark(release, share):
    """V0's 0.01 before 0.8; V1's ``SchedulerConfig.watermark`` defaults to 0.0 (0.24.0-0.34.0)."""
    assert admission_watermark(release) == share


@pytest.mark.parametrize(("release", "admits"), [(None, True), ((0, 21), True), ((0, 19), True), ((0, 18), False)])
def test_the_release_that_admits_on_the_whole_prompt(release, admits):
    assert admits_whole_prompt(release) is admits


def test_sglang_never_mixes_prefill_and_decode_and_reserves_the_outputs():
    state = _state([8, 8], [3, 3], budget=16, blocks=100)
    first = schedule("sglang", state)
    assert first == ([], [(0, 8), (1, 8)])
    _advance(state, first)
    state.waiting.append(2)
    state.prompts.append(8)
    state.outputs.append(3)
    for column in (state.computed, state.generated, state.held, state.order):
        column.append(0)
    assert schedule("sglang", state) == ([], [(2, 8)])  # a prefill step runs alone; the decodes wait for the next
    # the reservation: running requests' remaining outputs x new_token_ratio are held back from new prompts
    tight = _state([40, 40], [400, 400], blocks=30, block_size=4, budget=100)  # 120 tokens in the pool
    assert schedule("sglang", tight) == ([], [])  # 40 + 400 > 120: SGLang admits neither


def test_trtllm_admits_only_what_it_can_finish_and_never_evicts():
    state = _state([4, 4, 4], [8, 8, 8], blocks=7, block_size=4, budget=16)
    first = schedule("trtllm", state)
    # each request reserves ceil((4 + 8) / 4) = 3 blocks whole: two fit the 7, the third waits
    assert first == ([], [(0, 4), (1, 4)]) and list(state.waiting) == [2]
    cost = _cost()
    lengths = [(512, 256)] * 64
    limits = EngineLimits("trtllm", kv_blocks=200, block_size=16, max_num_batched_tokens=8192, max_num_seqs=256)
    run, _ = simulate(Workload(lengths=lengths, max_concurrency=64), limits, cost)
    assert run.preemptions == 0 and run.max_running <= 200 * 16 // (512 + 256)
    vllm, _ = simulate(Workload(lengths=lengths, max_concurrency=64), limits._replace(engine="vllm"), cost)
    assert vllm.preemptions > 0  # vLLM admits on the prompt alone and preempts when the outputs outgrow the pool


def test_one_user_sees_the_prefill_then_one_decode_step_per_token():
    cost = _cost()
    isl, osl = 1000, 50
    limits = EngineLimits("vllm", kv_blocks=10_000, block_size=16, max_num_batched_tokens=8192, max_num_seqs=256)
    run, times = simulate(Workload(lengths=[(isl, osl)] * 3, max_concurrency=1), limits, cost)
    prefill = cost.seconds(0, 0, [(isl, 0)])
    decodes = [cost.decode_seconds(1, isl + k) for k in range(osl - 1)]  # token k + 2 after isl + k cached
    assert times.ttft == pytest.approx([prefill] * 3, rel=1e-12)
    assert times.e2e == pytest.approx([prefill + sum(decodes)] * 3, rel=1e-9)
    assert run.tpot_ms.mean == pytest.approx(sum(decodes) / (osl - 1) * 1e3, rel=1e-9)
    assert run.duration_s == pytest.approx(3 * (prefill + sum(decodes)), rel=1e-9)
    assert run.output_tokens_per_s == pytest.approx(3 * osl / run.duration_s)


@pytest.mark.parametrize(
    ("engine", "pool", "budget", "workload"),
    [
        (
            "vllm",
            1_500,
            2048,
            Workload(lengths=drawn_lengths(700, 120, 300, range_ratio=0.5, seed=4), max_concurrency=64),
        ),
        (
            "vllm",
            40_000,
            8192,
            Workload(lengths=drawn_lengths(1024, 128, 400, range_ratio=0.9, seed=5), rate=30.0, burstiness=0.3, seed=5),
        ),
        (
            "vllm",
            40_000,
            512,
            Workload(lengths=drawn_lengths(1500, 40, 100, range_ratio=0.5, seed=6), max_concurrency=16),
        ),
        (
            "sglang",
            1_500,
            2048,
            Workload(lengths=drawn_lengths(700, 120, 200, range_ratio=0.5, seed=4), max_concurrency=32),
        ),
        (
            "trtllm",
            3_000,
            4096,
            Workload(lengths=drawn_lengths(700, 120, 200, range_ratio=0.5, seed=4), max_concurrency=32),
        ),
    ],
)
def test_the_shortcuts_change_nothing(engine, pool, budget, workload):
    """vLLM's decoding requests advanced as a cohort (and the other engines' repeated decode steps skipped) give the
    run the exact step-by-step scheduler gives: preemptions (a pool too small), bursts of arrivals and prompts longer
    than the budget (where the running order decides) included."""
    cost = _cost()
    limits = EngineLimits(engine, kv_blocks=pool, block_size=16, max_num_batched_tokens=budget, max_num_seqs=48)
    fast, fast_times = simulate(workload, limits, cost)
    slow, slow_times = simulate(workload, limits, cost, skip_repeated_steps=False)
    assert fast.steps == slow.steps and fast.preemptions == slow.preemptions
    assert fast_times.ttft == pytest.approx(slow_times.ttft, rel=1e-4)
    assert fast_times.e2e == pytest.approx(slow_times.e2e, rel=1e-4)
    assert fast.itl_ms.p99 == pytest.approx(slow.itl_ms.p99, rel=1e-4)
    assert fast.itl_ms.mean == pytest.approx(slow.itl_ms.mean, rel=1e-4)
    if pool == 1_500:
        assert fast.preemptions > 0


class _DraftingCost:
    """One step: 1 ms, 2 us a token (a decode's 3: two drafts and its own), 10 ns a decode per token of context."""

    pp, per_decode = 1, 3

    def seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        tokens = decodes * self.per_decode + sum(size for size, _ in chunks)
        return 1e-3 + 2e-6 * tokens + 1e-8 * decodes * context

    def decode_seconds(self, rows: int, context: int) -> float:
        return self.seconds(rows, context, [])


def test_the_cohort_counts_a_decodes_drafts_in_the_budget():
    """vLLM V1 takes a decode's draft tokens out of the step's budget (``_vllm``): with 3 tokens a decode (two drafts
    and its own) a 100-token budget holds at most 34 decodes a step (33 x 3 = 99; the 34th takes the last token), fewer
    beside a prompt's chunk. The cohort counted one token a member, so it ran more of its 48 users in a step than the
    budget holds: 1,912 steps where the exact run takes 2,002, 4.38 s against 4.56."""
    workload = Workload(lengths=drawn_lengths(300, 200, 200, range_ratio=0.5, seed=8), max_concurrency=48)
    limits = EngineLimits(
        "vllm", kv_blocks=40_000, block_size=16, max_num_batched_tokens=100, max_num_seqs=48, drafts_in_budget=True
    )
    fast, fast_times = simulate(workload, limits, _DraftingCost())  # type: ignore[arg-type]
    slow, slow_times = simulate(workload, limits, _DraftingCost(), skip_repeated_steps=False)  # type: ignore[arg-type]
    assert slow.steps == 2002
    assert fast.steps == slow.steps and fast_times == slow_times


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_more_users_never_lower_the_tail(engine):
    cost = _cost()
    limits = EngineLimits(engine, kv_blocks=20_000, block_size=16, max_num_batched_tokens=8192, max_num_seqs=256)
    tails = []
    for users in (1, 2, 4, 8, 16, 32, 64, 128):
        run, times = simulate(Workload(lengths=[(1024, 128)] * (4 * users), max_concurrency=users), limits, cost)
        assert sum(t > 0 for t in times.ttft) == 4 * users  # every request finished, with a first token
        tails.append((run.ttft_ms.p99, run.e2e_ms.p99))
    for (ttft, e2e), (next_ttft, next_e2e) in itertools.pairwise(tails):
        assert next_ttft >= ttft and next_e2e >= e2e


def test_a_rate_beyond_capacity_is_saturated_with_the_queue_growing():
    cost = _cost()
    limits = EngineLimits("vllm", kv_blocks=20_000, block_size=16, max_num_batched_tokens=8192, max_num_seqs=64)
    lengths = [(1024, 128)] * 600
    calm, _ = simulate(Workload(lengths=lengths, rate=2.0, seed=1), limits, cost)
    flooded, _ = simulate(Workload(lengths=lengths, rate=200.0, seed=1), limits, cost)
    assert not calm.saturated and calm.max_waiting < 10
    assert flooded.saturated and flooded.max_waiting > 300
    assert flooded.ttft_ms.p99 > 20 * calm.ttft_ms.p99


def test_a_request_longer_than_the_pool_is_refused():
    limits = EngineLimits("vllm", kv_blocks=10, block_size=16, max_num_batched_tokens=8192, max_num_seqs=8)
    with pytest.raises(BadInputError, match="does not fit the replica's KV pool of 160 tokens"):
        simulate(Workload(lengths=[(150, 20)]), limits, _cost())
    with pytest.raises(BadInputError, match="runs a prompt whole"):
        simulate(Workload(lengths=[(100, 2)]), limits._replace(engine="trtllm", max_num_batched_tokens=64), _cost())


class _LookupCountingList(list):
    """A running queue that counts ``in`` lookups: each is a scan of the whole list."""

    lookups = 0

    def __contains__(self, item) -> bool:
        type(self).lookups += 1
        return super().__contains__(item)


def test_sglang_decode_retracts_the_last_admitted_without_scanning_the_running_queue():
    """Three requests decode at a block's end (4 tokens of 4) with one free block: request 0 takes it; request 1
    finds none, retracts request 2 (admitted last) and takes the block it freed. The step keeps track of
    the retracted in a set: before, it asked ``in state.running`` once per request, a scan of the list each time, so a
    step cost O(running^2) and `mha plan deepseek-v3 --target 8xh200 --engine sglang` ran past 5 minutes."""
    state = _state([4, 4, 4], [2, 2, 2], blocks=8, block_size=4, budget=12)  # 4 + 2 reserved each: all admitted
    first = schedule("sglang", state)
    assert first == ([], [(0, 4), (1, 4), (2, 4)]) and state.free_blocks == 5
    _advance(state, first)
    state.free_blocks = 1  # the other 4 taken, as by requests outside this test
    state.running = _LookupCountingList(state.running)
    _LookupCountingList.lookups = 0
    assert schedule("sglang", state) == ([0, 1], [])  # request 2, retracted, is skipped when its turn comes
    assert list(state.waiting) == [2] and state.preemptions == 1 and state.held == [2, 2, 0]
    assert _LookupCountingList.lookups == 0
