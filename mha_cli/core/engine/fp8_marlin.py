"""The scales vLLM's Marlin kernel gives block-quantized FP8 linear layers, which the checkpoint does not hold.

A block-FP8 checkpoint (``fp8-block``: DeepSeek-V3's and Qwen3-*-FP8's layout) stores one fp32 ``weight_scale_inv``
per 128 x 128 block. vLLM picks its linear kernel from ``_POSSIBLE_FP8_BLOCK_KERNELS``
(``model_executor/kernels/linear/__init__.py``), the first whose ``is_supported`` holds on the GPU, in the order
FlashInfer-DeepGEMM, DeepGEMM, Cutlass, B12x, Marlin, Humming, Triton. Below compute capability 9.0 the first three
refuse (DeepGEMM: Hopper and Blackwell; Cutlass block FP8 from sm90, as log 2407's L4 shows by running Marlin under
``--linear-backend=auto``) and B12x wants a 12.x part, so Marlin runs the layer where it accepts the GPU:

- ``MarlinFP8ScaledMMLinearKernel.is_supported`` (``kernels/linear/scaled_mm/marlin.py``) refuses compute
  capability 8.9 and up unless ``VLLM_TEST_FORCE_FP8_MARLIN`` is set in 0.22.0, 0.24.0, 0.26.0 and 0.28.0 (Triton
  runs there on Ada) and accepts every part from 7.5 in 0.29.0 and 0.32.0 (read in the wheels); before the kernel
  abstraction, 0.10.0's and 0.11.0's ``Fp8LinearMethod`` set ``use_marlin = not has_device_capability(89)``: an Ada
  GPU (L4, L40S, RTX 4090) runs Marlin from 0.29.0; an Ampere one (A100, A10, RTX 3090) from 0.10.0, the earliest
  read (0.12-0.21 not read: taken as the releases either side, the same path; review 363 #7).
- ``prepare_fp8_layer_for_marlin`` (``layers/quantization/utils/marlin_utils_fp8.py``, 0.29.0) turns the block scales
  into group scales: ``weight_scale_inv.to(layer.orig_dtype)``, transposed and ``repeat_interleave(block_n, 1)``,
  one value per 128 input rows per output column, ceil(K / 128) x N in the model's dtype (2 B), replacing the
  ceil(K / 128) x ceil(N / 128) fp32 block scales. The weight itself is repacked at its size (``gptq_marlin_repack``).

The kernel's scales are weights vLLM holds after loading, so they come out of the KV budget. Priced here for a
decoder with standard attention on one rank: the merged q/k/v and the output projection of every layer, its dense MLP
(gate/up merged, down) and an MoE layer's shared experts; MLA, recurrent mixers and Gemma-style global heads are not
priced (0).

A block-FP8 MoE layer's routed experts take their own backend (``fused_moe/oracle/fp8.py``
``select_fp8_moe_backend``; 0.10.0-0.11.0: ``Fp8MoEMethod.use_marlin = not has_device_capability(89)``): Triton's
fused MoE takes fp8 only from compute capability 8.9 (``TritonExperts._supports_quant_scheme``:
``has_device_capability((8, 9))`` in 0.19.0, ``supports_fp8()`` in 0.34.0), so on an Ampere part (7.5 to 8.8) the
experts run Marlin, whose ``prepare_fp8_moe_layer_for_marlin`` (``marlin_utils_fp8.py``, 0.19.0 to 0.34.0; 0.10.0's
``prepare_moe_fp8_layer_for_marlin``) widens each expert's block scales alike: per expert w13 (d_model in, 2 x its
width out) and w2 (its width in, d_model out), on every MoE layer, for the experts one rank holds (trial 361 #1:
Qwen3-30B-A3B-FP8 on an A100 left 0.43 GiB out). Releases before 0.10.0 were not read: not priced. Per-channel and
per-tensor fp8 experts run Marlin there too, their scales repeated per output column (about 44 MB for
Qwen3-30B-A3B): not priced (review 363 #8). Seen against logs 2407-2418 (read with them in view): the Marlin decode sides
keep 0.134 GiB fewer KV bytes than the Triton prefill sides at the same CUDA-graph estimate; Qwen3-8B's scales are
0.10 GiB of it.
"""

from __future__ import annotations

from mha_cli.core.engine.generations import Version
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import ExpertLayout, expert_width_per_rank, local_experts, shared_width_per_rank

BLOCK = 128
"""The block edge of an ``fp8-block`` checkpoint (``weight_block_size`` [128, 128])."""
SCALE_BYTES = 2
"""Marlin's group scales, in the model's dtype (``layer.orig_dtype``, bf16 or fp16)."""
BLOCK_SCALE_BYTES = 4
"""The checkpoint's fp32 ``weight_scale_inv``, one per block."""
MARLIN_ON_ADA_FROM: Version = (0, 29)
"""The first vLLM whose FP8 Marlin kernel accepts compute capability 8.9 (0.28.0 refuses it)."""
MARLIN_READ_FROM: Version = (0, 10)
"""The earliest release read whose block-FP8 linear layers run Marlin below 8.9 (0.10.0's ``use_marlin``); earlier
ones not read, not priced."""
FIRST_CAPABILITY = 7.5
"""``is_fp8_marlin_supported``: compute capability 7.5 or later."""
NATIVE_BLOCK_FP8_CAPABILITY = 9.0
"""From here DeepGEMM, Cutlass or B12x run block FP8 ahead of Marlin."""
TRITON_FP8_MOE_CAPABILITY = 8.9
"""From here Triton's fused MoE takes fp8 experts (below it, Marlin runs them)."""
MOE_MARLIN_READ_FROM: Version = (0, 10)
"""The earliest release read whose fp8 MoE runs Marlin below 8.9 (0.10.0's ``Fp8MoEMethod.use_marlin``); earlier
ones not read, not priced."""
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


