"""vLLM's sliding-window groups in the simulated serving loop (``core.engine.window_blocks``): the blocks a request
holds and asks for, by hand, and what the loop admits with them, against the old count (a block of tokens in every
group) that refused or starved these runs."""

from __future__ import annotations

import pytest

from mha_cli.core.engine.vllm_rule_releases import caps_window_admission
from mha_cli.core.engine.window_blocks import WindowGroup, admission_blocks, held_blocks, skipped_tokens
from mha_cli.core.errors import BadInputError
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload, drawn_lengths
from tests.conftest import reference_hf_config

FULL = WindowGroup("full", 0, 0)
GEMMA3_SLIDING = WindowGroup("sliding", 1024, 1089)
"""Gemma-3-27B's sliding groups at 33,000 tokens on an H100 (vLLM 0.32: window 1,024, two steps of 8,192 in flight):
ceil((1,023 + 16,384) / 16) + 1 = 1,089 blocks."""
GEMMA3_GROUPS = (FULL, *[GEMMA3_SLIDING] * 6)
"""10 global layers in one group, 52 local ones in six groups of 10 (8 empty slots)."""


def test_a_sliding_group_frees_the_blocks_its_window_left():
    sliding = WindowGroup("sliding", 1024, 0)
    # the second chunk of 8,192 after 8,192 computed: 16,384 tokens' slots, 8,192 - 1,023 = 7,169 tokens skipped,
    # 448 whole blocks of 16 freed: 1,024 - 448 = 576 held (the full group keeps its 1,024)
    assert skipped_tokens(sliding, 8192) == 7169
    assert held_blocks((sliding,), 16384, 8192, 16) == 576
    assert held_blocks((FULL, sliding), 16384, 8192, 16) == 1024 + 576
    assert held_blocks((sliding,), 1000, 0, 16) == 63  # nothing computed: nothing skipped
    chunked = WindowGroup("chunked", 8192, 0)  # Llama 4: whole chunks skipped, 8,192 // 16 = 512 blocks
    assert skipped_tokens(chunked, 9000) == 8192
    assert held_blocks((chunked,), 9001, 9000, 16) == 563 - 512


def test_admission_asks_the_sizers_blocks_from_vllm_021():
    # 33,000 tokens: 2,063 blocks of 16 a group; capped, a sliding group asks 1,089
    assert admission_blocks(GEMMA3_GROUPS, 33000, 16, capped=True) == 2063 + 6 * 1089
    assert admission_blocks(GEMMA3_GROUPS, 33000, 16, capped=False) == 7 * 2063
    assert admission_blocks(GEMMA3_GROUPS, 500, 16, capped=True) == 7 * 32  # under the cap: its own blocks
    assert not caps_window_admission((0, 20))
    assert caps_window_admission((0, 21))
    assert caps_window_admission(None)


def _limits(groups: tuple[WindowGroup, ...], group_blocks: int, *, capped: bool) -> EngineLimits:
    return EngineLimits(
        "vllm", kv_blocks=group_blocks // len(groups), block_size=16, max_num_batched_tokens=8192,
        max_num_seqs=256, prefix_caching=False, whole_prompt_admission=True, window_groups=groups,
        group_blocks=group_blocks, caps_window_admission=capped,
    )  # fmt: skip


