"""A shared prefix's whole blocks held once in vLLM's pool (``core.cost.prefix_pool``), in the closed form, the
offload plan and the simulator; SGLang and TensorRT-LLM stay at one copy a request. Counts by hand."""

from __future__ import annotations

import re

import pytest

from mha_cli.core.serve.schedulers import EngineKind, EngineState
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.workload import Workload

USER = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--isl", "8192", "--osl", "256", "--concurrency",
        "64", "--shared-prefix", "6000", "--kv-offload-gib", "200")  # fmt: skip
"""The user's report: 13 of 64 waited, 24 preemptions and a host-pool spill with a copy of the prefix each."""


class Flat:
    """A step cost of 1 ms a step, whatever it runs."""

    pp = 1

    def seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        return 1e-3

    def decode_seconds(self, rows: int, context: int) -> float:
        return 1e-3


def test_the_users_command_admits_all_64(cli):
    """The pool holds 435,504 tokens = 27,219 blocks of 16. The prefix's 6,000 // 16 = 375 whole blocks are held
    once; each request's 8,448 tokens take 528 blocks, 528 - 375 = 153 of them its own (2,448 tokens). 64 users need
    375 + 64 x 153 = 10,167 blocks (162,672 tokens) < 27,219: all run, none waits; (27,219 - 375) // 153 = 175 would.
    The prefix stays on the GPU: 435,504 - 64 x 2,448 = 278,832 spare against 6,000, so no host-pool spill."""
    plan = cli.json(*USER, "--closed-form")
    assert plan["memory"]["engine"]["kv_tokens"] == 435_504 and plan["memory"]["engine"]["admitted_per_replica"] == 51
    assert plan["running_per_replica"] == 64 and plan["queued_per_replica"] == 0
    assert plan["offload"]["regime"] == "gpu" and plan["offload"]["gpu_spare_tokens"] == 435_504 - 64 * 2448
    assert any("175 request(s) at once per replica, where 51 hold a copy each" in note for note in plan["notes"])
    assert not any("wait" in note for note in plan["notes"])


def test_the_users_command_simulated_runs_all_64_without_preemption(cli):
    """The simulated vLLM loop: all 64 users run at once, nothing is preempted, no prompt token comes from the host."""
    simulated = cli.json(*USER)["simulated"]
    assert simulated["max_running"] == 64 and simulated["preemptions"] == 0
    assert simulated["host_hit_rate"] == 0.0 and simulated["prefix_cache_hit_rate"] > 0.7


def test_a_pool_really_short_still_waits(cli):
    """256 users of the same command: 375 + 256 x 153 = 39,543 blocks > 27,219; (27,219 - 375) // 153 = 175 run and
    81 wait."""
    plan = cli.json(*USER[:-5], "256", "--shared-prefix", "6000", "--closed-form")
    assert plan["running_per_replica"] == 175 and plan["queued_per_replica"] == 81
    assert any(note.startswith("81 of 256 users per replica wait") for note in plan["notes"])


def test_three_prefixes_size_the_running_requests_and_the_spare_pool_alike(cli):
    """256 users cycling through 3 prefixes of 6,000: the 3 prefixes' 3 x 375 = 1,125 blocks are held once each, so
    (27,219 - 1,125) // 153 = 170 run (not the one-prefix 175), leaving 435,504 - 170 x 2,448 = 19,344 tokens spare
    for the 18,000 of the prefixes: they stay on the GPU. Sized with 175 running the spare would be 7,104 and every
    prefix recomputed, at 51 running."""
    plan = cli.json(*USER[:-5], "256", "--shared-prefix", "6000", "--shared-prefixes", "3", "--closed-form")
    assert plan["running_per_replica"] == 170 and plan["queued_per_replica"] == 86
    offload = plan["offload"]
    assert (
        offload["regime"] == "gpu" and offload["gpu_spare_tokens"] == 19_344 and offload["working_set_tokens"] == 18_000
    )


