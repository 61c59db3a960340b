"""Prefix caching in the serving simulator: requests that share a system prompt skip computing the part of it the
engine's cache holds (``core.serve.schedulers``). Hand-sized cases with a recording step cost, then the cost model."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.engine.vllm_rule_releases import counts_lookups_at_admission, counts_preempted_lookups
from mha_cli.core.presets import get_preset
from mha_cli.core.serve.schedulers import EngineState, schedule, vllm_admit
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload
from mha_cli.core.targets import load_targets


class Recording:
    """A step cost of 1 ms a step that records every prefill chunk as (tokens, context before it)."""

    pp = 1  # one pipeline stage: the serial loop (core.serve.pipelined runs pp > 1)
    per_decode = 1  # tokens a decode runs: no drafts

    def __init__(self) -> None:
        self.chunks: list[list[tuple[int, int]]] = []

    def seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        self.chunks.append(list(chunks))
        return 1e-3

    def decode_seconds(self, rows: int, context: int) -> float:
        return 1e-3


def limits(engine: str = "vllm", *, block: int = 16, budget: int = 8192, caching: bool = True) -> EngineLimits:
    return EngineLimits(engine=engine, kv_blocks=10_000, block_size=block, max_num_batched_tokens=budget,
                        max_num_seqs=64, prefix_caching=caching)  # fmt: skip


def prefills(cost: Recording) -> list[tuple[int, int]]:
    return [chunk for step in cost.chunks for chunk in step]


def test_one_user_computes_the_shared_prefix_once():
    """Three 1,000-token prompts sharing 520 tokens, one at a time, blocks of 16: the first computes all 1,000; each
    later one starts at 512 (32 whole blocks of the 520) and computes 488 after them."""
    cost = Recording()
    run, _ = simulate(Workload([(1000, 2)] * 3, max_concurrency=1, prefix_len=520), limits(), cost)
    assert prefills(cost) == [(1000, 0), (488, 512), (488, 512)]
    assert run.prefix_cache_hit_rate == pytest.approx(2 * 512 / 3000)


def test_the_hit_stops_short_of_the_whole_prompt():
    """A prompt that is all prefix still computes its last block: vLLM hits at most num_tokens - 1, in whole blocks."""
    cost = Recording()
    simulate(Workload([(512, 2)] * 2, max_concurrency=1, prefix_len=512), limits(), cost)
    assert prefills(cost) == [(512, 0), (16, 496)]  # 511 tokens may hit: 31 whole blocks


def test_vllm_hits_in_the_step_that_computes_the_prefix_sglang_after_it():
    """Four users at once: vLLM caches a block as it allocates it, so the three admitted after the first in the same
    step already hit; SGLang's radix cache holds the prefix once the step that computed it ends, so its first batch
    misses and only later requests hit."""
    vllm = Recording()
    simulate(Workload([(1000, 2)] * 8, max_concurrency=4, prefix_len=512), limits("vllm"), vllm)
    assert vllm.chunks[0] == [(1000, 0), (488, 512), (488, 512), (488, 512)]
    sglang = Recording()
    simulate(Workload([(1000, 2)] * 8, max_concurrency=4, prefix_len=512), limits("sglang", block=1), sglang)
    assert sglang.chunks[0] == [(1000, 0)] * 4
    assert prefills(sglang)[4:] == [(488, 512)] * 4  # pages of 1 token: the whole prefix


def test_trtllm_reuses_whole_blocks_after_the_context_step():
    cost = Recording()
    simulate(Workload([(1000, 2)] * 3, max_concurrency=1, prefix_len=520), limits("trtllm", block=32), cost)
    assert prefills(cost) == [(1000, 0), (488, 512), (488, 512)]


def test_without_prefix_caching_or_shared_prefix_nothing_hits():
    """The controls: the engine's cache switched off, or prompts that share nothing."""
    for workload, caching in ((Workload([(1000, 2)] * 3, max_concurrency=1, prefix_len=520), False),
                              (Workload([(1000, 2)] * 3, max_concurrency=1), True)):  # fmt: skip
        cost = Recording()
        run, _ = simulate(workload, limits(caching=caching), cost)
        assert prefills(cost) == [(1000, 0)] * 3 and run.prefix_cache_hit_rate == 0