def runs_fp8_marlin_moe(
    weight_dtype: str, engine: str, release: Version | None, vendor: str, compute_capability: float | None
) -> bool:
    """Whether vLLM ``release`` runs block-FP8 routed experts through Marlin: on an NVIDIA part of 7.5 to 8.8, from
    0.10.0 (``MOE_MARLIN_READ_FROM``; None: the latest read)."""
    if engine != "vllm" or weight_dtype != "fp8-block" or vendor != "NVIDIA" or compute_capability is None:
        return False
    if not FIRST_CAPABILITY <= compute_capability < TRITON_FP8_MOE_CAPABILITY:
        return False
    return release is None or release >= MOE_MARLIN_READ_FROM


def _attention_projections(model: ModelSpec, tp: int) -> list[tuple[int, int]] | None:
    """(in, out) of one attention layer's linear layers on one rank; None where the shape is not priced."""
    attention = model.attention
    if (
        attention.mla is not None or model.recurrent is not None or attention.global_head_dim is not None
        or attention.global_n_kv_heads is not None or attention.output_gate
        or not model.layers.shared_kv_projections or model.layers.shared_d_ff is not None  # Gemma 4's sharing layers
    ):  # fmt: skip
        return None
    heads, kv_heads = attention.n_heads // tp, max(1, attention.n_kv_heads // tp)
    return [
        (model.d_model, (heads + 2 * kv_heads) * attention.head_dim),  # the merged q/k/v
        (heads * attention.head_dim, model.d_model),  # o_proj
    ]


def _mlp_projections(model: ModelSpec, width: int) -> list[tuple[int, int]]:
    """(in, out) of an MLP ``width`` wide on one rank: the merged gate/up (or up alone), down."""
    return [(model.d_model, 2 * width if model.block.mlp == "gated" else width), (width, model.d_model)]


def _ceil(value: int) -> int:
    return -(-value // BLOCK)


def _widened(projections: list[tuple[int, int]]) -> int:
    """Marlin's group scales ceil(K / 128) x N x 2 B less the checkpoint's ceil(K / 128) x ceil(N / 128) x 4 B, over
    ``projections`` (K in, N out)."""
    return sum(
        _ceil(n_in) * n_out * SCALE_BYTES - _ceil(n_in) * _ceil(n_out) * BLOCK_SCALE_BYTES
        for n_in, n_out in projections
    )


def marlin_scale_bytes(model: ModelSpec, tp: int) -> int:
    """Bytes Marlin's group scales add to one rank's block-FP8 linear layers (the routed experts apart): every
    layer's attention, the dense MLP layers' MLP and the MoE layers' shared experts; 0 for a shape not priced."""
    attention = _attention_projections(model, tp)
    if attention is None:
        return 0
    total = _widened(attention) * model.n_layers
    total += _widened(_mlp_projections(model, model.block.d_ff // tp)) * model.n_dense_mlp_layers
    shared = shared_width_per_rank(model, tp)
    if shared:
        total += _widened(_mlp_projections(model, shared)) * model.n_moe_layers
    return total


def moe_marlin_scale_bytes(model: ModelSpec, experts: ExpertLayout) -> int:
    """Bytes Marlin's group scales add to one rank's block-FP8 routed experts (``experts``: how they spread): w13 and
    w2 of each expert it holds, on every MoE layer; 0 without experts."""
    if model.block.moe is None:
        return 0
    width = expert_width_per_rank(model, experts)
    return _widened(_mlp_projections(model, width)) * local_experts(model, experts) * model.n_moe_layers


def marlin_scales(
    model: ModelSpec, tp: int, weight_dtype: str, engine: str, release: Version | None, vendor: str,
    compute_capability: float | None, forced: str | None = None, experts: ExpertLayout | None = None,
) -> tuple[int, str | None]:  # fmt: skip
    """The bytes FP8 Marlin's scales add to one rank's weights and a line naming them: the linear layers where
    Marlin runs them, the routed experts (spread as ``experts``, by default over the tp ranks) where Marlin's fused
    MoE does; (0, None) where neither runs or the shapes are not priced."""
    linear = marlin_scale_bytes(model, tp) if runs_fp8_marlin(
        weight_dtype, engine, release, vendor, compute_capability, forced
    ) else 0  # fmt: skip
    routed = moe_marlin_scale_bytes(model, experts or ExpertLayout(tp)) if runs_fp8_marlin_moe(
        weight_dtype, engine, release, vendor, compute_capability
    ) else 0  # fmt: skip
    if linear + routed == 0:
        return 0, None
    parts = [f"linear layers +{linear / 2**30:.2f} GiB"] if linear else []
    parts += [f"routed experts (its fused MoE) +{routed / 2**30:.2f} GiB"] if routed else []
    shown = ", ".join(parts) if routed else f"+{linear / 2**30:.2f} GiB"
    return linear + routed, f"vLLM's FP8 Marlin kernel widens the block scales to per-128 group scales: {shown}"
