"""fp4 GEMMs on a datacenter Blackwell (compute capability 10.x) may reach their own share of the datasheet fp4 rate
(``core.cost.priors.FP4_EFFICIENCY``): fitted by ``benchmarks/fit_priors.py`` only for a generation whose fit rows
hold enough such GEMMs, absent everywhere else, where ``matmul_efficiency`` scales every dtype's rate as before. Rates
are hand counts from ``data/hardware_targets.csv`` (B200 dense: bf16 2,250, fp8 4,500, fp4 9,000 TFLOP/s; B300 fp4
13,500; RTX PRO 6000 Server fp4 2,000; H100 SXM bf16 989.4; MI355X MXFP4 10,066.4)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mha_cli.core.cost.priors import FP4_EFFICIENCY, dtype_matmul_curves, fitted_constants, prior_profile
from mha_cli.core.targets import load_targets

CONSTANTS = fitted_constants()["constants"]


def constants_with(**extra: float) -> dict[str, float]:
    return dict(CONSTANTS) | {"matmul_efficiency": 0.7} | extra


def test_without_the_constant_every_dtype_takes_the_matmul_efficiency():
    """The fallback: no ``fp4_matmul_efficiency`` (the default constants, and every generation fitted without fp4
    rows) prices B200's fp4 GEMMs at 9,000 x 0.7, as before the constant existed."""
    assert FP4_EFFICIENCY not in CONSTANTS
    profile = prior_profile(load_targets()["b200"], "nvfp4", constants_with())
    assert profile.matmul_in("nvfp4").at(4096) == pytest.approx(9000e12 * 0.7)
    assert profile.matmul_in("bf16").at(4096) == pytest.approx(2250e12 * 0.7)
    assert profile.matmul_in("fp8").at(4096) == pytest.approx(4500e12 * 0.7)


def test_with_it_only_the_fp4_gemms_change():
    """B200 at fp4 share 0.45: its NVFP4 matmuls at 9,000 x 0.45 = 4,050 TFLOP/s, the profile's own matmul too (an
    NVFP4 checkpoint); bf16 and fp8 keep 0.7 (1,575 and 3,150)."""
    profile = prior_profile(load_targets()["b200"], "nvfp4", constants_with(**{FP4_EFFICIENCY: 0.45}))
    assert profile.matmul_in("nvfp4").at(4096) == pytest.approx(4050e12)
    assert profile.matmul.at(4096) == pytest.approx(4050e12)
    assert profile.matmul_in("bf16").at(4096) == pytest.approx(1575e12)
    assert profile.matmul_in("fp8").at(4096) == pytest.approx(3150e12)


def test_a_device_without_fp4_gemms_ignores_it():
    """H100 runs NVFP4 through Marlin in bf16 MMAs (``core.compute_dtype``): 989.4 x 0.7, not x the fp4 share."""
    profile = prior_profile(load_targets()["h100-sxm"], "nvfp4", constants_with(**{FP4_EFFICIENCY: 0.45}))
    assert profile.matmul_in("nvfp4").at(4096) == pytest.approx(989.4e12 * 0.7)


@pytest.mark.parametrize(("target", "dtype", "peak_tflops", "share"), [
    ("b300", "nvfp4", 13500, 0.45),  # capability 10.3: the share
    ("rtx-pro-6000-srv", "nvfp4", 2000, 0.7),  # 12.0: an fp4 GEMM, at the matmul efficiency
    ("mi355x", "mxfp4-w4a4", 10066.4, 0.7),  # AITER's fp4 GEMM on CDNA4: no capability, the matmul efficiency
])  # fmt: skip
def test_the_share_scales_only_capability_10_fp4_gemms(target, dtype, peak_tflops, share):
    curves = dtype_matmul_curves(load_targets()[target], 0.7, 0.0, 0.45)
    assert curves[dtype].at(4096) == pytest.approx(peak_tflops * 1e12 * share)


def fake_row(target: str, weight_dtype: str) -> SimpleNamespace:
    # a generation outside fit_priors.OWN_ATTENTION_RAMP: only the fp4 share's rule is tested here
    return SimpleNamespace(generation="trtllm-pytorch", target=load_targets()[target], weight_dtype=weight_dtype)


@pytest.mark.parametrize(("target", "weight_dtype", "holds"), [
    ("b200", "nvfp4", True), ("gb200", "nvfp4", True), ("b300", "nvfp4", True),
    ("rtx-pro-6000-srv", "nvfp4", False), ("mi355x", "mxfp4-linear", False),  # fp4 GEMMs off capability 10.x
    ("h200", "nvfp4", False), ("b200", "fp8", False), ("b200", "mxfp4", False),  # Marlin; fp8; gpt-oss W4A16
])  # fmt: skip
def test_a_row_holds_fp4_gemms_where_its_format_runs_at_the_fp4_rate_on_capability_10(
    fit_priors, target, weight_dtype, holds
):
    assert fit_priors.holds_fp4_gemms(fake_row(target, weight_dtype)) is holds


def test_the_fit_takes_the_fp4_share_only_where_enough_fit_rows_hold_fp4_gemms(fit_priors, fitted_names):
    """Six NVFP4 rows on B200 (``MIN_FP4_ROWS``) beside Hopper fp8 ones: the share is fitted, from the matmul
    efficiency's start; five, six in fp8, or six NVFP4 on an RTX PRO 6000 (12.0): it is not (the constant stays absent,
    ``matmul_efficiency`` prices fp4)."""
    assert fit_priors.MIN_FP4_ROWS == 6
    hopper = [fake_row("h200", "fp8")]
    names, start = fitted_names(hopper + [fake_row("b200", "nvfp4")] * 6)
    assert names == [*fit_priors.GENERATION_FITTED, FP4_EFFICIENCY]
    assert start[FP4_EFFICIENCY] == start["matmul_efficiency"] == fit_priors.START["matmul_efficiency"]
    for few in (
        [fake_row("b200", "nvfp4")] * 5,
        [fake_row("b200", "fp8")] * 6,
        [fake_row("rtx-pro-6000-srv", "nvfp4")] * 6,
    ):
        names, start = fitted_names(hopper + few)
        assert names == fit_priors.GENERATION_FITTED and FP4_EFFICIENCY not in start