@pytest.mark.parametrize("counts_preempted", [True, False])
def test_a_preempted_request_hits_again_when_it_comes_back(monkeypatch, counts_preempted):
    """A pool too small for every user: preempted requests are recomputed from their hit, not from scratch."""
    tries: list[bool] = []  # each try of a waiting request: whether it had been preempted
    known: list[int] = []  # and its tokens then: its prompt, and a preempted one's output so far
    try_waiting = EngineState.try_waiting

    def spy(state: EngineState, request: int) -> None:
        tries.append(state.was_preempted[request])
        known.append(state.known(request))
        try_waiting(state, request)

    monkeypatch.setattr(EngineState, "try_waiting", spy)
    cost = Recording()
    tight = EngineLimits(engine="vllm", kv_blocks=200, block_size=16, max_num_batched_tokens=8192, max_num_seqs=64,
                         counts_preempted_lookups=counts_preempted)  # fmt: skip
    run, _ = simulate(Workload([(1000, 600)] * 6, max_concurrency=3, prefix_len=512), tight, cost)
    assert run.preemptions > 0 and any(tries)
    assert all(context in (0, 512) or tokens == 1 for tokens, context in prefills(cost) if context < 1000)
    # the hit rate counts each try of a waiting request, as vLLM counts its queries (a preempted one's only before
    # 0.12): of those lookups of 1,000 tokens only the first (cold) misses the 512, so it stays under 100%. Counted
    # once per request, plus once per preemption, it was 0.448 (8 lookups) before try_waiting: a request sent back to
    # wait with a hit was not counted again, one without a hit was. A preempted request's lookup queries its output
    # so far too (vLLM records ``request.num_tokens``, review 321 #6).
    counted = [tokens for tokens, preempted in zip(known, tries, strict=True) if counts_preempted or not preempted]
    lookups = len(counted)
    assert lookups > 6 + run.preemptions
    assert (max(counted) > 1000) == counts_preempted
    assert run.prefix_cache_hit_rate == pytest.approx((lookups - 1) * 512 / sum(counted))


def test_vllm_0_27_counts_a_lookup_once_when_the_request_is_admitted():
    """vLLM 0.27+ records a waiting request's lookup at admission ("Record at admission so unscheduled lookups are
    not counted", ``Scheduler.schedule``; 0.26.0 counted every try): the same tight pool, the same preemptions and
    tries, but the hit rate counts each request once, the first (cold) one missing the 512-token prefix, and none of
    the preempted requests' returns (0.12+ keeps them apart)."""
    cost = Recording()
    tight = EngineLimits(engine="vllm", kv_blocks=200, block_size=16, max_num_batched_tokens=8192, max_num_seqs=64,
                         counts_lookups_at_admission=True)  # fmt: skip
    run, _ = simulate(Workload([(1000, 600)] * 6, max_concurrency=3, prefix_len=512), tight, cost)
    assert run.preemptions > 0
    assert run.prefix_cache_hit_rate == pytest.approx(5 * 512 / (6 * 1000))
    every_try, _ = simulate(Workload([(1000, 600)] * 6, max_concurrency=3, prefix_len=512),
                            tight._replace(counts_lookups_at_admission=False), Recording())  # fmt: skip
    assert every_try.prefix_cache_hit_rate > run.prefix_cache_hit_rate  # tries that waited, counted with their hit
    assert counts_lookups_at_admission((0, 27)) and not counts_lookups_at_admission((0, 26))
    assert counts_lookups_at_admission(None)


def _waiting(prefix_len: int) -> EngineState:
    """vLLM, blocks of 16, a pool of 100: request 0 (1,000 tokens, 63 blocks) admitted, request 1 (the same) tried
    and sent back (63 blocks > the 37 left: ``holds_whole``), its hit cached at allocation by request 0."""
    state = EngineState([1000, 1000], [4, 4], blocks=100, block_size=16, budget=8192, max_seqs=64)
    state.prefix_len, state.cache_at_allocation, state.whole_prompt_admission = prefix_len, True, True
    state.waiting.extend([0, 1])
    assert schedule("vllm", state) == ([], [(0, 1000)]) and list(state.waiting) == [1]
    return state


