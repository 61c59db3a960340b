"""Prompt attention may take its own half rows (``core.cost.priors.ATTENTION_HALF_ROWS``), apart from the weight GEMMs'
ramp (``matmul_half_rows``, ``core.cost.gemm_tiles``): fitted by ``benchmarks/fit_priors.py`` for the generations of
``OWN_ATTENTION_RAMP``, absent everywhere else, where ``matmul_half_rows`` shapes both as before. Rates are hand counts
from ``data/hardware_targets.csv`` (H200 dense bf16 989.4 TFLOP/s; MI300X 1,307.4)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mha_cli.core.cost.priors import (
    ATTENTION_HALF_ROWS,
    FP4_EFFICIENCY,
    fitted_constants,
    generation_fits,
    prior_profile,
)
from mha_cli.core.cost.step import op_seconds
from mha_cli.core.cost.work import Op
from mha_cli.core.targets import load_targets

CONSTANTS = fitted_constants()["constants"] | {"attention_efficiency": 0.5, "matmul_half_rows": 100.0}
PROMPT_ATTENTION = Op(name="attention", kind="attention", count=1.0, bytes=1.0, flops=1e12, tokens=4096)
"""A prompt's attention kernel of 4,096 rows (query tokens x query heads per KV head) and 1 TFLOP, bound by its FLOPs."""


def test_without_the_constant_prompt_attention_takes_the_gemm_half_rows():
    """The default constants lack it: 4,096 rows at 989.4 x 0.5 x 4,096 / (4,096 + 100) TFLOP/s, 2.0708 ms."""
    assert ATTENTION_HALF_ROWS not in CONSTANTS
    profile = prior_profile(load_targets()["h200"], "bf16", CONSTANTS)
    rate = 989.4e12 * 0.5 * 4096 / 4196
    assert profile.attention_flops.at(4096) == pytest.approx(rate)
    seconds, compute_bound = op_seconds(PROMPT_ATTENTION, profile, tp=1)
    assert compute_bound and seconds == pytest.approx(1e12 / rate) == pytest.approx(2.0708e-3, rel=1e-4)


def test_with_it_prompt_attention_takes_its_own_and_the_gemms_keep_theirs():
    """attention_half_rows 4,096: half the attention peak at 4,096 rows, 989.4 x 0.5 / 2 = 247.35 TFLOP/s, 4.0428 ms
    for the same kernel; the weight GEMMs' ramp stays at matmul_half_rows' 100 rows."""
    profile = prior_profile(load_targets()["h200"], "bf16", CONSTANTS | {ATTENTION_HALF_ROWS: 4096.0})
    assert profile.attention_flops.at(4096) == pytest.approx(247.35e12)
    seconds, _ = op_seconds(PROMPT_ATTENTION, profile, tp=1)
    assert seconds == pytest.approx(4.0428e-3, rel=1e-4)
    assert profile.matmul_half_rows == 100.0
    assert profile.attention_flops.at(1) == pytest.approx(989.4e12 * 0.5 / 4097)  # one row: 1 / 4,097 of the peak


def vendor_target(vendor: str) -> str:
    return {"nvidia": "h200", "amd": "mi300x"}[vendor]


@pytest.mark.parametrize("generation", sorted(generation_fits()))
def test_each_shipped_generation_prices_prompt_attention_on_its_own_ramp_or_the_gemms(generation):
    """Each shipped constant set (each generation's, each vendor's): prompt attention is the saturating curve at
    ``attention_half_rows`` where the refit wrote it (sglang-0.5 since the 2026-12-03 evening refit: NVIDIA 5,895
    rows, AMD 16.4), else at ``matmul_half_rows`` (vllm-v1, trtllm-pytorch: as before sglramp), on H200's or MI300X's
    bf16 peak x its attention efficiency. Before that refit no set carried it."""
    entry = generation_fits()[generation]
    for vendor in entry["fitted_vendors"]:
        family = entry.get("vendors", {}).get(vendor)
        constants = family["constants"] if family else entry["constants"]
        assert (ATTENTION_HALF_ROWS in constants) is (generation in ("sglang-0.5",))
        half_rows = constants.get(ATTENTION_HALF_ROWS, constants["matmul_half_rows"])
        target = load_targets()[vendor_target(vendor)]
        profile = prior_profile(target, "bf16", generation=generation)
        peak = target.bf16_tflops_dense * 1e12 * constants["attention_efficiency"]
        for rows in (1.0, 512.0, 65536.0):
            expected = peak * rows / (rows + half_rows)
            assert profile.attention_flops.at(rows) == pytest.approx(expected, rel=1e-12)


def fake_row(generation: str, target: str = "h200") -> SimpleNamespace:
    return SimpleNamespace(generation=generation, target=load_targets()[target], weight_dtype="fp8")


def test_the_fit_takes_attention_half_rows_only_for_its_generations(fit_priors, fitted_names):
    """sglang-0.5 (``OWN_ATTENTION_RAMP``) fits it from ``matmul_half_rows``' start; vllm-v1 and trtllm-pytorch do
    not (it stays absent, ``matmul_half_rows`` shapes their prompt attention)."""
    assert fit_priors.OWN_ATTENTION_RAMP == ("sglang-0.5",)
    names, start = fitted_names([fake_row("sglang-0.5")] * 3)
    assert names == [*fit_priors.GENERATION_FITTED, ATTENTION_HALF_ROWS]
    assert start[ATTENTION_HALF_ROWS] == start["matmul_half_rows"] == fit_priors.START["matmul_half_rows"]
    for generation in ("vllm-v1", "trtllm-pytorch"):
        names, start = fitted_names([fake_row(generation)] * 3)
        assert names == fit_priors.GENERATION_FITTED and ATTENTION_HALF_ROWS not in start
    names, _ = fitted_names([fake_row("sglang-0.5", "b200")] * 6)
    assert FP4_EFFICIENCY not in names  # fp8 rows: the fp4 share is a separate rule
