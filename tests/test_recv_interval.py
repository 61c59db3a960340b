"""SGLang's ``--scheduler-recv-interval`` (``core.serve.recv_interval``): a request reaching a busy server is taken
on the next N-th decode step, counted by hand in the simulated loop and in the closed form; refused where SGLang
lacks it or mha does not price it; written on the launch line it was priced with."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.serving import arrival_steps, predict_serving
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.serve.recv_interval import DP_ATTENTION_REFUSAL, RecvSkipper
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload
from mha_cli.core.targets import load_targets

DECODE_S, PROMPT_S = 0.010, 0.050


class FlatCost:
    """A step cost a hand can count: a step with prompt tokens takes 50 ms, a decode-only step 10 ms."""

    pp = 1

    def seconds(self, decodes: int, context: int, chunks: list) -> float:
        return PROMPT_S if chunks else DECODE_S

    def decode_seconds(self, rows: int, context: int) -> float:
        return DECODE_S


def _second_ttft(interval: int, *, skip_repeated_steps: bool = True) -> float:
    """Request 0 (100 in, 20 out) sent at 0, request 1 (100 in, 2 out) at 75 ms, while request 0 decodes."""
    workload = Workload(lengths=[(100, 20), (100, 2)], send_times=[0.0, 0.075])
    limits = EngineLimits(
        "sglang", kv_blocks=1000, block_size=1, max_num_batched_tokens=8192, max_num_seqs=8, recv_interval=interval
    )
    _, times = simulate(workload, limits, FlatCost(), skip_repeated_steps=skip_repeated_steps)  # type: ignore[arg-type]
    return times.ttft[1]


@pytest.mark.parametrize("skip", [True, False])
def test_a_request_reaching_a_decoding_server_waits_for_the_nth_decode_step(skip):
    # request 0's prompt step ends at 50 ms (weight 1,000: that turn receives), its decodes end at 60, 70, 80, 90 ms
    # counting 1, 2, 3, 4. Interval 1: request 1 (sent at 75 ms) is taken at 80 ms, its prompt step ends at 130 ms.
    assert _second_ttft(1, skip_repeated_steps=skip) == pytest.approx(0.130 - 0.075)
    # interval 4: taken when the counter reaches 4, at 90 ms; interval 2: the counter reaches 2 at 70 and 90 ms
    assert _second_ttft(4, skip_repeated_steps=skip) == pytest.approx(0.140 - 0.075)
    assert _second_ttft(2, skip_repeated_steps=skip) == pytest.approx(0.140 - 0.075)
    # interval 6: 60 .. 110 ms count 1 .. 6
    assert _second_ttft(6, skip_repeated_steps=skip) == pytest.approx(0.160 - 0.075)


def test_an_idle_server_receives_at_once_and_a_prompt_step_lets_the_next_turn_receive():
    skipper = RecvSkipper(30)
    assert skipper.receives(idle=False)  # the first turn, before any step
    skipper.step(prompt=False)
    assert not skipper.receives(idle=False)
    assert skipper.receives(idle=True)  # nothing running: the loop spins through its empty turns
    skipper.step(prompt=False)
    assert not skipper.due
    skipper.step(prompt=True)  # 1,000 >= 30
    assert skipper.receives(idle=False) and skipper.counter == 0
    lone = Workload(lengths=[(100, 3), (100, 3)], send_times=[0.0, 1.0])  # the second finds the server idle
    limits = EngineLimits("sglang", 1000, 1, 8192, 8, recv_interval=30)
    _, times = simulate(lone, limits, FlatCost())  # type: ignore[arg-type]
    assert times.ttft == pytest.approx([PROMPT_S, PROMPT_S])


@pytest.mark.parametrize("interval", [1, 3, 30])
def test_the_repeated_decode_shortcut_equals_the_step_by_step_loop_under_a_capped_open_loop(interval):
    """A request the client sends stops the shortcut at once (the cap counts it in flight), whether or not that turn
    receives; one on its way waits for a receiving turn. Random lengths and send times under a cap of 3 users."""
    draw = random.Random(interval)
    for _ in range(60):
        count = draw.randint(3, 8)
        lengths = [(draw.randint(20, 200), draw.randint(2, 40)) for _ in range(count)]
        sends = sorted(draw.uniform(0, 0.4) for _ in range(count))
        workload = Workload(lengths=lengths, rate=1.0, max_concurrency=3, send_times=sends)
        limits = EngineLimits("sglang", 10_000, 1, 256, 8, recv_interval=interval)
        _, fast = simulate(workload, limits, FlatCost())  # type: ignore[arg-type]
        _, slow = simulate(workload, limits, FlatCost(), skip_repeated_steps=False)  # type: ignore[arg-type]
        assert fast.ttft == pytest.approx(slow.ttft) and fast.e2e == pytest.approx(slow.e2e)
    # the case the review found: request 3 sent at 105 ms while the cap is full; 230 ms both ways
    capped = Workload(lengths=[(100, 30), (100, 12), (100, 5), (100, 5)], send_times=[0, 0, 0.100, 0.105], rate=1.0,
                      max_concurrency=3)  # fmt: skip
    limits = EngineLimits("sglang", 10_000, 1, 8192, 8, recv_interval=30)
    _, fast = simulate(capped, limits, FlatCost())  # type: ignore[arg-type]
    _, slow = simulate(capped, limits, FlatCost(), skip_repeated_steps=False)  # type: ignore[arg-type]
    assert fast.ttft == pytest.approx(slow.ttft)


def test_the_pipelined_loop_counts_the_batches_it_sends():
    """Two stages: the counter moves once for each batch sent, so a request reaching the busy server waits for the
    N-th; against interval 1 its TTFT grows, and an idle server still receives at once."""
    cost = _two_stage_cost()
    workload = Workload(lengths=[(64, 40), (64, 40), (64, 4)], send_times=[0.0, 0.0, 0.05])
    ttft = {}
    for interval in (1, 8):
        limits = EngineLimits("sglang", 10_000, 16, 8192, 8, recv_interval=interval)
        _, times = simulate(workload, limits, cost)
        ttft[interval] = times.ttft
    assert ttft[8][:2] == pytest.approx(ttft[1][:2])  # both sent at once to an idle server
    assert ttft[8][2] > ttft[1][2]


def _two_stage_cost() -> StepCost:
    profile = prior_profile(load_targets()["h100-sxm"], generation="sglang-0.5")
    case = ServingCase(model=get_preset("llama-3-8b"), isl=1, osl=1, concurrency=1, pp=2)
    return StepCost(Stepper(case, profile))


def test_the_closed_form_waits_half_the_interval_in_decode_steps():
    case = ServingCase(model=get_preset("llama-3-8b"), isl=1000, osl=500, concurrency=16)
    assert arrival_steps(case, 16) == 0.5
    assert arrival_steps(case._replace(recv_interval=10), 16) == 5.0
    assert arrival_steps(case._replace(recv_interval=10), 1) == 0.5  # alone: an idle server receives at once
    # two stages: a step is two turns of SGLang's pipelined loop, each counted; never below the half step
    assert arrival_steps(case._replace(recv_interval=10, pp=2), 16) == 2.5
    assert arrival_steps(case._replace(recv_interval=2, pp=4), 16) == 0.5
    profile = prior_profile(load_targets()["h100-sxm"], generation="sglang-0.5")
    plain = predict_serving(case, profile, None)
    spaced = predict_serving(case._replace(recv_interval=10), profile, None)
    assert spaced.ttft_ms - plain.ttft_ms == pytest.approx(4.5 * plain.decode_step.seconds * 1e3, rel=1e-9)
    assert spaced.itl_ms == plain.itl_ms


def test_refused_where_sglang_lacks_it_or_mha_does_not_price_it(cli):
    with pytest.raises(ValueError, match=r"\(--scheduler-recv-interval\) is SGLang's"):
        DeploymentSpec(engine="vllm", scheduler_recv_interval=10)
    with pytest.raises(ValueError, match="DP attention is not priced"):
        DeploymentSpec(engine="sglang", dp=8, scheduler_recv_interval=10)
    assert DeploymentSpec(engine="vllm", scheduler_recv_interval=1).scheduler_recv_interval == 1  # the default
    base = ["plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--closed-form", "--scheduler-recv-interval"]
    old = cli.run(*base, "10", "--engine", "sglang@0.4.9")
    assert old.exit_code == 2 and "is SGLang's from 0.5.1, which SGLang 0.4.9 lacks" in " ".join(old.output.split())
    vllm = cli.run(*base, "10")  # vLLM by default
    assert vllm.exit_code == 2 and "use --engine sglang" in vllm.output
    dp = ["plan", "deepseek-v3", "--target", "8xh200", "--engine", "sglang", "--dp", "8", "--closed-form"]
    both = cli.run(*dp, "--scheduler-recv-interval", "30")
    assert both.exit_code == 2 and DP_ATTENTION_REFUSAL in " ".join(both.output.split())


def test_the_launch_line_sets_it_and_the_search_leaves_dp_attention_out(cli):
    words = ["plan", "deepseek-v3", "--target", "8xh200", "--engine", "sglang", "--closed-form"]
    spaced = cli.json(*words, "--scheduler-recv-interval", "10")
    plain = cli.json(*words)
    assert spaced["launch"]["sglang"].endswith(" --scheduler-recv-interval 10")
    assert "--scheduler-recv-interval" not in plain["launch"]["sglang"] + spaced["launch"]["vllm"]
    assert not any(point["deployment"]["dp_attention"] for point in spaced["candidates"])
    assert any(point["deployment"]["dp_attention"] for point in plain["candidates"])  # the control: searched

    # every layout DP attention took is still searched, with the experts spread by expert parallelism instead
    def layouts(found):
        return {
            (p["deployment"]["tp"], p["deployment"]["pp"], p["deployment"]["replicas"]) for p in found["candidates"]
        }

    assert layouts(spaced) == layouts(plain)


def test_calibrate_from_replays_the_interval():
    """``mha calibrate --from``'s simulated runs take the deployment's interval, as ``mha plan``'s do."""
    from mha_cli.core.serve.fit import replay_for
    from mha_cli.core.targets import resolve_target

    base = prior_profile(load_targets()["h100-sxm"], generation="sglang-0.5")
    runs = [SimpleNamespace(lengths=[(1000, 200)])]
    for interval in (None, 10):
        deployment = DeploymentSpec(engine="sglang", scheduler_recv_interval=interval, seq_len=2048)
        replay = replay_for(get_preset("llama-3-8b"), resolve_target("h100"), deployment, base, runs, tp=1)  # type: ignore[arg-type]
        assert replay.limits().recv_interval == (interval or 1)


def test_the_rows_launch_lines_give_the_interval_and_the_prompt_budget(fit_priors):
    folded = {"notes": "python3 -m sglang.launch_server --scheduler-recv-interval\n 30 --stream-interval 30"}
    assert fit_priors.launch_recv_interval(folded) == 30
    assert fit_priors.launch_recv_interval({"notes": "vllm serve m"}) is None
    assert fit_priors.launch_chunk(folded) is None
    launch = {"notes": "server: python3 -m sglang.launch_server --chunked-prefill-size 32768. client: --max 16"}
    assert fit_priors.launch_chunk(launch) == 32768
    # a flag after the command's sentence (the client's, a note's) is not the server's
    assert (
        fit_priors.launch_chunk({"notes": "python -m sglang.launch_server --tp 8. Note: --chunked-prefill-size 9"})
        is None
    )
