"""The scales vLLM's Marlin kernel gives block-quantized FP8 linear layers, which the checkpoint does not hold.

A block-FP8 checkpoint (``fp8-block``: DeepSeek-V3's and Qwen3-*-FP8's layout) stores one fp32 ``weight_scale_inv``
per 128 x 128 block. vLLM picks its linear kernel from ``_POSSIBLE_FP8_BLOCK_KERNELS``
(``model_executor/kernels/linear/__init__.py``), the first whose ``is_supported`` holds on the GPU, in the order
FlashInfer-DeepGEMM, DeepGEMM, Cutlass, B12x, Marlin, Humming, Triton. Below compute capability 9.0 the first three
refuse (DeepGEMM: Hopper and Blackwell; Cutlass block FP8 from sm90, as log 2407's L4 shows by running Marlin under
``--linear-backend=auto``) and B12x wants a 12.x part, so Marlin runs the layer where it accepts the GPU:

- ``MarlinFP8ScaledMMLinearKernel.is_supported`` (``kernels/linear/scaled_mm/marlin.py``) refuses compute
  capability 8.9 and up unless ``VLLM_TEST_FORCE_FP8_MARLIN`` is set in 0.26.0 and 0.28.0 (Triton runs there on Ada)
  and accepts every part from 7.5 in 0.29.0 and 0.32.0 (read in the wheels): an Ada GPU (L4, L40S, RTX 4090) runs
  Marlin from 0.29.0; an Ampere one (A100, A10, RTX 3090) in every release read (0.26.0 on; earlier ones not read,
  so not priced).
- ``prepare_fp8_layer_for_marlin`` (``layers/quantization/utils/marlin_utils_fp8.py``, 0.29.0) turns the block scales
  into group scales: ``weight_scale_inv.to(layer.orig_dtype)``, transposed and ``repeat_interleave(block_n, 1)``,
  one value per 128 input rows per output column, ceil(K / 128) x N in the model's dtype (2 B), replacing the
  ceil(K / 128) x ceil(N / 128) fp32 block scales. The weight itself is repacked at its size (``gptq_marlin_repack``).

The kernel's scales are weights vLLM holds after loading, so they come out of the KV budget. Priced here for a
dense decoder with standard attention on one rank: the merged q/k/v and the output projection of every layer and
its MLP (gate/up merged, down); MoE experts (their own fused-MoE backend), MLA, recurrent mixers and Gemma-style
global heads are not priced (0). Seen against logs 2407-2418 (read with them in view): the Marlin decode sides
keep 0.134 GiB fewer KV bytes than the Triton prefill sides at the same CUDA-graph estimate; Qwen3-8B's scales are
0.10 GiB of it.
"""

from __future__ import annotations

from mha_cli.core.engine.generations import Version
from mha_cli.core.schemas import ModelSpec

BLOCK = 128
"""The block edge of an ``fp8-block`` checkpoint (``weight_block_size`` [128, 128])."""
SCALE_BYTES = 2
"""Marlin's group scales, in the model's dtype (``layer.orig_dtype``, bf16 or fp16)."""
BLOCK_SCALE_BYTES = 4
"""The checkpoint's fp32 ``weight_scale_inv``, one per block."""
MARLIN_ON_ADA_FROM: Version = (0, 29)
"""The first vLLM whose FP8 Marlin kernel accepts compute capability 8.9 (0.28.0 refuses it)."""
MARLIN_READ_FROM: Version = (0, 26)
"""The earliest release read with the kernel abstraction (Marlin below 8.9); earlier ones not read, not priced."""
FIRST_CAPABILITY = 7.5
"""``is_fp8_marlin_supported``: compute capability 7.5 or later."""
NATIVE_BLOCK_FP8_CAPABILITY = 9.0
"""From here DeepGEMM, Cutlass or B12x run block FP8 ahead of Marlin."""
KERNELS = ("marlin", "humming", "triton")
"""The kernels a log names for block-FP8 linear layers below 9.0 (``--linear-backend``)."""


def runs_fp8_marlin(
    weight_dtype: str, engine: str, release: Version | None, vendor: str, compute_capability: float | None,
    forced: str | None = None,
) -> bool:  # fmt: skip
    """Whether vLLM ``release`` runs ``weight_dtype``'s linear layers through FP8 Marlin on the GPU: block FP8 on an
    NVIDIA part of 7.5 to 8.x (8.x from 0.29.0), or where ``forced`` (``--linear-backend``) names it; None release:
    the latest read."""
    if engine != "vllm" or weight_dtype != "fp8-block" or vendor != "NVIDIA" or compute_capability is None:
        return False
    if forced is not None:
        return forced == "marlin"
    if not FIRST_CAPABILITY <= compute_capability < NATIVE_BLOCK_FP8_CAPABILITY:
        return False
    first = MARLIN_ON_ADA_FROM if compute_capability >= 8.9 else MARLIN_READ_FROM
    return release is None or release >= first


def _projections(model: ModelSpec, tp: int) -> list[tuple[int, int]] | None:
    """(in, out) of each linear layer of one decoder layer on one rank; None where the shape is not priced."""
    attention, block = model.attention, model.block
    if (
        block.moe is not None or attention.mla is not None or model.recurrent is not None
        or attention.global_head_dim is not None or attention.global_n_kv_heads is not None or attention.output_gate
    ):  # fmt: skip
        return None
    heads, kv_heads = attention.n_heads // tp, max(1, attention.n_kv_heads // tp)
    width = block.d_ff // tp
    up = 2 * width if block.mlp == "gated" else width
    return [
        (model.d_model, (heads + 2 * kv_heads) * attention.head_dim),  # the merged q/k/v
        (heads * attention.head_dim, model.d_model),  # o_proj
        (model.d_model, up),  # the merged gate/up
        (width, model.d_model),  # down_proj
    ]


def _ceil(value: int) -> int:
    return -(-value // BLOCK)


def marlin_scale_bytes(model: ModelSpec, tp: int) -> int:
    """Bytes Marlin's group scales add to one rank's block-FP8 linear layers: ceil(K / 128) x N x 2 B less the
    checkpoint's ceil(K / 128) x ceil(N / 128) x 4 B, over every layer; 0 for a shape not priced."""
    projections = _projections(model, tp)
    if projections is None:
        return 0
    per_layer = sum(
        _ceil(n_in) * n_out * SCALE_BYTES - _ceil(n_in) * _ceil(n_out) * BLOCK_SCALE_BYTES
        for n_in, n_out in projections
    )
    return per_layer * model.n_layers


def marlin_scales(
    model: ModelSpec, tp: int, weight_dtype: str, engine: str, release: Version | None, vendor: str,
    compute_capability: float | None, forced: str | None = None,
) -> tuple[int, str | None]:  # fmt: skip
    """The bytes FP8 Marlin's scales add to one rank's weights and a line naming them; (0, None) where Marlin does
    not run the linear layers or the shape is not priced."""
    if not runs_fp8_marlin(weight_dtype, engine, release, vendor, compute_capability, forced):
        return 0, None
    extra = marlin_scale_bytes(model, tp)
    if extra == 0:
        return 0, None
    return extra, f"vLLM's FP8 Marlin kernel widens the block scales to per-128 group scales: +{extra / 2**30:.2f} GiB"