def test_the_search_prices_the_loads_sharing_admits(cli):
    """No --tp: the search on 2 H100s. tp 1 x 2 replicas admits 175 per replica with the prefix held once (above), not
    the 51 of a copy each, so its grid runs to 2 x 175 = 350 users and its line says 175."""
    found = cli.json("plan", "llama-3.1-8b", "--target", "2xh100", "--isl", "8192", "--osl", "256", "--shared-prefix",
                     "6000", "--closed-form")  # fmt: skip
    assert "tp 1 x pp 1 x 2 replica(s): 175 request(s) at once per replica" in found["layouts"]
    loads = [c["concurrency"] for c in found["candidates"] if c["deployment"]["tp"] == 1 and c["deployment"]["pp"] == 1]
    assert max(loads) == 350 and 256 in loads


def test_sglang_holds_the_prefix_once_in_its_radix_cache(cli):
    """SGLang on the same H100: 413,050 tokens in pages of 1; the 6,000 prefix tokens held once (locked radix nodes),
    each request 8,448 - 6,000 = 2,448 of its own: (413,050 - 6,000) // 2,448 = 166 at once where 413,050 // 8,448 =
    48 hold a copy each, so all 64 run; the simulated SGLang loop runs them all without a retraction."""
    plan = cli.json(*USER[:-2], "--engine", "sglang")
    assert plan["memory"]["engine"]["kv_tokens"] == 413_050 and plan["memory"]["engine"]["admitted_per_replica"] == 48
    assert plan["running_per_replica"] == 64 and plan["queued_per_replica"] == 0
    assert any("166 request(s) at once per replica, where 48 hold a copy each" in note for note in plan["notes"])
    assert plan["simulated"]["max_running"] == 64 and plan["simulated"]["preemptions"] == 0


def test_sglang_shares_a_sliding_window_models_prefix_too(cli):
    """gpt-oss-20b (sliding-window layers) on SGLang (0.5.23, its hybrid SWA pool: ``core.engine.sglang_swa_pool``):
    1,276,587 full-layer tokens in pages of 1; the 6,000 prefix tokens held once, each request 2,448 of its own:
    (1,276,587 - 6,000) // 2,448 = 519 at once, where 151 hold a copy each; the 512 users all run."""
    plan = cli.json("plan", "gpt-oss-20b", "--target", "h100", "--tp", "1", "--engine", "sglang", "--isl", "8192",
                    "--osl", "256", "--concurrency", "512", "--shared-prefix", "6000", "--closed-form")  # fmt: skip
    engine = plan["memory"]["engine"]
    # was 1,148,929 tokens, 136 admitted, 466 running: every layer priced at full length before the hybrid pool
    assert engine["kv_tokens"] == 1_276_587 and engine["admitted_per_replica"] == 151
    assert plan["running_per_replica"] == 512
    assert any("519 request(s) at once per replica, where 151 hold a copy each" in note for note in plan["notes"])


def test_trtllm_stays_at_one_copy_a_request(cli):
    """TensorRT-LLM's block reuse is not priced as sharing (not read): the running requests are what its pool admits
    with a copy each, 55 of the 64, and no note says the prefix is held once."""
    plan = cli.json(*USER[:-2], "--engine", "trtllm", "--closed-form")
    assert plan["running_per_replica"] == plan["memory"]["engine"]["admitted_per_replica"] == 55
    assert not any("held once" in note for note in plan["notes"])


