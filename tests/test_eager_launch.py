"""A measured host launch time per eager prompt-step operator (``core.engine.eager_launch``): where a generation
carries one for a vendor (sglang-0.5 on NVIDIA, as shipped), that vendor's profiles price with it, the other vendor's
keep their fitted time, and the fit holds it instead of fitting it on TTFT."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.priors import generation_fits, prior_profile
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.cost.work import prefill_shape
from mha_cli.core.engine import eager_launch
from mha_cli.core.engine.eager_launch import DEEPSEEK_V3_TP8_FP8_OPS, SGLANG_EXTEND_DEEPSEEK, measured_launch
from mha_cli.core.engine.sglang_eager_ops import forward_ops
from mha_cli.core.presets import get_preset
from mha_cli.core.targets import load_targets
from tests.benchmark_modules import load_benchmark

EAGER_MS, GRAPHED_MS = 82.64, 23.10
"""sglang#12160's logged forward of a 1-token EXTEND batch of DeepSeek-V3, eager and from a prefill CUDA graph."""


@pytest.fixture
def measured_on_nvidia(monkeypatch):
    """sglang-0.5 carrying the DeepSeek EXTEND measurement on NVIDIA GPUs only."""
    monkeypatch.setattr(eager_launch, "MEASURED_LAUNCHES", {("sglang-0.5", "nvidia"): SGLANG_EXTEND_DEEPSEEK})


def test_the_measurement_is_the_eager_step_over_its_hand_counted_operators():
    assert forward_ops(get_preset("deepseek-v3"), 8, "fp8-block") == DEEPSEEK_V3_TP8_FP8_OPS == 3 * 24 + 58 * 32 + 7
    assert SGLANG_EXTEND_DEEPSEEK.seconds == pytest.approx(42.71e-6, rel=1e-3)  # 82.64 ms / 1,935
    assert EAGER_MS > 3 * GRAPHED_MS  # the host bounds the eager step: the max() inverted is its own time
    assert "https://github.com/sgl-project/sglang/pull/12160" in SGLANG_EXTEND_DEEPSEEK.source


def test_shipped_sglang_05_prices_nvidia_with_the_measurement_and_amd_with_its_fit():
    assert eager_launch.MEASURED_LAUNCHES == {("sglang-0.5", "nvidia"): SGLANG_EXTEND_DEEPSEEK}
    assert measured_launch("sglang-0.5", "NVIDIA") == SGLANG_EXTEND_DEEPSEEK
    assert measured_launch("sglang-0.5", "AMD") is None
    assert measured_launch("vllm-v1", "NVIDIA") is None
    fits = generation_fits()["sglang-0.5"]["vendors"]
    # the stored NVIDIA set was refitted with the measurement held (80 us an operator before, fitted on TTFT)
    assert fits["nvidia"]["constants"]["prefill_dispatch_overhead_s"] == SGLANG_EXTEND_DEEPSEEK.seconds
    h100 = load_targets()["h100-sxm"]
    profile = prior_profile(h100, "bf16", generation="sglang-0.5", release="0.5.9")
    assert profile.prefill_dispatch_overhead_s == SGLANG_EXTEND_DEEPSEEK.seconds
    amd = fits["amd"]["constants"]["prefill_dispatch_overhead_s"]
    mi300x = prior_profile(load_targets()["mi300x"], "bf16", generation="sglang-0.5", release="0.5.9")
    # AMD's fit on the one-user rows' printed medians (ttftmed, the lead's --prefill --write); 193.2 us on their means
    assert mi300x.prefill_dispatch_overhead_s == amd == pytest.approx(74.55e-6)


def test_a_measured_value_prices_its_vendor_only(measured_on_nvidia):
    targets = load_targets()
    h200 = prior_profile(targets["h200"], "fp8", generation="sglang-0.5", release="0.5.9")
    assert h200.prefill_dispatch_overhead_s == SGLANG_EXTEND_DEEPSEEK.seconds
    assert "pull/12160" in h200.constants["prefill_dispatch_overhead_s"]  # the profile says where it comes from
    amd = generation_fits()["sglang-0.5"]["vendors"]["amd"]["constants"]["prefill_dispatch_overhead_s"]
    mi300x = prior_profile(targets["mi300x"], "fp8", generation="sglang-0.5", release="0.5.9")
    assert mi300x.prefill_dispatch_overhead_s == amd != SGLANG_EXTEND_DEEPSEEK.seconds
    assert prior_profile(targets["h200"], "fp8", generation="vllm-v1").prefill_dispatch_overhead_s == 0.0


def test_the_measured_step_is_priced_back(measured_on_nvidia):
    """DeepSeek-V3's 8-token prompt step at tp 8 on H200 under the measured time: its 1,935 launches outrun its device
    work, so the step is the 82.64 ms measured plus the engine's step overhead (the PR's author finds the eager
    prefill's time alike below 100 new tokens; a 1-token chunk is priced as a decode step here, ``is_prompt_chunk``)."""
    profile = prior_profile(load_targets()["h200"], "fp8-block", generation="sglang-0.5", release="0.5.9")
    case = ServingCase(model=get_preset("deepseek-v3"), isl=1, osl=1, concurrency=1, tp=8, weight_dtype="fp8-block")
    step = Stepper(case, profile).step(prefill_shape(8))
    graphed = Stepper(case, profile.model_copy(update={"prefill_dispatch_overhead_s": 0.0})).step(prefill_shape(8))
    assert graphed.seconds < EAGER_MS * 1e-3
    assert step.seconds == pytest.approx(EAGER_MS * 1e-3 + profile.step_overhead_s)


def test_the_fit_holds_a_measured_launch_time(measured_on_nvidia):
    fit_priors = load_benchmark("fit_priors")
    rows = [row for row in fit_priors.load_generation_rows() if row.generation == "sglang-0.5" and row.split == "fit"]
    nvidia = [row for row in rows if row.target.vendor.lower() == "nvidia"]
    stored = generation_fits()["sglang-0.5"]["vendors"]["nvidia"]["constants"]
    steps_only = {k: v for k, v in stored.items() if k != "prefill_dispatch_overhead_s"}
    held = fit_priors.fit_prefill_launch(nvidia, steps_only)
    assert held == steps_only | {"prefill_dispatch_overhead_s": SGLANG_EXTEND_DEEPSEEK.seconds}
