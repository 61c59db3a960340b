"""Weight GEMMs priced as their kernels issue them: the token (M) dimension padded to the kernel's smallest M tile.

A linear layer's matmul at ``rows`` tokens (a routed expert's: the rows routed to that expert) runs whole M tiles:
its compute is FLOPs x ceil(rows / tile) x tile / rows at the datasheet x the matmul efficiency. At a decode
step's few rows the padded FLOPs stay far below the weight read, so the read bounds it (the GEMV regime); at a
prompt's thousands of rows the padding vanishes and the rate is the saturated one the rows law tended to
(``peak x rows / (rows + half_rows)`` -> peak). This replaces that law for weight GEMMs: it let a fit price a
2-row expert GEMM at under 1% of the peak, compute-bound, which no kernel is (``matmul_half_rows`` now prices only
attention's ``attention_flops`` curve: no constant added).

The smallest M tile of the kernels read, each at a decode step's few rows:

- vLLM's Triton fused MoE (``model_executor/layers/fused_moe/fused_moe.py`` ``try_get_optimal_moe_config``, vLLM
  0.16.0 and 0.19.1 wheels): the tuned configs' smallest ``BLOCK_SIZE_M`` at M = 1-16 tokens is 16 in 281 of the
  310 files of 0.19.1 (89 of the 117 H100/H200 ones; 64 in 22, 32 in 2), and ``get_default_config`` gives 16 (0.19.1: bf16 and per-tensor fp8 below 33 tokens,
  block fp8 below 65; 0.16.0: ``M <= E``); ``moe_align_block_size`` pads each expert's rows to a multiple of it.
  DeepSeek-V3's tuned H200 file (``E=256,N=256,...,fp8_w8a8,block_shape=[128,128]``) keeps 16 up to 512 tokens;
- vLLM's triton_kernels ``matmul_ogs`` (gpt-oss's MXFP4 experts on Hopper, ``third_party/triton_kernels/
  matmul_ogs_details/opt_flags.py`` ``make_default_opt_flags_nvidia``, 0.19.1): ``block_m = max(16, ...)``;
- vLLM's CUTLASS fp8 GEMM on Hopper (``csrc/quantization/w8a8/cutlass/c3x/scaled_mm_sm90_fp8_dispatch.cuh``
  ``cutlass_gemm_sm90_fp8_dispatch``, vllm-project/vllm at c30af86): at M <= 16 a ``Shape<_64, _16, _256>`` tile
  with swap-AB, the tokens on its 16-wide N.

Where no single figure was read the tile is 16, the M of the ``mma.sync`` m16n8k16 tensor-core instruction: bf16
GEMMs through cuBLAS (closed source), SGLang's fused MoE (a fork of vLLM's, not read), TensorRT-LLM and Blackwell's
TRT-LLM-gen / FlashInfer CUTLASS MoE (swap-AB), and every other vendor (AMD hipBLASLt and AITER, TPU, Apple, Intel:
not read). Marlin's MoE (``fused_marlin_moe.py``: ``block_size_m`` 8 while fewer than 7.2 rows an expert, 16 with
8-bit activations) is not told apart: gpt-oss takes it on Ampere and Ada, or forced. An fp32 matmul (the non-tensor
cores, ``core.compute_dtype``) is not padded.

The ramp above the first tile. A GEMM past one M tile runs below its large-M rate: fewer CTAs than SMs and a part-
filled last wave (the tile and wave quantisation of NVIDIA's *Matrix Multiplication Background User's Guide*,
DU-09799-001, ch. 3: the mechanism only, no figure taken), split-K's reduction, the epilogue. With the flat rate the
2023 set's 128-token prompts priced 25-50% fast (llama-2-7b on an A100: its matmuls 12.30 -> 8.31 ms, now bound by
the weight read) and the refit moved the miss into the per-kernel and all-reduce latencies (4.76 -> 6.48 us,
30.6 -> 54.7 us), which every decode step at tp > 1 pays: held-out median 11.7% -> 22.9%. The padded rows above the
first tile run at the matmul rate x padded / (padded + ``matmul_half_rows``), the saturating shape the rows law
had before the tile (one fitted constant, already shipped: no parameter added; its shape is fitted, not read from a
kernel's heuristics; a generation may give prompt attention its own half rows apart from it,
``core.cost.priors.ATTENTION_HALF_ROWS``, else the one constant shapes both); the first tile's rows at the matmul
rate, so a decode GEMM of at most 16 rows (a routed expert's few rows) prices as the tile alone and stays bound by
its weight read. A routed expert's GEMM takes no
ramp: vLLM's ``fused_moe_kernel`` (``model_executor/layers/fused_moe/fused_moe.py``, vllm-project/vllm at 000d145)
runs one program per (M block, N block) over ``cdiv(EM, BLOCK_SIZE_M)`` M blocks, EM every expert's sorted, padded
rows, so one launch holds every touched expert's tiles; with the ramp, vLLM V1's held-out gpt-oss-120b prompts on
H100 (922 tokens: about 29 rows an expert) priced 28-160% slow. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.cost.decode_tiles import TileKernel

if TYPE_CHECKING:
    from mha_cli.core.targets import Target

NVIDIA_GEMM = TileKernel(name="16-row M tile (vLLM fused MoE, matmul_ogs, CUTLASS fp8)", tiles=(16,), fp8_mma=True)
"""NVIDIA's weight GEMMs: the 16-row tile the kernels above read run at few rows (``fp8_mma``: unused here, the
weight's dtype picks the rate, ``core.cost.priors.peak_matmul_flops``)."""
GENERIC_GEMM = TileKernel(name="16-row M tile (m16n8k16; kernels not read)", tiles=(16,), fp8_mma=True)
"""Other vendors' weight GEMMs: not read, the m16n8k16 MMA's 16 rows."""


def weight_gemm_tile(target: Target) -> TileKernel:
    """The M tile ``target``'s weight GEMMs pad a matmul's rows to (the same for vLLM and SGLang: see the module)."""
    return NVIDIA_GEMM if target.vendor == "NVIDIA" else GENERIC_GEMM


def ramp_half_rows(grouped: bool, half_rows: float) -> float:
    """The half rows the ramp prices a weight GEMM with: 0 for a routed expert's grouped fused-MoE GEMM
    (``Op.grouped``, module)."""
    return 0.0 if grouped else half_rows


def padded_matmul_seconds(flops: float, rows: int, tile: TileKernel, rate: float, half_rows: float = 0.0) -> float:
    """Compute seconds of a weight GEMM of ``flops`` (unpadded) over ``rows`` tokens on whole ``tile`` tiles: the
    first tile's rows at ``rate`` FLOP/s (the datasheet x the matmul efficiency), the padded rows above it at
    ``rate`` x padded / (padded + ``half_rows``) (the ramp, module docstring; ``half_rows`` 0: flat)."""
    rows = max(1, rows)
    padded, first = tile.padded_rows(rows), tile.tiles[0]
    above = (padded - first) * (padded + half_rows) / padded
    return flops / rows * (first + above) / rate