def limits(share: bool, blocks: int = 125, engine: EngineKind = "vllm") -> EngineLimits:
    return EngineLimits(engine=engine, kv_blocks=blocks, block_size=16, max_num_batched_tokens=8192, max_num_seqs=64,
                        shares_prefix_blocks=share)  # fmt: skip


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_simulator_holds_the_prefix_once(engine):
    """Prompts of 1,000 tokens, 512 shared (32 whole blocks), 2 output tokens: each request holds ceil(1,002 / 16) =
    63 blocks, 32 of them the prefix's. A pool of 125 blocks runs 32 + 3 x 31 = 125: three at once sharing the
    prefix, one (2 x 63 = 126 > 125) with a copy each. Nothing is preempted either way. (SGLang's own check, the
    488 tokens to compute + 2 to come against the room left, 2,000 - 490 a request admitted, lets a fourth try: the
    pool stops it.)"""
    work = Workload([(1000, 2)] * 8, max_concurrency=4, prefix_len=512, warm_prefix=True)
    shared, _ = simulate(work, limits(True, engine=engine), Flat())
    copies, _ = simulate(work, limits(False, engine=engine), Flat())
    assert (shared.max_running, copies.max_running) == (3, 1)
    assert shared.preemptions == copies.preemptions == 0


def test_the_pool_gets_every_block_back():
    """Three requests link the cached prefix (32 blocks) and take 31 of their own each; the pool's free blocks are
    125 - 32 - 3 x 31 = 0; as they end, the prefix's blocks come back with the last, cached and unreferenced."""
    state = EngineState([1000] * 3, [2] * 3, blocks=125, block_size=16, budget=8192, max_seqs=64)
    state.prefix_len, state.share_blocks, state.cache_at_allocation = 512, True, True
    state.cache_prefix(512)  # warm: cached, no request holds it
    for request in range(3):
        state.start(request)
        assert state.computed[request] == 512
        assert state.grow(request, 1000)
    assert state.free_blocks == 0 and state.shared_held == 32 and state.linked == [32, 32, 32]
    state.release(0)
    state.release(1)
    assert state.free_blocks == 2 * 31 and state.shared_held == 32
    state.release(2)
    assert state.free_blocks == 125 and state.shared_held == 0 and state.prefix_cached == 512


def test_a_cold_request_hands_its_prefix_blocks_to_the_cache():
    """No prefix cached: the first request allocates its 63 blocks (vLLM caches the full ones as it allocates them),
    and its first 32 become the cache's; a second request links them and takes 31: 125 - 63 - 31 = 31 free."""
    state = EngineState([1000] * 2, [2] * 2, blocks=125, block_size=16, budget=8192, max_seqs=64)
    state.prefix_len, state.share_blocks, state.cache_at_allocation = 512, True, True
    state.start(0)
    assert state.computed[0] == 0 and state.grow(0, 1000)
    assert state.linked[0] == 32 and state.shared_held == 32 and state.free_blocks == 125 - 63
    state.start(1)
    assert state.computed[1] == 512 and state.grow(1, 1000)
    assert state.free_blocks == 125 - 63 - 31


def test_an_unreferenced_prefix_is_evicted_when_its_blocks_are_needed():
    """The prefix (32 blocks) cached with no holder sits among the 40 free blocks. A 300-token prompt hits at most
    299 tokens, 18 whole blocks: it links those and takes 1 of its own, 40 - 18 - 1 = 21 free, room for the 14
    cached blocks no one links. Ten more blocks of its own leave 11 free: vLLM takes them from the free queue,
    evicting cached blocks, so the cache keeps 18 linked + 11 = 29 blocks (the tail goes first)."""
    state = EngineState([300], [1], blocks=40, block_size=16, budget=8192, max_seqs=64)
    state.prefix_len, state.share_blocks, state.cache_at_allocation = 512, True, True
    state.cache_prefix(512)
    state.start(0)
    assert state.computed[0] == 288 and state.grow(0, 300)
    assert state.free_blocks == 21 and state.prefix_cached == 512
    assert state.grow(0, 300 + 16 * 10)
    assert state.free_blocks == 11 and state.prefix_cached == (18 + 11) * 16


