"""Decode attention on its kernel's padded tiles (``core.cost.decode_tiles``), against hand counts.

- An H20 GQA decode op at 5 rows a KV head (vLLM: FlashAttention-3's 64-row warpgroup) costs its FLOPs x 64 / 5 at
  the bf16 datasheet x the attention efficiency; at 64 rows no padding, the old law's saturated rate; with an fp8
  cache, the fp8 datasheet's rate.
- The tiles each kernel's source picks (FA3 64/128, FlashInfer 16/64/128, FlashMLA 64) and which engine and GPU
  run which; where none was read (AMD, Blackwell, TensorRT-LLM) 16-row tiles in bf16.
- The rows a step's ops carry: Llama-3.1-8B's 4 (32 query heads over 8 KV heads), DeepSeek-V3's 16 latent rows at
  tp 8 (128 heads sharing one latent); a prompt's attention carries none.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mha_cli.core.cost.decode_tiles import (
    FA3,
    FLASHINFER,
    FLASHMLA,
    GENERIC_DECODE,
    DecodeAttention,
    DecodeRows,
    decode_attention,
    decode_kernels,
)
from mha_cli.core.cost.priors import datasheet_profile, fitted_constants, prior_profile
from mha_cli.core.cost.profile import Curve
from mha_cli.core.cost.step import op_seconds
from mha_cli.core.cost.work import Op, decode_shape, forward_ops, prefill_shape
from mha_cli.core.presets import get_preset
from mha_cli.core.targets import load_targets

TARGETS = load_targets()
FLOPS = 1e12
"""An attention op's unpadded FLOPs: large beside its bytes, so compute bounds it."""


def _attention(rows: int, fp8_cache: bool = False, decode: bool = True) -> Op:
    return Op(name="attention", kind="attention", count=1, bytes=1e6, flops=FLOPS, tokens=rows,
              decode=DecodeRows(rows, False, fp8_cache) if decode else None)  # fmt: skip


def _efficiency() -> float:
    return fitted_constants()["constants"]["attention_efficiency"]


def test_h20_decode_at_five_rows_is_priced_on_a_64_row_tile():
    profile = prior_profile(TARGETS["h20"])  # the default engine: vLLM, FA3 on Hopper
    seconds, compute_bound = op_seconds(_attention(5), profile, tp=1)
    by_hand = FLOPS * 64 / 5 / (148e12 * _efficiency())  # 12.8x the FLOPs at 148 TFLOPS x the efficiency
    assert compute_bound
    assert seconds == pytest.approx(by_hand, rel=1e-12)
    old_law = FLOPS / (148e12 * _efficiency() * 5 / (5 + fitted_constants()["constants"]["matmul_half_rows"]))
    assert seconds < old_law  # the rows law charged 5 / (5 + 75.7) of the rate: slower than 64 padded rows


def test_at_64_rows_no_padding_and_the_old_laws_saturated_rate():
    profile = prior_profile(TARGETS["h20"])
    seconds, _ = op_seconds(_attention(64), profile, tp=1)
    assert seconds == pytest.approx(FLOPS / (148e12 * _efficiency()), rel=1e-12)
    # the rows law tends to the same rate at many rows (its peak x rows / (rows + half) -> peak)
    saturated = Curve.saturating(148e12 * _efficiency(), 75.72, [1.0, 1e9]).at(1e9)
    assert seconds == pytest.approx(FLOPS / saturated, rel=1e-6)
    # above 64 rows FA3 runs 128-row tiles (two MMA warpgroups): 65 rows cost 128
    seconds_65, _ = op_seconds(_attention(65), profile, tp=1)
    assert seconds_65 == pytest.approx(FLOPS * 128 / 65 / (148e12 * _efficiency()), rel=1e-12)


def test_an_fp8_cache_runs_fa3_on_the_fp8_tensor_cores():
    profile = prior_profile(TARGETS["h20"], "fp8")
    seconds, _ = op_seconds(_attention(5, fp8_cache=True), profile, tp=1)
    assert seconds == pytest.approx(FLOPS * 64 / 5 / (296e12 * _efficiency()), rel=1e-12)


def test_a_prompts_attention_keeps_the_rows_law():
    profile = prior_profile(TARGETS["h20"])
    seconds, _ = op_seconds(_attention(4096, decode=False), profile, tp=1)
    assert seconds == pytest.approx(FLOPS / profile.attention_flops.at(4096), rel=1e-12)


@pytest.mark.parametrize(
    ("kernel", "rows", "padded"),
    [(FA3, 5, 64), (FA3, 64, 64), (FA3, 65, 128), (FA3, 200, 256), (FLASHINFER, 5, 16), (FLASHINFER, 17, 64),
     (FLASHINFER, 65, 128), (FLASHMLA, 16, 64), (FLASHMLA, 128, 128)],
)  # fmt: skip
def test_tiles_as_the_kernels_pick_them(kernel, rows, padded):
    assert kernel.padded_rows(rows) == padded