@pytest.mark.parametrize(("prefix_len", "hit"), [(512, 512), (8, 0)])
def test_vllm_counts_a_waiting_request_at_every_try_hit_or_not(prefix_len, hit):
    """vLLM looks a waiting request up, and counts the lookup, each time it tries it (0.21.0
    ``get_computed_blocks`` -> ``PrefixCacheStats.record``, before ``allocate_slots`` sends it back): two more tries
    of request 1 count 2 x 1,000 more tokens queried, with its hit each time (512: 32 whole blocks; a prefix of 8
    tokens is no whole block: 0): request 0 once (cold), request 1 three times. Before, request 1 with a hit was
    counted once (2,000 queried, 512 hit) and without one three times (4,000 queried)."""
    state = _waiting(prefix_len)
    assert state.queried_tokens == 2000 and state.hit_tokens == hit
    for _ in range(2):
        assert vllm_admit(state, 8192) == [] and state.computed[1] == hit
    assert state.queried_tokens == 4 * 1000 and state.hit_tokens == 3 * hit


def test_vllm_0_12_leaves_a_preempted_requests_lookups_out():
    """Request 0 preempted (back to the queue's front): its next try is looked up (it starts at the 512 hit) but
    counted only where the release counts preempted lookups (0.8-0.11); request 1, tried after it and sent back, is
    counted either way: 2,000 + 1,000 queried (512 + 512 hit), + 1,000 (+ 512) for request 0's try before 0.12."""
    for counts in (True, False):
        state = _waiting(512)
        state.counts_preempted_lookups = counts
        assert state.preempt_last() == 0 and list(state.waiting) == [0, 1]
        assert vllm_admit(state, 8192) == [(0, 488)] and state.computed[0] == 512 and list(state.waiting) == [1]
        assert state.queried_tokens == (4000 if counts else 3000)
        assert state.hit_tokens == (3 if counts else 2) * 512


@pytest.mark.parametrize(("release", "counts"), [(None, False), ((0, 21), False), ((0, 12), False), ((0, 11), True)])
def test_the_release_that_leaves_preempted_lookups_out(release, counts):
    assert counts_preempted_lookups(release) is counts


def test_a_shared_system_prompt_cuts_ttft_on_the_cost_model():
    """Llama-3-8B on an H100, 8 users of 4,096-token prompts of which 3,584 are a shared system prompt: the mean TTFT
    falls by over a third (each wave of new requests computes 512 tokens each instead of 4,096, but still reads the
    cached 3,584); TPOT falls too (less prefill rides along with the decodes), while a decode-only step, which reads
    the whole context either way, takes the same time: the median ITL stays."""
    profile = prior_profile(load_targets()["h100-sxm"])
    case = ServingCase(model=get_preset("llama-3-8b"), isl=4096, osl=128, concurrency=8)
    runs = {}
    for prefix in (0, 3584):
        workload = Workload([(4096, 128)] * 64, max_concurrency=8, prefix_len=prefix)
        runs[prefix], _ = simulate(workload, limits(budget=8192), StepCost(Stepper(case, profile)))
    shared, alone = runs[3584], runs[0]
    assert shared.prefix_cache_hit_rate == pytest.approx(63 * 3584 / (64 * 4096))
    assert shared.ttft_ms.mean < 0.65 * alone.ttft_ms.mean
    assert shared.tpot_ms.mean < alone.tpot_ms.mean
    assert shared.itl_ms.median == pytest.approx(alone.itl_ms.median, rel=0.05)


