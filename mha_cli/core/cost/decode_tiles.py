"""Decode attention priced as its kernel issues it: one sequence's query rows against one KV head, padded to the
kernel's MMA tile, on the tensor cores of the dtype it multiplies in.

A decode kernel packs the query heads that share a KV head (and a speculative step's few tokens) into the row (M)
dimension of its score matmul, one sequence at a time, and runs whole tiles: 8 rows on a 64-row tile cost 64 rows'
FLOPs. The kernels read (the tile each runs at a sequence's packed rows):

- FlashAttention-3 on Hopper (vLLM's FLASH_ATTN backend, ``v1/attention/backends/fa_utils.py``
  ``get_flash_attn_version``: FA3 where the device's major capability is 9): ``hopper/heuristics.h``
  ``use_one_mma_wg`` (Dao-AILab/flash-attention, vllm-project/flash-attention#63, vLLM#16864) runs one 64-row MMA
  warpgroup when the packed rows (``seqlen_q x h / h_k`` under ``pack_gqa``) are at most 64, else 128-row tiles;
  with an fp8 cache the query is cast to fp8 and the MMAs run in fp8 (``fa_utils.flash_attn_supports_fp8``: FA3 on
  capability 9; SGLang's ``FlashAttentionBackend.forward_decode`` casts ``q`` to the cache dtype likewise).
  SGLang's sgl-flash-attn took the 64-row warpgroup only in sgl-project/sglang#18985 (merged 2026-02-18, its first
  release not read): its 0.5 generation is priced at the 128-row tile it ran before;
- FlashAttention-2 elsewhere on NVIDIA (capability 8): ``csrc/flash_attn/src/flash_fwd_launch_template.h``
  ``run_mha_fwd_splitkv_dispatch``: ``kBlockM = 64`` for every head dim (``seqlenq_ngroups_swapped`` packs the
  group into M); no fp8 MMA (``flash_attn_supports_fp8``: FA3 only);
- FlashInfer's tensor-core decode (SGLang's backend off Hopper, and on it before FA3 became its default in 0.5):
  ``include/flashinfer/utils.cuh`` ``FA2DetermineCtaTileQ``: 16 rows up to 16 packed rows, 64 up to 64, 128
  above; fp8 K/V are converted to 16 bits before the MMA (its FA2 template), so bf16 tensor cores;
- FlashMLA (vLLM's MLA decode on Hopper; SGLang's FA3 MLA path on Hopper, not read, is priced alike): ``csrc/kernels/traits.h``
  ``Traits::BLOCK_SIZE_M`` 64, the rows ``get_mla_metadata``'s ``num_heads_per_head_k`` = ``seqlen_q x h_q /
  h_k`` (every head on the rank shares the one latent); its ``InputT`` is fp8 for an fp8 cache.

Not read, priced on 16-row tiles in bf16 (``GENERIC_DECODE``, the m16n8k16 MMA's M, as ``core.cost.gemm_tiles``
prices unread GEMMs): TensorRT-LLM's XQA, Blackwell's kernels (TRT-LLM-gen, FA4), AMD's (ROCm AITER, Triton), other
vendors' and FlashInfer's MLA; until 2026-12-03 they kept the rows law, whose fitted half-rows priced a 4-row decode
below 1% of peak once the weight GEMMs stopped constraining it. Measured on H20 (little compute per byte):
FA3 decodes slower than FlashInfer (sgl-project/sglang#5630: 908 vs 2,014 tok/s at batch 64; #6151: 98 vs 35 us a
layer), the padded 64-128-row tiles against FlashInfer's 16. Pure Python.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from mha_cli.core.record import Record

if TYPE_CHECKING:
    from mha_cli.core.targets import Target

HOPPER_MAJOR = 9
"""CUDA compute capability major of Hopper (H100, H200, H20): where vLLM runs FlashAttention-3."""
AMPERE_MAJOR = 8
"""Ampere and Ada (A100, L40S): FlashAttention-2."""


class DecodeRows(NamedTuple):
    """What a decode attention kernel sees of one op: the query rows one sequence packs against one KV head."""

    rows: int
    """New tokens per sequence x query heads sharing one KV head on the rank (MLA's absorbed decode: every head)."""
    latent: bool
    """MLA's absorbed latent (FlashMLA), not GQA heads."""
    fp8_cache: bool
    """The KV cache is stored in fp8."""


class TileKernel(Record):
    """A decode kernel's query tiles: the smallest that holds a sequence's packed rows, or the largest repeated."""

    name: str
    tiles: tuple[int, ...]
    """Tile heights in rows, increasing."""
    fp8_mma: bool
    """Runs its MMAs in fp8 when the cache is fp8."""

    def padded_rows(self, rows: int) -> int:
        """The rows the kernel computes for ``rows`` packed query rows: whole tiles."""
        tile = next((t for t in self.tiles if rows <= t), self.tiles[-1])
        return math.ceil(rows / tile) * tile


FA3 = TileKernel(name="FlashAttention-3", tiles=(64, 128), fp8_mma=True)
FA3_TWO_WARPGROUPS = TileKernel(name="FlashAttention-3 (128-row tiles)", tiles=(128,), fp8_mma=True)
FA2 = TileKernel(name="FlashAttention-2", tiles=(64,), fp8_mma=False)
FLASHINFER = TileKernel(name="FlashInfer (tensor cores)", tiles=(16, 64, 128), fp8_mma=False)
FLASHMLA = TileKernel(name="FlashMLA", tiles=(64,), fp8_mma=True)
GENERIC_DECODE = TileKernel(name="16-row tile (the m16n8k16 MMA's M; the kernel not read)", tiles=(16,), fp8_mma=False)
"""Where no decode kernel was read (TensorRT-LLM's XQA, Blackwell's, ROCm's, other vendors'): the m16n8k16 MMA's 16
rows, in bf16, as ``core.cost.gemm_tiles`` prices the weight GEMMs it has not read (2026-12-03: the rows law's
fitted half-rows had priced a 4-row decode at under 1% of peak)."""
UNPADDED = TileKernel(name="unpadded (a bound)", tiles=(1,), fp8_mma=True)
"""No padding, fp8 MMAs on an fp8 cache: what no kernel beats (a ceiling profile's)."""


class DecodeAttention(Record):
    """How one engine runs decode attention on one GPU: its kernels and the rate of a full tile."""

    gqa: TileKernel
    """Per-head K/V (MHA, GQA, MQA); ``GENERIC_DECODE`` where the engine's kernel was not read."""
    latent: TileKernel
    """MLA's absorbed latent; ``GENERIC_DECODE`` where the engine's kernel was not read. (A measured profile has no
    ``DecodeAttention`` at all: its ``attention_flops`` curve prices decode, ``core.cost.step.op_seconds``.)"""
    bf16_flops: float
    """FLOP/s of full tiles on bf16 tensor cores: the datasheet's dense bf16 x the attention efficiency."""
    fp8_flops: float
    """The same on fp8 tensor cores (the bf16 figure where the GPU has none)."""

    def unpadded(self) -> DecodeAttention:
        """The same rates without padding, in fp8 on an fp8 cache: the bound no kernel of them goes below."""
        return self.model_copy(update={"gqa": UNPADDED, "latent": UNPADDED})

    def scaled(self, factor: float) -> DecodeAttention:
        """The same kernels at ``factor`` x the rates (a fit's compute factor)."""
        return self.model_copy(update={"bf16_flops": self.bf16_flops * factor, "fp8_flops": self.fp8_flops * factor})

    def seconds(self, flops: float, decode: DecodeRows) -> float:
        """Compute seconds of one op of ``flops`` (its unpadded FLOPs) at ``decode``'s rows (at least 1: a decode
        step's new tokens x the query heads sharing a KV head, ``core.cost.work.sequence_ops``)."""
        kernel = self.latent if decode.latent else self.gqa
        rate = self.fp8_flops if decode.fp8_cache and kernel.fp8_mma else self.bf16_flops
        return flops * kernel.padded_rows(decode.rows) / decode.rows / rate


def decode_kernels(engine: str, generation: str | None, target: Target) -> tuple[TileKernel, TileKernel]:
    """(GQA kernel, MLA kernel) ``engine`` (its ``generation``, None: the latest) decodes with on ``target``;
    ``GENERIC_DECODE`` for a kernel not read."""
    major = int(target.compute_capability or 0)
    if target.vendor != "NVIDIA" or major not in (AMPERE_MAJOR, HOPPER_MAJOR):
        return GENERIC_DECODE, GENERIC_DECODE
    if engine == "vllm":
        return (FA3 if major == HOPPER_MAJOR else FA2), (FLASHMLA if major == HOPPER_MAJOR else GENERIC_DECODE)
    if engine == "sglang":
        if major == HOPPER_MAJOR and generation != "sglang-0.4":
            return FA3_TWO_WARPGROUPS, FLASHMLA
        return FLASHINFER, GENERIC_DECODE
    return GENERIC_DECODE, GENERIC_DECODE


def decode_attention(target: Target, engine: str, generation: str | None, efficiency: float) -> DecodeAttention:
    """``engine``'s decode attention on ``target`` at ``efficiency`` of the datasheet (rates in FLOP/s)."""
    gqa, latent = decode_kernels(engine, generation, target)
    bf16 = target.bf16_tflops_dense * 1e12 * efficiency
    fp8 = target.fp8_tflops_dense * 1e12 * efficiency if target.fp8_native and target.fp8_tflops_dense else bf16
    return DecodeAttention(gqa=gqa, latent=latent, bf16_flops=bf16, fp8_flops=fp8)
