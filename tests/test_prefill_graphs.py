"""A prefill outside CUDA graphs (``core.engine.prefill_graphs``): SGLang's prompt steps wait for the host to launch
the operators its model code runs one by one (``core.engine.sglang_eager_ops``, counted by hand here from the
source lines it cites); decode steps, other engines and the default constants are untouched; the time per operator
is fitted on sglang-0.5's one-user fit rows' TTFT alone; from SGLang 0.5.10 on NVIDIA the prefill runs in graphs."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.priors import generation_fits, prior_profile
from mha_cli.core.cost.stepper import ServingCase, Stepper, chunked_prefill
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.engine.prefill_graphs import GRAPHLESS_PREFILL, LATEST_READ, graphed_release
from mha_cli.core.engine.sglang_eager_ops import forward_ops
from mha_cli.core.presets import get_preset
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.targets import load_targets
from tests.benchmark_modules import load_benchmark

MODEL = "llama-2-7b"
LLAMA_2_7B_OPS = 32 * (2 + 5 + 3) + 7
"""Per layer: 2 norms, qkv + rope + KV store + attention + o_proj, gate_up + act + down; then the embedding, final
norm, LM head, logits gather and 3 sampler operators once (the module's cited lines)."""


@pytest.fixture(scope="module")
def profiles():
    """(SGLang 0.5's prior on H100, the same with its prefill launched from graphs)."""
    graphless = prior_profile(load_targets()["h100-sxm"], "bf16", generation="sglang-0.5", release="0.5.9")
    return graphless, graphless.model_copy(update={"prefill_dispatch_overhead_s": 0.0})


def by_hand(graphed_step, profile) -> float:
    """One step's time with its operators launched by the host: max(device work + kernels' fixed costs, eager
    operators x the time per operator) + the step overhead, from the same step priced under graphs."""
    work = graphed_step.memory_s + graphed_step.compute_s + graphed_step.collective_s
    fixed = graphed_step.kernels * profile.kernel_overhead_s
    return max(work + fixed, LLAMA_2_7B_OPS * profile.prefill_dispatch_overhead_s) + profile.step_overhead_s


def test_eager_operators_counted_by_hand_for_a_dense_a_qk_norm_and_an_mla_moe_model():
    assert forward_ops(get_preset(MODEL), 1, "bf16") == LLAMA_2_7B_OPS == 327
    # Qwen3-8B: 36 layers, the dense layer's 10 + q_norm and k_norm
    assert forward_ops(get_preset("qwen3-8b"), 1, "bf16") == 36 * (2 + 5 + 2 + 3) + 7 == 439
    # DeepSeek-V3, fp8 blocks, tp 8: 3 dense layers of 2 norms + 11 MLA + 3 MLP + 2 all-reduces + 6 input quants
    # (q_a/kv_a, q_b, kv_b, o, gate_up, down), 58 MoE layers of 2 + 11 + 7 routed + 4 shared + 2 + 6
    assert forward_ops(get_preset("deepseek-v3"), 8, "fp8-block") == 3 * 24 + 58 * 32 + 7 == 1935
    assert forward_ops(get_preset(MODEL), 2, "bf16") == LLAMA_2_7B_OPS + 32 * 2  # 2 all-reduces a layer


def test_sglang_0_5_10_graphs_its_prefill_on_nvidia_only():
    assert graphed_release("sglang-0.5", "0.5.9", "NVIDIA") is None
    assert graphed_release("sglang-0.5", "0.5.10.post1", "NVIDIA") == "0.5.10.post1"
    assert graphed_release("sglang-0.5", "0.6.0", "NVIDIA") == "0.6.0"
    assert graphed_release("sglang-0.5", "0.5.10", "AMD") is None  # server_args.py 0.5.10: is_hip() turns it off
    assert graphed_release("sglang-0.5", None, "NVIDIA") == LATEST_READ  # the generation alone: the latest read
    assert graphed_release("sglang-0.4", None, "NVIDIA") is None  # SGLang 0.4 never graphs prefill
    assert graphed_release("sglang-0.5", "947927bdb", "NVIDIA") is None  # a commit: not read, eager
    assert "vllm-v1" not in GRAPHLESS_PREFILL  # vLLM graphs its prefill: no eager launch term
    h100 = load_targets()["h100-sxm"]
    graphed = prior_profile(h100, "bf16", generation="sglang-0.5", release="0.5.10")
    eager = prior_profile(h100, "bf16", generation="sglang-0.5", release="0.5.9")
    assert (graphed.prefill_graphs, eager.prefill_graphs) == ("0.5.10", None)
    # the rate is kept for the steps a graphed release still runs eagerly (core.engine.prefill_graphs.graphs_off)
    assert graphed.prefill_dispatch_overhead_s == eager.prefill_dispatch_overhead_s > 0


def test_sglang_05_uses_its_stored_launch_time_and_other_profiles_none(profiles):
    graphless, _ = profiles
    stored = generation_fits()["sglang-0.5"]["vendors"]["nvidia"]["constants"]["prefill_dispatch_overhead_s"]
    assert graphless.prefill_dispatch_overhead_s == stored > 0
    h100 = load_targets()["h100-sxm"]
    assert prior_profile(h100, "bf16").prefill_dispatch_overhead_s == 0.0  # the default constants: unchanged
    for generation in ("vllm-v1", "trtllm-pytorch", "vllm-v0"):
        assert prior_profile(h100, "bf16", generation=generation).prefill_dispatch_overhead_s == 0.0
    assert set(GRAPHLESS_PREFILL) == {"sglang-0.4", "sglang-0.5"}
    assert graphless.ceiling().prefill_dispatch_overhead_s == 0.0  # the roofline has no fixed costs


def test_a_prompt_step_waits_for_its_launches_and_a_decode_step_does_not(profiles):
    graphless, graphed = profiles
    case = ServingCase(model=get_preset(MODEL), isl=100, osl=10, concurrency=1)
    shape = prefill_shape(100)
    under_graphs, launched = Stepper(case, graphed).step(shape), Stepper(case, graphless).step(shape)
    assert launched.seconds == pytest.approx(by_hand(under_graphs, graphless))
    # 100 tokens of a 7B model: about a millisecond of device work, 327 operators at sglang#12160's measured 42.7 us
    # each (14.0 ms; more than 2x the graphed step at the 80 us fitted on TTFT before the 2026-12-04 refit)
    assert launched.seconds > 1.5 * under_graphs.seconds
    decode = decode_shape(4, 100)
    assert Stepper(case, graphless).step(decode).seconds == Stepper(case, graphed).step(decode).seconds


def test_a_chunked_prompt_pays_the_launches_in_each_of_its_ceil_n_over_c_steps(profiles):
    graphless, graphed = profiles
    case = ServingCase(model=get_preset(MODEL), isl=2500, osl=10, concurrency=1, chunk_tokens=1000)
    seconds, steps = chunked_prefill(Stepper(case, graphless), 2500, 1000, [])
    assert steps == 3  # ceil(2500 / 1000)
    graphed_stepper = Stepper(case, graphed)
    chunks = [(1000, 0), (1000, 1000), (500, 2000)]  # (tokens, context) of each step
    hand = sum(by_hand(graphed_stepper.step(prefill_shape(n, context=c)), graphless) for n, c in chunks)
    assert seconds == pytest.approx(hand)


def test_the_launch_time_refits_from_the_lone_fit_rows_alone_to_the_stored_value():
    fit_priors = load_benchmark("fit_priors")
    rows = [row for row in fit_priors.load_generation_rows() if row.generation == "sglang-0.5"]
    stored = generation_fits()["sglang-0.5"]["vendors"]
    for vendor, family in stored.items():
        part = [row for row in rows if row.split == "fit" and row.target.vendor.lower() == vendor]
        steps_only = {k: v for k, v in family["constants"].items() if k != "prefill_dispatch_overhead_s"}
        assert fit_priors.fit_prefill_launch(part, steps_only) == family["constants"]
    held_out = [row for row in rows if row.split == "holdout" and row.case.concurrency == 1]
    with pytest.raises(AssertionError, match="held-out"):  # a held-out row never enters the fit
        fit_priors.fit_prefill_launch(held_out, steps_only)


def test_the_simulators_step_cost_prices_the_same_launches(profiles):
    graphless, _ = profiles
    stepper = Stepper(ServingCase(model=get_preset(MODEL), isl=1, osl=1, concurrency=1), graphless)
    cost = StepCost(stepper)
    for decodes, chunks in ((0, [(100, 0)]), (4, [(300, 200)]), (0, [(2000, 0)])):
        shapes = [prefill_shape(n, context=c) for n, c in chunks] + ([decode_shape(decodes, 100)] if decodes else [])
        assert cost.seconds(decodes, 100, chunks) == pytest.approx(stepper.step(*shapes).seconds, rel=0.005)
    assert cost.seconds(4, 100, []) == pytest.approx(stepper.step(decode_shape(4, 100)).seconds, rel=1e-6)