PLAN = ("plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "4096", "--osl", "128", "--concurrency", "16")


def test_plan_prices_a_shared_system_prompt_and_its_switch(cli):
    """``mha plan --shared-prefix``: the closed form computes each prompt's uncached part after reading the cached
    prefix, the simulator reports vLLM's hit rate; ``--no-enable-prefix-caching`` prices the plain prompt again."""
    alone = cli.json(*PLAN, "--closed-form")
    shared = cli.json(*PLAN, "--closed-form", "--shared-prefix", "3584")
    off = cli.json(*PLAN, "--closed-form", "--shared-prefix", "3584", "--no-enable-prefix-caching")
    assert shared["ttft_ms"] < 0.5 * alone["ttft_ms"]
    assert off["ttft_ms"] == alone["ttft_ms"] and off["itl_ms"] == alone["itl_ms"]
    assert any("3,584 of each 4,096-token prompt" in note for note in shared["notes"])
    simulated = cli.json(*PLAN, "--shared-prefix", "3584", "--num-prompts", "64")["simulated"]
    assert simulated["prefix_cache_hit_rate"] == pytest.approx(63 * 3584 / (64 * 4096))


def test_the_cached_part_is_whole_blocks_and_short_of_the_prompt():
    from mha_cli.core.cost.plan import cached_prefix

    assert cached_prefix(3584, 4096, 16) == 3584
    assert cached_prefix(1000, 4096, 16) == 992  # 62 whole blocks of 16
    assert cached_prefix(4096, 4096, 16) == 4080  # the prompt's last token is computed: its block too
    assert cached_prefix(4096, 4096, 1) == 4095  # SGLang's pages of one token


def test_the_launch_lines_turn_the_cache_off_when_asked(cli):
    args = ("plan", "llama-3-8b", "--target", "8xh100", "--isl", "1024", "--osl", "128", "--concurrency", "16")
    launch = cli.json(*args, "--no-enable-prefix-caching", "--closed-form")["launch"]
    assert launch["vllm"].endswith("--no-enable-prefix-caching") and "--disable-radix-cache" in launch["sglang"]
    default = cli.json(*args, "--closed-form")["launch"]
    assert "prefix" not in default["vllm"] and "radix" not in default["sglang"]


def test_a_prefix_longer_than_the_prompt_is_refused(cli):
    result = cli.run(*PLAN, "--shared-prefix", "5000")
    assert result.exit_code == 2 and "--shared-prefix 5,000" in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_warm_cache_serves_the_first_request_too():
    """A benchmark's warm-up requests leave the prefix cached: the first measured request hits it as well."""
    cost = Recording()
    simulate(Workload([(1000, 2)] * 2, max_concurrency=1, prefix_len=520, warm_prefix=True), limits(), cost)
    assert prefills(cost) == [(488, 512), (488, 512)]


def test_engines_whose_cache_is_off_by_default_and_models_with_a_state_get_no_hit(cli):
    """vLLM V0 caches no prefix unless asked (--enable-prefix-caching, which its launch line then carries); an
    attention-free Mamba model gets none either (vLLM caches no attention-free model's prefixes unless asked)."""
    v0 = ("plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "4096", "--osl", "128", "--concurrency", "4",
          "--closed-form", "--engine", "vllm@0.7")  # fmt: skip
    assert cli.json(*v0, "--shared-prefix", "3584")["ttft_ms"] == cli.json(*v0)["ttft_ms"]
    asked = cli.json(*v0, "--shared-prefix", "3584", "--enable-prefix-caching")
    assert asked["ttft_ms"] < cli.json(*v0)["ttft_ms"]
    search = ("plan", "llama-3-8b", "--target", "2xh100", "--isl", "1024", "--osl", "128", "--concurrency", "8",
              "--closed-form", "--engine", "vllm@0.7", "--enable-prefix-caching")  # fmt: skip
    assert "--enable-prefix-caching" in cli.json(*search)["launch"]["vllm"].split()
    mamba = ("plan", "tests/fixtures/hf_configs/mamba-2.8b-hf.json", "--target", "h100", "--tp", "1", "--isl",
             "1024", "--osl", "64", "--closed-form")  # fmt: skip
    assert cli.json(*mamba, "--shared-prefix", "512")["ttft_ms"] == cli.json(*mamba)["ttft_ms"]


def test_a_closed_loop_of_fewer_users_than_replicas_counts_only_the_busy_ones(cli):
    """Four users over eight replicas: four replicas serve, four stand idle."""
    out = cli.json("plan", "llama-3-8b", "--target", "8xh100", "--tp", "1", "--isl", "512", "--osl", "64",
                   "--concurrency", "4", "--num-prompts", "16")  # fmt: skip
    simulated = out["simulated"]
    assert simulated["deployment_output_tokens_per_s"] == pytest.approx(4 * simulated["output_tokens_per_s"])


def test_plan_without_vllms_prefix_cache_recomputes_a_preempted_request(cli):
    """``--no-enable-prefix-caching`` leaves no cache for a preempted request's blocks to stay in: vLLM 0.11.0 on one
    L4 with 4,096-token prompts then admits a returning request on its chunk, preempts it and admits it again (the
    thrash ``OwnBlocks`` stops where the cache is on). The flag reached the simulator only with KV offload, so both
    runs preempted 92 times."""
    load = ("plan", "llama-3-8b", "--target", "l4", "--tp", "1", "--isl", "4096", "--osl", "256", "--concurrency", "8",
            "--engine", "vllm@0.11.0")  # fmt: skip
    cached = cli.json(*load)["simulated"]
    uncached = cli.json(*load, "--no-enable-prefix-caching")["simulated"]
    assert cached["preemptions"] == 92
    assert uncached["preemptions"] > 10 * cached["preemptions"]
    assert uncached["output_tokens_per_s"] < cached["output_tokens_per_s"]


def test_a_drawn_prompt_is_never_shorter_than_its_shared_prefix():
    """Trial 323 #7: ``--isl 1024 --shared-prefix 1000 --random-range-ratio 0.9`` drew whole prompts from 103 tokens,
    shorter than the prefix they share; vllm bench serve draws the rest of the prompt and puts the prefix before it
    (``--random-prefix-len``), so every prompt is the prefix and 2 to 46 tokens (24 x 0.1 .. 24 x 1.9)."""
    from types import SimpleNamespace

    from mha_cli.core.serve.replica import prompt_lengths

    case = SimpleNamespace(isl=1024, osl=64, shared_prefix=1000)
    client = SimpleNamespace(lengths=None, range_ratio=0.9, seed=0)
    lengths = prompt_lengths(case, client, 500)
    assert min(p for p, _ in lengths) >= 1002 and max(p for p, _ in lengths) <= 1046
    assert sum(p for p, _ in lengths) / 500 == pytest.approx(1024, abs=3)
    plain = prompt_lengths(SimpleNamespace(isl=1024, osl=64, shared_prefix=0), client, 500)
    assert min(p for p, _ in plain) < 200  # the control: without a prefix the whole prompt is drawn


def test_a_prompt_all_prefix_stays_the_prefix_and_the_longest_request_note_counts_the_draw_after_it():
    """Review 324 #5: ``--isl 1024 --shared-prefix 1024`` drew whole prompts from 102 tokens; every prompt is the
    prefix, the outputs still drawn. #4: the note on the longest request still assumed the whole prompt drawn
    (2,068 tokens where 1,000 + 46 + 122 = 1,168 is the longest a draw makes)."""
    from types import SimpleNamespace

    from mha_cli.core.schemas import DeploymentSpec
    from mha_cli.core.serve.replica import prompt_lengths
    from mha_cli.core.serve.request_context import longest_request_note

    client = SimpleNamespace(lengths=None, range_ratio=0.9, seed=0)
    lengths = prompt_lengths(SimpleNamespace(isl=1024, osl=64, shared_prefix=1024), client, 200)
    assert {p for p, _ in lengths} == {1024} and len({o for _, o in lengths}) > 10
    note = longest_request_note(client, 1024, 64, deployment=DeploymentSpec(shared_prefix=1000))
    assert note is not None and "can reach 1,168 tokens" in note
    assert "can reach 2,068 tokens" in longest_request_note(client, 1024, 64)  # the control: no prefix
