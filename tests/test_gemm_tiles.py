"""Weight GEMMs on their kernel's padded M tiles (``core.cost.gemm_tiles``), against hand counts.

- gpt-oss-120b's routed experts' gate GEMM at tp 2 (MXFP4, 1,440 x 2,880, 2 rows an expert at 64 users) on an
  H100 prior with vLLM V1's NVIDIA constants (matmul efficiency 0.4166 since rows7's refit, 0.2 before): its compute
  is its FLOPs x 16 / 2 at 989.4 TFLOPS x 0.4166, below the weight read, so memory bounds it; the rows law it
  replaces (at 0.2 and half rows 65.31, the rate x 2 / (2 + 65.31)) priced it compute-bound at 4x the read.
- A 4,096-row GEMM: no padding; its first 16 rows at the matmul rate, the 4,080 above at the rate x 4,096 /
  (4,096 + half rows): the rows law's price, less the half rows' toll on the first tile.
- The ramp above the first tile (gemmramp): a GEMM of at most 16 rows prices as its tile whatever the half rows; a
  128-row one at half rows 100 costs (16 + 112 x 228 / 128) / 128 = 1.684 x its FLOPs at the rate; a step's time
  never falls as its rows grow.
- The rows an expert op carries are the rows routed to each expert, not the step's tokens.
- The datasheet and a ceiling do not pad: the bound stays below the prior.
"""

from __future__ import annotations

import itertools
import json

import pytest

from mha_cli.core.cost.gemm_tiles import GENERIC_GEMM, NVIDIA_GEMM, padded_matmul_seconds, weight_gemm_tile
from mha_cli.core.cost.priors import datasheet_profile, fitted_constants, generation_prior, prior_profile
from mha_cli.core.cost.step import op_seconds
from mha_cli.core.cost.work import Op, decode_shape, forward_ops
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.roofline import experts_touched
from mha_cli.core.targets import load_targets
from tests.conftest import reference_hf_config

TARGETS = load_targets()
H100 = TARGETS["h100-sxm"]
H100_BF16 = 989.4e12
"""H100 SXM dense bf16 FLOP/s (the targets table)."""
H100_BYTES_PER_S = 3.35e12
OUT, IN = 1440, 2880
"""gpt-oss-120b's expert gate (or up) half at tp 2: intermediate 2,880 / 2 x hidden 2,880."""


def _gemm(rows: int) -> Op:
    weight = OUT * IN * 2  # bf16
    return Op(name="expert", kind="matmul", count=1, bytes=weight + rows * (OUT + IN) * 2,
              flops=2 * rows * OUT * IN, tokens=rows)  # fmt: skip


def _vllm_nvidia() -> dict[str, float]:
    return generation_prior("vllm-v1", H100).constants


def _gpt_oss_experts(weight_dtype: str) -> list[Op]:
    """gpt-oss-120b's routed-expert ops of a 64-user decode step at tp 2."""
    model = import_hf_config(json.loads(reference_hf_config("gpt-oss-120b").read_text()), name="gpt-oss-120b").model
    ops = forward_ops(model, decode_shape(64, 1024), tp=2, weight_dtype=weight_dtype)
    return [op for op in ops if op.name.startswith("expert")]


def test_a_two_row_expert_gemm_on_h100_is_memory_bound():
    constants = _vllm_nvidia()
    # 0.2 (the fit's lower bound, half rows 65.31 at tilegemm) before the refit after rows7's dense rows
    assert constants["matmul_efficiency"] == pytest.approx(0.4166)
    profile = prior_profile(H100, "mxfp4", constants=constants, generation="vllm-v1")
    op = _gpt_oss_experts("mxfp4")[0]  # the 111.2 touched experts' gate halves, 1,440 x 2,880 each, 2 rows each
    assert op.tokens == 2
    seconds, compute_bound = op_seconds(op, profile, tp=1)
    compute = op.flops * 16 / 2 / (H100_BF16 * 0.4166)  # 16 rows' FLOPs at 412.2 TFLOP/s (MXFP4 x bf16: bf16 MMAs)
    bandwidth = H100_BYTES_PER_S * constants["bandwidth_efficiency"]
    saturating = op.bytes / (bandwidth * op.bytes / (op.bytes + constants["bandwidth_half_bytes"]))
    memory = op.bytes / profile.weight_bandwidth.at(op.bytes)  # the bandwidth curve samples that law
    assert compute == pytest.approx(35.8e-6, rel=0.01)  # 74.6 us at 0.2, before rows7's refit
    # 78.8 us at the constants before the 2026-12-02 refit, 82.47 us before the 2026-12-03 (gemmramp) refit, 77.68 us
    # before rows7's refit (bandwidth half bytes 0.26 -> 2.04 MB)
    assert memory == pytest.approx(saturating, rel=0.01) == pytest.approx(78.29e-6, rel=0.01)  # 247 MB, 4-bit
    assert not compute_bound
    assert seconds == pytest.approx(memory, rel=1e-12)
    # the rows law at the constants tilegemm was measured against (matmul_half_rows 65.31, before the 2026-12-03 refit)
    old_law = op.flops / (H100_BF16 * 0.2 * 2 / (2 + 65.31))
    assert old_law == pytest.approx(313.8e-6, rel=0.01)  # the rows law: 0.59% of the peak, 4x the read
    assert old_law > 3 * memory