def test_every_block_comes_back_after_a_run_with_preemptions(monkeypatch):
    """200 requests of 200-1,200 prompt and 1-300 output tokens, 32 users, a 512-token prefix, a pool of 300 blocks:
    requests are preempted and restarted, hits linked and unlinked; when all have ended every block is free again and
    the prefix holds none (its blocks cached, unreferenced)."""
    import random

    from mha_cli.core.serve import simulate as simulate_module

    made: list[EngineState] = []

    class Recorded(EngineState):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(simulate_module, "EngineState", Recorded)
    draw = random.Random(0)
    lengths = [(draw.randint(200, 1200), draw.randint(1, 300)) for _ in range(200)]
    run, _ = simulate(Workload(lengths, max_concurrency=32, prefix_len=512), limits(True, blocks=300), Flat())
    state = made[-1]
    assert run.preemptions > 0 and run.prefix_cache_hit_rate > 0.5
    assert state.free_blocks == state.total_blocks == 300 and state.shared_held == 0 and not any(state.held)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize(("groups", "host_blocks"), [(3, 0), (4, 200)])
def test_several_prefixes_account_for_every_block_at_every_step(monkeypatch, engine, groups, host_blocks):
    """Requests carrying one of 3 or 4 prefixes in turn (``core.serve.offload``'s tiers), with and without a host
    tier, in a pool of 300 blocks that preempts: after every step each block is free, a running request's own (held
    less linked) or its prefix's, which holds as many as the most any running request links, and the GPU tier still
    caches every block a running request links; at the end all are free. Exact steps (no cohort), so every running request's ``held`` is current."""
    import random
    from collections import Counter

    from mha_cli.core.serve import simulate as simulate_module

    made: list[EngineState] = []
    broken: list[tuple[int, int, int, int]] = []

    class Recorded(EngineState):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    def after_step(run, ended, keep_trace):
        state = run.state
        own = sum(state.held[r] - state.linked[r] for r in range(len(state.held)) if state.held[r])  # a waiting one: 0
        tops = Counter()
        for request in state.running:
            group = state.group_of(request)
            tops[group] = max(tops[group], state.linked[request] if state.held[request] else 0)
        if state.free_blocks + own + state.shared_held != state.total_blocks or sum(tops.values()) != state.shared_held:
            broken.append((state.free_blocks, own, state.shared_held, sum(tops.values())))
        evicted = [r for r in state.running if state.held[r] and state.cached_blocks(r) < state.linked[r]]
        if evicted:  # a prefix a running request links is never evicted (``PrefixTiers._evict``)
            broken.append(tuple(evicted))
        original(run, ended, keep_trace)

    original = simulate_module._Run.after_step
    monkeypatch.setattr(simulate_module, "EngineState", Recorded)
    monkeypatch.setattr(simulate_module._Run, "after_step", after_step)
    draw = random.Random(0)
    lengths = [(draw.randint(200, 1200), draw.randint(1, 300)) for _ in range(200)]
    work = Workload(lengths, max_concurrency=32, prefix_len=512, prefix_groups=groups)
    pool = limits(True, blocks=300, engine=engine)._replace(host_blocks=host_blocks, load_s_per_token=1e-7)
    run, _ = simulate(work, pool, Flat(), skip_repeated_steps=False)
    state = made[-1]
    assert state.tiers is not None and run.preemptions > 0 and run.prefix_cache_hit_rate > 0.3
    assert broken == []
    assert state.free_blocks == state.total_blocks == 300 and state.shared_held == 0 and not any(state.held)


class ContextCost:
    """1 ms a step, 2 us a token, 13 ns a decode per token of its context: a step's time follows who runs in it."""

    pp = 1

    def seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        return 1e-3 + 2e-6 * (decodes + sum(size for size, _ in chunks)) + 1.3e-8 * decodes * context

    def decode_seconds(self, rows: int, context: int) -> float:
        return self.seconds(rows, context, [])