def test_which_kernel_each_engine_runs():
    h100, a100, mi300x, b200 = TARGETS["h100-sxm"], TARGETS["a100-80gb"], TARGETS["mi300x"], TARGETS["b200"]
    assert decode_kernels("vllm", "vllm-v1", h100) == (FA3, FLASHMLA)
    assert decode_kernels("vllm", None, a100)[0].tiles == (64,)  # FA2's kBlockM
    assert decode_kernels("vllm", None, a100)[0].fp8_mma is False
    assert decode_kernels("sglang", "sglang-0.4", h100) == (FLASHINFER, GENERIC_DECODE)  # its MLA kernel not read
    assert decode_kernels("sglang", "sglang-0.5", h100)[0].tiles == (128,)  # before the 64-row warpgroup
    # kernels not read (ROCm's, Blackwell's, TensorRT-LLM's XQA): 16-row tiles in bf16, no longer the rows law
    # (until 2026-12-03 these were (None, None) and mi300x's decode_attention None)
    assert decode_kernels("vllm", None, mi300x) == (GENERIC_DECODE, GENERIC_DECODE)
    assert decode_kernels("vllm", None, b200) == (GENERIC_DECODE, GENERIC_DECODE)
    assert decode_kernels("trtllm", "trtllm-pytorch", h100) == (GENERIC_DECODE, GENERIC_DECODE)
    assert GENERIC_DECODE.padded_rows(4) == 16 and GENERIC_DECODE.fp8_mma is False
    assert prior_profile(mi300x).decode_attention.gqa == GENERIC_DECODE


def test_a_decode_attention_always_names_its_kernels():
    """Since GENERIC_DECODE every engine and GPU has a kernel (read, or the 16-row tile): a ``DecodeAttention`` without
    one, the rows law's old case, is no longer a value; a measured profile carries no ``DecodeAttention`` at all."""
    with pytest.raises(ValidationError):
        DecodeAttention(gqa=None, latent=GENERIC_DECODE, bf16_flops=1e15, fp8_flops=2e15)
    for target in TARGETS.values():
        if target.bf16_tflops_dense:
            found = decode_attention(target, "vllm", None, 0.5)
            assert found.gqa is not None and found.latent is not None


def test_the_rows_a_steps_ops_carry():
    llama = get_preset("llama-3.1-8b")
    (attention,) = [op for op in forward_ops(llama, decode_shape(64, 1024)) if op.kind == "attention"]
    assert attention.decode == DecodeRows(4, False, False)  # 32 query heads / 8 KV heads, one token each
    assert attention.tokens == 64 * 4  # the rows law's size is still the whole batch's
    (prompt,) = [op for op in forward_ops(llama, prefill_shape(512)) if op.kind == "attention"]
    assert prompt.decode is None
    deepseek = get_preset("deepseek-v3")
    ops = forward_ops(deepseek, decode_shape(8, 1024), tp=8, kv_dtype="fp8")
    latent = {op.decode for op in ops if op.kind == "attention"}
    assert latent == {DecodeRows(16, True, True)}  # 128 heads / 8 ranks share one latent


def test_the_datasheet_bound_stays_below_the_prior():
    for target_id in ("h20", "h100-sxm", "a100-80gb"):
        target = TARGETS[target_id]
        for op in (_attention(5, fp8_cache=True), _attention(64), _attention(1)):
            prior, _ = op_seconds(op, prior_profile(target, "fp8"), tp=1)
            bound, _ = op_seconds(op, datasheet_profile(target, "fp8"), tp=1)
            ceiling, _ = op_seconds(op, prior_profile(target, "fp8").ceiling(), tp=1)
            assert bound <= ceiling <= prior


def test_h20_fa3_against_flashinfer_as_sglang_6151_measured_them():
    """sgl-project/sglang#6151 (Qwen3-235B-A22B, tp 8 on H20, 32 prompts of 3,500 tokens) profiled one decode
    layer's attention: FA3 98 us, FlashInfer 35 us. One rank's layer: 8 query heads on one KV head of 128, bf16
    cache. SGLang's FA3 then ran 128-row tiles (before #18985), FlashInfer 16: nothing here is fitted on them."""
    batch, context, rows = 32, 3500, 8
    op = Op(name="attention", kind="attention", count=1, bytes=batch * context * 128 * 2 * 2,
            flops=batch * context * rows * 4 * 128, tokens=batch * rows, decode=DecodeRows(rows, False, False))  # fmt: skip
    sglang = prior_profile(TARGETS["h20"], generation="sglang-0.5")
    assert sglang.decode_attention is not None and sglang.decode_attention.gqa.tiles == (128,)
    fa3, _ = op_seconds(op, sglang, tp=8)
    flashinfer_profile = sglang.model_copy(
        update={"decode_attention": sglang.decode_attention.model_copy(update={"gqa": FLASHINFER})}
    )
    flashinfer, _ = op_seconds(op, flashinfer_profile, tp=8)
    # FA3 is compute-bound on the H20: 8 rows padded to 128, at the generation's full-tile rate (its fitted attention
    # efficiency x 148 TFLOPS; 102.7 us against the 98 measured when tileattn landed, before the session's refit)
    assert fa3 == pytest.approx(op.flops * 128 / rows / sglang.decode_attention.bf16_flops)
    assert flashinfer < 35e-6  # memory-bound, the kernel reaches less bandwidth than the prior's
    assert fa3 / flashinfer > 2  # measured 2.8x; the rows law priced both alike