def test_vllm_019_never_admits_a_prompt_its_sliding_groups_ask_whole():
    """The report in vllm-project/vllm#39866 (Gemma-4-26B-A4B on an RTX 5090, vLLM 0.19.1rc1): 'GPU KV cache size'
    78,256 tokens; prompts of 48,758 tokens were served, one of 97,321 never admitted. 0.19 logs the pool's blocks
    over its groups x the block, and its admission asks a block of every group for each block of the prompt, so a
    prompt is admitted only up to those 78,256 tokens (25 sliding and 5 full layers: groups of 5)."""
    sliding = WindowGroup("sliding", 1024, -(-(1023 + 16384) // 16) + 1)
    groups = (FULL, *[sliding] * 5)
    limits = _limits(groups, 78256 // 16 * len(groups), capped=False)
    cost = StepCost.__new__(StepCost)  # never reached: the refusal comes first
    with pytest.raises(BadInputError, match="97,321 tokens asks 36,498 blocks of a pool of 29,346"):
        simulate(Workload([(97321, 16)]), limits, cost)


@pytest.mark.parametrize(
    ("release", "pool", "cap", "running"),
    [("", 12020, 1089, 2), ("@0.21", 12905, -(-(1023 + 8192) // 16) + 1, 4)],  # 0.21-0.25 reserve one step
)
def test_gemma3_at_33k_runs_what_its_pool_admits_beside_decoding_requests(cli, release, pool, cap, running):
    """On one H100 the plan's pool at 33,000 tokens is 12,020 blocks of 16 over 7 groups (vLLM 0.32: what `mha kv
    gemma-3-27b --target h100 --seq 33000` prints; 12,905 on 0.21). A waiting request asks 2,063 + 6 x cap; a
    decoding one holds 2,063 + 6 x 65 = 2,453 at most (its window's 1,023 tokens and the next: 65 blocks a sliding
    group). So requests run while pool - (n - 1) x 2,453 >= the ask: 2 on 0.32 (12,020 - 2,453 >= 8,597), 4 on
    0.21 (12,905 - 3 x 2,453 >= 5,525). The old count (a block of tokens in every group: 12,020 // 7 = 1,717 of the
    2,063 needed) refused the run."""
    plan = cli.json(
        "plan", "gemma-3-27b", "--target", "h100", "--tp", "1", "--isl", "32000", "--osl", "1000", "--concurrency",
        "8", "--engine", f"vllm{release}",
    )  # fmt: skip
    ask, decoding = 2063 + 6 * cap, 2063 + 6 * 65
    assert plan["memory"]["engine"]["kv_blocks"] == pool
    assert running == 1 + (pool - ask) // decoding
    assert plan["simulated"]["max_running"] == running
    assert plan["simulated"]["preemptions"] == 0


def test_gemma3_at_33k_on_vllm_020_is_refused_with_the_cause(cli):
    """vLLM 0.20 asks 7 x 2,063 = 14,441 blocks for the prompt, more than its pool of 12,905 at 33,000 tokens: it
    never admits one (vllm-project/vllm#39734), though it starts. `plan` refuses in one line pointing at `kv`, which
    says why; 0.21 runs 4 (above)."""
    pinned = ("--target", "h100", "--tp", "1", "--isl", "32000", "--osl", "1000", "--concurrency", "8")
    result = cli.run("plan", "gemma-3-27b", *pinned, "--engine", "vllm@0.20")
    assert result.exit_code == 2
    assert "the engine admits no request of this length on this deployment: see `mha kv` for why" in result.output
    engine = cli.json("kv", "gemma-3-27b", "--target", "h100", "--seq", "33000", "--engine", "vllm@0.20")["memory"][
        "engine"
    ]
    assert engine["starts"] and engine["admitted_per_replica"] == 0
    assert any("asks 14,441 blocks of 12,904, so none is admitted" in note for note in engine["notes"])


def test_a_state_group_holds_its_blocks_whatever_the_length():
    state = WindowGroup("state", 0, 1)
    assert held_blocks((FULL, state, state), 131072, 130000, 528) == 249 + 2
    assert admission_blocks((FULL, state, state), 130000, 528, capped=False) == 247 + 2


def test_a_mamba_hybrid_runs_what_its_engine_admits(cli):
    """Granite-4.0-H-Small on one H200 at 131,072 tokens, prefix caching off: 7,668 blocks of 528 tokens over 10
    groups, 4 of attention layers in one and 36 Mamba layers in nine, a state a block (what `mha kv` prints: 29.7x).
    A waiting request asks ceil(130,000 / 528) + 9 = 256 blocks, a decoding one holds 249 + 9 = 258, so
    1 + (7,668 - 256) // 258 = 29 run at once, as the engine's plan admits; the old count (a block of tokens in every
    group: 7,668 // 10 = 766 of 249) ran 3. With vLLM's default cache (the Mamba align mode, 3 pages a state group
    for a Mamba-2 mixer from 0.32) a request asks 247 + 27 = 274 and holds 249 + 27 = 276: 1 + 7,394 // 276 = 27.
    (7,664 blocks before trial 371 #2 dropped the RoPE table granitemoehybrid.py never builds: position_embedding_type
    nope.)"""
    args = ("plan", str(reference_hf_config("granite-4.0-h-small")), "--target", "h200", "--tp", "1", "--isl",
            "130000", "--osl", "1072", "--concurrency", "32", "--num-prompts", "64")  # fmt: skip
    plan = cli.json(*args, "--no-enable-prefix-caching")
    assert plan["memory"]["engine"]["kv_blocks"] == 7668
    assert plan["running_per_replica"] == 29
    assert plan["simulated"]["max_running"] == 1 + (7668 - 256) // 258 == 29
    assert plan["simulated"]["preemptions"] == 0
    cached = cli.json(*args)
    assert cached["memory"]["engine"]["mamba_cache_mode"] == "align"
    assert cached["running_per_replica"] == cached["simulated"]["max_running"] == 1 + (7668 - 274) // 276 == 27


def test_kvs_batch_as_allocated_agrees_with_its_verdict(cli):
    """`mha kv gemma-3-27b-it --seq 32768 --batch 2 --target h100` said "fits", 2 at once, beside "as allocated
    21.0 GiB, short by 7.4 GiB": twice the sizer's blocks (trial 272 #3). As allocated is now the batch as the
    scheduler holds it: one decoding (2,048 + 6 x 65 = 2,438 blocks of 16 x 8,192 B x 10 layers) and one admitted
    on its ask (2,048 + 6 x 1,089 = 8,582)."""
    args = ("kv", str(reference_hf_config("gemma-3-27b-it")), "--seq", "32768", "--target", "h100")
    block = 16 * 8192 * 10
    two = cli.json(*args, "--batch", "2")["memory"]
    assert two["engine"]["running_kv_bytes"] == [2438 * block, 8582 * block]
    assert two["allocated_kv_bytes_per_device"] == (2438 + 8582) * block
    assert two["fits"] and two["max_sequences"] == 2 and two["headroom_bytes"] >= 0
    three = cli.json(*args, "--batch", "3")["memory"]
    assert three["allocated_kv_bytes_per_device"] == (2 * 2438 + 8582) * block
    assert not three["fits"] and three["headroom_bytes"] < 0


@pytest.mark.parametrize(("lags", "held"), [(False, 1024 - 448), (True, 1024)])
def test_from_vllm_026_a_window_frees_behind_the_tokens_processed(lags, held):
    """vLLM 0.26+ frees a windowed group's blocks behind ``total_computed_tokens - request.num_in_flight_tokens``
    (``allocate_slots``): under async scheduling the chunk scheduled last step is still in flight when the next is
    allocated (review 273 #4). A prompt's second chunk of 8,192 on a window of 1,024: 576 blocks held when the first
    is done, all 1,024 while it is in flight."""
    from mha_cli.core.serve.schedulers import EngineState

    state = EngineState([32768], [1], blocks=4096, block_size=16, budget=8192, max_seqs=1)
    state.window_groups, state.window_free_lags = (WindowGroup("sliding", 1024, 0),), lags
    assert state.grow(0, 8192) and state.held[0] == 512
    state.computed[0] = 8192
    assert state.grow(0, 16384) and state.held[0] == held
    assert state.free_blocks == 4096 - held


def test_a_windowed_run_is_the_same_with_and_without_the_shortcuts():
    """The decode-repeat shortcut counted one group's blocks against a request's blocks over every group and let
    running requests run short of blocks: 0 preemptions where the step-by-step loop has 126 (review 273 #1). A
    windowed run takes the step-by-step path: the same figures either way."""
    from tests.test_serve_simulate import _cost

    groups = (FULL, *[WindowGroup("sliding", 256, -(-(255 + 512) // 16) + 1)] * 5)
    limits = _limits(groups, 2000, capped=True)._replace(max_num_batched_tokens=512)
    workload = Workload([(2000, 800)] * 40, max_concurrency=24)
    fast, _ = simulate(workload, limits, _cost())
    slow, _ = simulate(workload, limits, _cost(), skip_repeated_steps=False)
    assert fast.preemptions == slow.preemptions > 0
    assert fast.ttft_ms == slow.ttft_ms and fast.max_running == slow.max_running


_GPT_OSS_LIKE = (FULL, WindowGroup("sliding", 128, 10))
_LLAMA4_LIKE = (FULL, WindowGroup("chunked", 64, 6), WindowGroup("chunked", 64, 6))
_CLOSED_LOOP = Workload(drawn_lengths(300, 700, 60, range_ratio=0.8, seed=3), max_concurrency=16)


@pytest.mark.parametrize(
    ("groups", "group_blocks", "lags", "workload"),
    [
        # gpt-oss-like: full and 128-token sliding groups on a pool that preempts, with async scheduling's frees
        # lagging the tokens in flight and without
        (_GPT_OSS_LIKE, 600, True, _CLOSED_LOOP),
        (_GPT_OSS_LIKE, 600, False, _CLOSED_LOOP),
        # Llama 4's chunked local groups under an open loop's bursts (a waiting queue), and a Mamba-state group
        (_LLAMA4_LIKE, 600, True, Workload(drawn_lengths(200, 300, 80, range_ratio=0.9, seed=5), rate=40.0,
                                           burstiness=0.3)),
        ((WindowGroup("state", 0, 1), WindowGroup("sliding", 40, 5)), 150, False,
         Workload(drawn_lengths(90, 500, 50, range_ratio=0.95, seed=8), max_concurrency=48)),
    ],
    ids=["sliding-lags", "sliding", "chunked-open-loop", "state-and-sliding"],
)  # fmt: skip
def test_a_windowed_decode_run_is_the_exact_steps_to_the_bit(groups, group_blocks, lags, workload, monkeypatch):
    """The decode-repeat shortcut (``_Run.decode_run``) on vLLM's windowed groups against the step-by-step scheduler:
    every figure equal, not close (each step priced exactly, each request's blocks as its allocations at whole blocks
    leave them), preemptions and the frees that lag the tokens in flight included."""
    from mha_cli.core.serve import simulate as simulate_module
    from tests.test_serve_simulate import _cost

    runs = []
    shortcut = simulate_module._Run.decode_run

    def counted(run, decodes):
        before = run.steps
        ended = shortcut(run, decodes)
        runs.append(run.steps - before)
        return ended

    monkeypatch.setattr(simulate_module._Run, "decode_run", counted)
    limits = _limits(groups, group_blocks, capped=True)._replace(max_num_batched_tokens=512, window_free_lags=lags)
    cost = _cost()
    fast, fast_times = simulate(workload, limits, cost)
    slow, slow_times = simulate(workload, limits, cost, skip_repeated_steps=False)
    assert fast == slow and fast_times == slow_times
    assert fast.preemptions > 0  # the pool runs short: the horizon decides where a run stops
    assert sum(runs) > fast.steps / 10 and max(runs) > 16  # the shortcut took its share of steps, over whole blocks


def test_a_shared_prefix_on_a_windowed_model_is_priced_not_refused(cli):
    """With a shared prefix the simulator counts a request in every group, on the pool as the start-up sizer counts
    requests of max_model_len (1.40x at 33,000: one at a time): it was refused, the pool read as 12,020 // 7 blocks
    of every group (review 273 #2)."""
    plan = cli.json(
        "plan", "gemma-3-27b", "--target", "h100", "--tp", "1", "--isl", "32000", "--osl", "1000", "--concurrency",
        "8", "--shared-prefix", "1000", "--num-prompts", "16",
    )  # fmt: skip
    assert plan["simulated"]["max_running"] == 1 and plan["simulated"]["prefix_cache_hit_rate"] > 0


def test_before_vllm_091_sliding_layers_beside_full_ones_are_priced_full(cli):
    """vLLM 0.8.5 and 0.9.0's ``unify_hybrid_kv_cache_specs`` turn every sliding-window spec into a full-attention
    one when both kinds are present; the hybrid KV cache manager keeps them apart from 0.9.1 (read in the wheels;
    review 273 #5). Gemma-3-4B at 32K on an H100: one group of all 34 layers, int(blocks x 16 / 32,768) at once, on
    0.9.0; seven groups, five sliding, from 0.9.1. Mistral-7B-v0.1's layers are all sliding: its window is kept."""
    args = ("kv", str(reference_hf_config("gemma-3-4b-it")), "--target", "h100", "--seq", "32768")
    early = cli.json(*args, "--engine", "vllm@0.9.0")["engine"]
    assert [group["kind"] for group in early["groups"]] == ["full"] and early["groups"][0]["n_layers"] == 34
    assert early["admitted_per_replica"] == early["kv_blocks"] * 16 // 32768
    later = cli.json(*args, "--engine", "vllm@0.9.1")["engine"]
    assert {group["kind"] for group in later["groups"]} == {"full", "sliding"} and len(later["groups"]) == 7
    mistral = cli.json("kv", "mistral-7b-v0.1", "--target", "h100", "--seq", "32768", "--engine", "vllm@0.9.0")
    assert [(group["kind"], group["window"]) for group in mistral["engine"]["groups"]] == [("sliding", 4096)]


def test_the_windowed_shortcut_is_vllms_alone():
    """An SGLang run given window groups (through ``simulate``; the CLI counts SGLang's pool in full blocks) keeps the
    exact path: the shortcut's allocations at whole blocks are vLLM's, SGLang grows every step and decays its
    new-token ratio (review 306 #1: 49 steps against 48)."""
    from tests.test_serve_simulate import _cost

    limits = EngineLimits("sglang", kv_blocks=16, block_size=16, max_num_batched_tokens=512, max_num_seqs=8,
                          prefix_caching=False, window_groups=(WindowGroup("sliding", 64, 8),), group_blocks=12)  # fmt: skip
    workload = Workload([(71, 43), (70, 27)], send_times=[0.181, 0.289])
    fast, fast_times = simulate(workload, limits, _cost())
    slow, slow_times = simulate(workload, limits, _cost(), skip_repeated_steps=False)
    assert fast == slow and fast_times == slow_times and slow.steps == 48


def test_the_hybrid_note_names_the_logged_figure_where_the_scheduler_runs_another(cli):
    """Trial 342 #4: Gemma 3 27B at 32K on an H100 said "Plan with the maximum concurrency (1.40x, what vLLM admits
    at once)" and, a note later, "vLLM's scheduler runs 2 request(s) ..., not the logged 1.40x". The first now names
    the logged figure; the control, where the scheduler runs what is logged (vLLM 0.18 admits by it), keeps it."""
    notes = " ".join(cli.json("kv", "gemma-3-27b", "--target", "h100", "--seq", "32k")["memory"]["engine"]["notes"])
    assert "vLLM's scheduler runs 2 request(s) of 32,768 tokens at once, not the logged 1.40x" in notes
    assert "what vLLM admits at once" not in notes and "The logged maximum concurrency (1.40x)" in notes
    older = cli.json("kv", "gemma-3-27b", "--target", "h100", "--seq", "32k", "--engine", "vllm@0.18")
    said = " ".join(older["memory"]["engine"]["notes"])
    assert "scheduler runs" not in said and "what vLLM admits at once" in said