TIGHT_PREFIX_RUNS = [
    # a prompt's chunk computes a prefix block whose cached twin another request's allocation evicts in the step:
    # once computed, the chunk's copy is cached (``_Run.one_step``); the cohort skipped that (33 preemptions, 569 steps)
    pytest.param(
        [(64, 4), (49, 32), (49, 30), (49, 69), (48, 73), (48, 47), (48, 55), (48, 49), (48, 5), (64, 56), (49, 64),
         (64, 52), (48, 7), (48, 67), (48, 40), (48, 21), (48, 13), (64, 53), (48, 38), (64, 54), (48, 48), (48, 21),
         (49, 17), (49, 57), (64, 25), (64, 36), (64, 30), (48, 20), (48, 66), (49, 71), (64, 80), (48, 69)],
        11, 64, False, 571, 40, id="chunk-caches-once-computed",
    ),
    # a decode inside its last block allocates nothing (``_vllm``), so it cannot cache again the prefix blocks an
    # eviction took; the cohort grew every loose request, and so brought them back (373 steps became 380)
    pytest.param(
        [(48, 51), (49, 72), (49, 51), (48, 33), (48, 58), (48, 21), (49, 23), (49, 76), (48, 17), (48, 57),
         (49, 29), (48, 48), (64, 18), (48, 17), (48, 20), (48, 8), (49, 42), (48, 5)],
        8, 512, True, 373, 20, id="decode-inside-a-block-allocates-nothing",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("lengths", "blocks", "budget", "whole", "steps", "preemptions"), TIGHT_PREFIX_RUNS)
def test_the_cohort_gives_the_exact_run_where_prefix_blocks_are_evicted(lengths, blocks, budget, whole, steps,
                                                                       preemptions):  # fmt: skip
    """A 48-token prefix (3 blocks of 16) in a pool hardly larger than the longest request, 4 users, vLLM sharing the
    prefix's blocks: they are evicted and cached again, requests preempted. The pp 1 cohort (``core.serve.cohort``)
    must give the exact step-by-step run: its steps, preemptions, hit rate and every request's times. Two cases
    ``benchmarks/cohort_fuzz.py`` found (seeds 130 and 41), one for each way the cohort parted from the exact loop."""
    workload = Workload(lengths, max_concurrency=4, prefix_len=48)
    limits = EngineLimits(
        "vllm", kv_blocks=blocks, block_size=16, max_num_batched_tokens=budget, max_num_seqs=64,
        shares_prefix_blocks=True, whole_prompt_admission=whole, counts_lookups_at_admission=whole,
    )  # fmt: skip
    fast, fast_times = simulate(workload, limits, ContextCost())  # type: ignore[arg-type]
    exact, exact_times = simulate(workload, limits, ContextCost(), skip_repeated_steps=False)  # type: ignore[arg-type]
    assert (exact.steps, exact.preemptions) == (steps, preemptions)
    assert (fast.steps, fast.preemptions) == (steps, preemptions)
    assert fast.prefix_cache_hit_rate == exact.prefix_cache_hit_rate
    assert fast_times.ttft == pytest.approx(exact_times.ttft, rel=1e-9)
    assert fast_times.e2e == pytest.approx(exact_times.e2e, rel=1e-9)


def test_the_pool_note_names_every_prefix_it_holds(cli):
    """Trial 394 #6: with 64 prefixes the note said "shared prefix held once ... one copy" beside a figure that holds
    64 of them: (pool blocks - 64 x 384) // 144 own blocks. Llama-3.1-70B on 8 x H100 at tp 8: 386 requests, where
    one copy would leave room for more (the control: one prefix admits more than 64 do)."""
    args = ("plan", "llama-3.1-70b", "--target", "8xh100", "--tp", "8", "--concurrency", "32", "--isl", "8192",
            "--osl", "256", "--shared-prefix", "6144", "--closed-form")  # fmt: skip
    many = next(n for n in cli.json(*args, "--shared-prefixes", "64")["notes"] if "held once" in n)
    one = next(n for n in cli.json(*args)["notes"] if "held once" in n)
    assert many.startswith("64 shared prefixes held once each: each one's 384 whole blocks of 16")
    assert one.startswith("shared prefix held once: its 384 whole blocks of 16")
    admitted = [int(re.search(r"(\d+) request\(s\) at once per replica", note).group(1)) for note in (many, one)]
    assert admitted[0] == 386 and admitted[1] > admitted[0]
