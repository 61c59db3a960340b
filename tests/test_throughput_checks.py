"""``benchmarks/throughput_checks.py``: the tokens/s error the requests' latency leaves, and the slope that tells a
figure of output tokens/s read as input + output, by hand counts."""

from __future__ import annotations

import math

import pytest

from tests.benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def checks():
    return load_benchmark("throughput_checks")


def test_a_requests_life_is_its_first_token_and_osl_minus_one_itls(checks):
    # InferenceX #828's TP8 conc 4 row: TTFT 31.5 ms, TPOT 3.72 ms, 922 out: 31.5 + 921 x 3.72 = 3,457.62 ms
    # (the table prints E2E 3.4 s)
    assert checks.e2e_ms(31.5, 3.72, 922) == pytest.approx(3457.62)


def test_a_step_cost_error_alone_leaves_no_residual(checks):
    measured = {"ttft_ms": 100.0, "itl_ms": 10.0, "tokens_per_s_per_gpu": 100.0}  # e2e 100 + 100 x 10 = 1,100 ms
    slow = {"ttft_ms": 200.0, "itl_ms": 20.0, "tokens_per_s_per_gpu": 50.0}  # twice the life, half the tokens/s
    assert checks.latency_residual(slow, measured, 101) == pytest.approx(0.0)
    # 45 tokens/s where the life alone gives 50: 0.45 x 2 - 1 = -10% left to the ramp, tail and gaps
    assert checks.latency_residual(slow | {"tokens_per_s_per_gpu": 45.0}, measured, 101) == pytest.approx(-0.10)


AMD_SHAPES = [(128, 2048), (128, 4096), (500, 2000), (2048, 2048)]
"""The AMD ROCm performance page's four vLLM throughput shapes (isl, osl)."""


def test_output_tokens_read_as_input_plus_output_give_slope_one(checks):
    # a right step cost predicts the true output tokens/s (1,000); the fixture stored it x osl / (isl + osl)
    misread = [(isl, osl, 1000.0, 1000.0 * osl / (isl + osl)) for isl, osl in AMD_SHAPES]
    assert checks.reading_slope(misread) == pytest.approx(1.0)
    right = [(isl, osl, 1000.0, 1000.0) for isl, osl in AMD_SHAPES]
    assert checks.reading_slope(right) == pytest.approx(0.0)
    reverse = [(isl, osl, 1000.0, 1000.0 * (isl + osl) / osl) for isl, osl in AMD_SHAPES]
    assert checks.reading_slope(reverse) == pytest.approx(-1.0)


def test_the_slope_of_two_rows_by_hand(checks):
    # x = ln 2 (2048/2048) and ln 1.0625 (128/2048); y = ln 1.5 and ln 0.8: slope = (ln 1.5 - ln 0.8) / (ln 2 - ln 1.0625)
    points = [(2048, 2048, 150.0, 100.0), (128, 2048, 80.0, 100.0)]
    expected = (math.log(1.5) - math.log(0.8)) / (math.log(2) - math.log(1.0625))
    assert checks.reading_slope(points) == pytest.approx(expected)
    assert expected == pytest.approx(0.9938, abs=1e-4)  # 0.62861 / 0.63252


def test_one_shape_has_no_slope(checks):
    with pytest.raises(ValueError, match="two"):
        checks.reading_slope([(128, 2048, 1.0, 2.0), (128, 2048, 3.0, 2.0)])
