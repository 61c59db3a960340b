"""4-bit formats multiply at the rate of the MMA their engines' kernels issue (``core.compute_dtype``): NVFP4 fp4 x
fp4 on Blackwell, Marlin's bf16 on Hopper; Quark's MXFP4 linear layers at fp4 on CDNA4 only; gpt-oss's MXFP4 experts
and the weight-only formats at bf16. Every figure a hand count from ``data/hardware_targets.csv``."""

from __future__ import annotations

from typing import get_args

import pytest

from mha_cli.core.compute_dtype import ComputeDtype, compute_dtype, fp4_native
from mha_cli.core.cost.priors import datasheet_profile, fitted_constants, peak_matmul_flops, prior_profile
from mha_cli.core.cost.step import op_seconds
from mha_cli.core.cost.work import layer_ops
from mha_cli.core.sources import load_source
from mha_cli.core.targets import load_targets

NVFP4_MODEL = "tests/fixtures/quantization/deepseek-r1-distill-qwen-32b-nvfp4"
"""ModelOpt NVFP4 (``hf_quant_config.json`` quant_algo NVFP4): Qwen2.5-32B's shapes, d_model 5120, MLP 27,648."""


@pytest.mark.parametrize(("weight_format", "dtype"), [
    ("nvfp4", "nvfp4"), ("mxfp4-linear", "mxfp4-w4a4"),
    ("mxfp4", "bf16"),  # gpt-oss's experts: TRT-LLM-gen mxfp4 x bf16, matmul_ogs, Marlin
    ("int4", "bf16"), ("awq", "bf16"), ("gptq-int4", "bf16"), ("nf4", "bf16"),  # W4A16: dequantised into bf16
    ("int8", "bf16"),  # no target states an int8 rate
    ("fp8", "fp8"), ("fp8-block", "fp8"), ("fp32", "fp32"), ("bf16", "bf16"), (None, "bf16"),
])  # fmt: skip
def test_each_format_multiplies_in_the_dtype_its_kernel_takes(weight_format, dtype):
    assert compute_dtype(weight_format) == dtype


def test_every_compute_dtype_maps_to_itself():
    """``dtype_matmul_curves`` prices each compute dtype through ``compute_dtype``: none may fall to another."""
    assert [compute_dtype(dtype) for dtype in get_args(ComputeDtype)] == list(get_args(ComputeDtype))


@pytest.mark.parametrize(("target", "weight_format", "tflops"), [
    ("b200", "nvfp4", 9000), ("gb200", "nvfp4", 10000), ("b300", "nvfp4", 13500),  # Blackwell: fp4 GEMMs
    ("rtx-pro-6000-srv", "nvfp4", 2000),  # capability 12.0: CUTLASS sm120 fp4
    ("h100-sxm", "nvfp4", 989.4), ("a100-80gb", "nvfp4", 312),  # no fp4 tensor cores: Marlin, bf16
    ("mi355x", "nvfp4", 2516.6),  # no NVFP4 kernel on ROCm: bf16
    ("mi355x", "mxfp4-linear", 10066.4),  # Quark OCP_MX on gfx95: AITER gemm_afp4wfp4
    ("mi350x", "mxfp4-linear", 9227.5),  # the same gfx950 at 2.2 GHz
    ("mi300x", "mxfp4-linear", 1307.4),  # no fp4: emulation in bf16
    ("b200", "mxfp4-linear", 2250),  # Quark on CUDA: supports_mx False, emulation
    ("b200", "mxfp4", 2250), ("h100-sxm", "mxfp4", 989.4),  # gpt-oss's experts: bf16 activations
    ("b200", "awq", 2250), ("b200", "fp8", 4500),
])  # fmt: skip
def test_a_format_is_priced_at_the_datasheet_rate_of_the_mma_its_kernel_issues(target, weight_format, tflops):
    assert peak_matmul_flops(load_targets()[target], weight_format) == pytest.approx(tflops * 1e12)


def test_fp4_runs_native_only_where_the_vendor_has_a_kernel_and_the_device_a_rate():
    assert fp4_native("nvfp4", "NVIDIA", 9000) and fp4_native("mxfp4-w4a4", "AMD", 10066.4)
    assert not fp4_native("nvfp4", "NVIDIA", None)  # Hopper: no fp4 rate
    assert not fp4_native("nvfp4", "AMD", 10066.4) and not fp4_native("mxfp4-w4a4", "NVIDIA", 9000)
    assert not fp4_native("bf16", "NVIDIA", 9000)


def test_the_datasheet_profile_holds_an_fp4_curve_at_the_fp4_peak():
    """B200's roofline: its NVFP4 curve is the 9 PFLOP/s dense fp4 peak (DGX B200 144 PF sparse / 8 / 2), and an
    NVFP4 checkpoint's own matmul is it."""
    profile = datasheet_profile(load_targets()["b200"], "nvfp4")
    assert profile.matmul_in("nvfp4").at(1) == pytest.approx(9000e12)
    assert profile.matmul.at(4096) == pytest.approx(9000e12)
    assert profile.matmul_in("bf16").at(4096) == pytest.approx(2250e12)


def test_an_nvfp4_gemm_is_four_times_faster_on_b200_than_at_bf16_and_hopper_keeps_bf16():
    """One down_proj-sized NVFP4 GEMM of DeepSeek-R1-Distill-Qwen-32B at 8,192 prompt tokens: 2 x 8192 x 27648 x
    5120 = 2.319 TFLOP, compute-bound. B200: at 9,000 TFLOP/s x the fitted matmul efficiency (0.69) and the GEMM ramp
    (x 1.0249 at 8,192 rows): 0.383 ms (at bf16's 2,250, four times that). H100: Marlin, bf16 989.4 TFLOP/s x it."""
    ops = layer_ops(load_source(NVFP4_MODEL).model, 8192, weight_dtype="nvfp4")
    mlp = next(op for op in ops if op.name.startswith("mlp"))
    flops = 2 * 8192 * 27648 * 5120
    assert mlp.compute == "nvfp4" and mlp.flops == flops
    constants = fitted_constants()["constants"]
    efficiency, half_rows = constants["matmul_efficiency"], constants["matmul_half_rows"]
    # the ramp above the first 16-row tile (core.cost.gemm_tiles): 8,192 rows run 16 at the rate, the other 8,176 at
    # rate x 8192 / (8192 + half_rows): 1.0249 x the flat time at half rows 204.4
    ramp = (16 + (8192 - 16) * (8192 + half_rows) / 8192) / 8192
    targets = load_targets()
    b200, bound = op_seconds(mlp, prior_profile(targets["b200"], "nvfp4"), 1)
    assert bound and b200 == pytest.approx(flops / (9000e12 * efficiency) * ramp)
    h100, bound = op_seconds(mlp, prior_profile(targets["h100-sxm"], "nvfp4"), 1)
    assert bound and h100 == pytest.approx(flops / (989.4e12 * efficiency) * ramp)