def test_a_4096_row_gemm_prices_as_the_saturated_rate():
    profile = prior_profile(H100)
    constants = fitted_constants()["constants"]
    half_rows = constants["matmul_half_rows"]
    assert profile.matmul_half_rows == half_rows
    op = _gemm(4096)
    seconds, compute_bound = op_seconds(op, profile, tp=1)
    rate = H100_BF16 * constants["matmul_efficiency"]
    assert compute_bound
    ramped = op.flops / 4096 * (16 + 4080 * (4096 + half_rows) / 4096) / rate  # 4,096 = 256 whole tiles: no padding
    assert seconds == pytest.approx(ramped, rel=1e-12)
    old_law = op.flops / (rate * 4096 / (4096 + half_rows))  # the rows law before the tile
    assert seconds == pytest.approx(old_law - op.flops / 4096 * half_rows * 16 / 4096 / rate, rel=1e-12)


def test_rows_past_a_tile_pay_a_whole_one():
    constants = fitted_constants()["constants"] | {"matmul_half_rows": 0.0}  # flat: the padding alone
    profile = prior_profile(H100, constants=constants)
    rate = H100_BF16 * constants["matmul_efficiency"]
    op = _gemm(4113)  # 257 tiles and one row
    compute = op.flops * 4128 / 4113 / rate
    assert op_seconds(op, profile, tp=1)[0] == pytest.approx(compute, rel=1e-12)
    assert NVIDIA_GEMM.padded_rows(1) == 16 and NVIDIA_GEMM.padded_rows(17) == 32


def test_a_gemm_within_one_tile_prices_as_the_tile_whatever_the_half_rows():
    rate = 100e12
    for half_rows in (0.0, 70.0, 1069.0):
        assert padded_matmul_seconds(1e9, 2, NVIDIA_GEMM, rate, half_rows) == pytest.approx(1e9 * 16 / 2 / rate)
        assert padded_matmul_seconds(1e9, 16, NVIDIA_GEMM, rate, half_rows) == pytest.approx(1e9 / rate)


def test_the_rows_above_the_first_tile_ramp():
    rate = 100e12
    seconds = padded_matmul_seconds(128e9, 128, NVIDIA_GEMM, rate, 100.0)  # 1e9 FLOPs a row
    assert seconds == pytest.approx(1e9 * (16 + 112 * 228 / 128) / rate)  # 215.5 rows' worth: 1.684 x the flat price
    assert seconds / (128e9 / rate) == pytest.approx(1.6836, abs=1e-4)
    # 33 rows: 48 padded, 32 of them above the first tile at 48 / (48 + 100)
    assert padded_matmul_seconds(33e9, 33, NVIDIA_GEMM, rate, 100.0) == pytest.approx(1e9 * (16 + 32 * 148 / 48) / rate)


def test_a_steps_time_never_falls_as_its_rows_grow():
    rate, half_rows = 100e12, 204.4
    times = [padded_matmul_seconds(rows * 1e9, rows, NVIDIA_GEMM, rate, half_rows) for rows in range(1, 1025)]
    assert all(later >= earlier for earlier, later in itertools.pairwise(times))


def test_which_tile_each_vendor_gets():
    assert weight_gemm_tile(H100) is NVIDIA_GEMM
    assert weight_gemm_tile(TARGETS["mi300x"]) is GENERIC_GEMM  # AMD's kernels not read: the m16n8k16 MMA's 16
    assert prior_profile(TARGETS["mi300x"]).matmul_tile.tiles == (16,)


def test_expert_ops_carry_the_rows_routed_to_each_expert():
    text = reference_hf_config("gpt-oss-120b").read_text()
    model = import_hf_config(json.loads(text), name="gpt-oss-120b").model
    experts = [op for op in forward_ops(model, decode_shape(64, 1024), tp=2) if op.name.startswith("expert")]
    touched = experts_touched(128, 4, 64)  # 128 x (1 - (124 / 128)^64) = 111.2 experts
    assert touched == pytest.approx(111.2, abs=0.05)
    assert {op.tokens for op in experts} == {round(64 * 4 / touched)} == {2}  # 256 routings over 111.2 experts


def test_the_datasheet_and_a_ceiling_do_not_pad():
    assert datasheet_profile(H100).matmul_tile is None
    prior = prior_profile(H100)
    assert prior.ceiling().matmul_tile is None
    for rows in (1, 2, 17, 4096):
        op = _gemm(rows)
        bound, _ = op_seconds(op, datasheet_profile(H100), tp=1)
        ceiling, _ = op_seconds(op, prior.ceiling(), tp=1)
        assert bound <= ceiling <= op_seconds(op, prior, tp=1)[0]


def test_a_routed_experts_gemm_takes_no_ramp():
    constants = fitted_constants()["constants"] | {"matmul_half_rows": 100.0}
    profile = prior_profile(H100, constants=constants)
    rate = H100_BF16 * constants["matmul_efficiency"]
    expert = _gemm(4096)._replace(
        name="expert 1440x2880", tokens=29, grouped=True
    )  # a 922-token prompt's rows an expert
    dense = expert._replace(name="mlp 1440x2880", grouped=False)
    compute_bound = dict(flops=2 * 29 * OUT * IN * 1000, bytes=1.0)  # compute far above the read
    expert, dense = expert._replace(**compute_bound), dense._replace(**compute_bound)
    flops = expert.flops
    assert op_seconds(expert, profile, tp=1)[0] == pytest.approx(flops * 32 / 29 / rate, rel=1e-12)  # 2 tiles, flat
    ramped = flops / 29 * (16 + 16 * 132 / 32) / rate  # 16 rows above the first tile at 32 / (32 + 100)
    assert op_seconds(dense, profile, tp=1)[0] == pytest.approx(ramped, rel=1e-12)
