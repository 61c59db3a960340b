"""The dtype a linear layer's matmul multiplies in, from the format its weight is stored in, and where it runs at fp4.

One rule for every matrix of a step (``core.cost.work``) and for a whole-step profile (``core.cost.priors``):

- ``fp8``, ``fp8-block``: fp8 (W8A8: vLLM's ``Fp8LinearMethod`` and ModelOpt's FP8 quantise the activations on the
  fly and run an fp8 GEMM where the device has fp8 tensor cores; ``peak_matmul_flops`` falls back to bf16 where not);
- ``fp32``: fp32. vLLM 0.16.0's ``Worker.__init__`` (``v1/worker/gpu_worker.py``) sets
  ``torch.set_float32_matmul_precision(VLLM_FLOAT32_MATMUL_PRECISION)``, default ``"highest"``: no TF32, the
  non-tensor (SIMT) rate;
- ``nvfp4`` (ModelOpt, compressed-tensors W4A4): ``nvfp4``, fp4 x fp4 with an e4m3 scale per 16 where the kernel
  exists (``fp4_native``), else bf16. vLLM 0.16.0 and 0.19.1 (wheels, ``quantization/utils/nvfp4_utils.py``
  ``select_nvfp4_linear_backend``): FlashInfer's CUTLASS fp4 GEMM at compute capability 10.0 or more, else vLLM's
  ``cutlass_scaled_fp4_mm`` where ``cutlass_scaled_mm_supports_fp4`` (capability >= 100 and CUDA >= 12.8,
  ``csrc/quantization/fp4/nvfp4_scaled_mm_entry.cu``), both after ``scaled_fp4_quant`` of the activations
  (``apply_nvfp4_linear``); else Marlin (``is_fp4_marlin_supported``: capability 7.5 or more, W4A16, bf16 MMAs: Hopper,
  Ampere, Ada). The MoE alike (``fused_moe/oracle/nvfp4.py`` ``select_nvfp4_moe_backend``: FlashInfer TRT-LLM-gen,
  CuteDSL, CUTLASS, vLLM CUTLASS fp4 group GEMMs first, Marlin last);
- ``mxfp4-linear`` (AMD Quark W4A4): ``mxfp4-w4a4``, fp4 x fp4 with an e8m0 scale per 32 where the kernel exists, else
  bf16. vLLM 0.19.1 ``quark/schemes/quark_ocp_mx.py`` ``QuarkOCP_MX``: ``self.emulate = not
  current_platform.supports_mx()`` (``platforms/rocm.py`` 0.19.0: ``gfx95``, MI350X/MI355X; the CUDA platform
  inherits ``interface.py``'s False), else AITER's ``gemm_afp4wfp4`` after ``dynamic_mxfp4_quant``; emulation
  dequantises the weight and runs ``F.linear`` in bf16;
- anything else: bf16. The weight-only formats int4, AWQ, GPTQ, NF4, int8 are dequantised into bf16 MMAs (Marlin,
  Machete, bitsandbytes): W4A16/W8A16. ``int8`` also names compressed-tensors and Quark W8A8 int8 (vLLM 0.19.1
  ``CompressedTensorsW8A8Int8``, ``QuarkW8A8Int8``: int8 MMAs); the bytes are the rule's either way, but no target row
  states an int8 rate (``data/hardware_targets.csv`` has no such column): bf16 prices both, and the scheme's rule says
  which it is (``W8A8`` / ``W8A16`` in its description). gpt-oss's ``mxfp4`` experts: bf16. vLLM's default MXFP4 MoE
  kernels (``core.engine.mxfp4_moe``) take bf16 activations: FlashInfer TRT-LLM-gen ``SM100_FI_MXFP4_BF16`` on
  Blackwell (the MXFP8-activation variant is opt-in, ``VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8``, default ``"0"`` in
  0.19.0's ``envs.py``), triton_kernels ``matmul_ogs`` on Hopper (the weight upcast in the kernel), Marlin elsewhere;
- ``nvfp4-w4a16``: bf16. A compressed-tensors NVFP4 group without ``input_activations``: vLLM 0.19.1
  ``compressed_tensors.py`` ``_get_scheme_from_parts`` returns ``CompressedTensorsW4A16Fp4`` (``apply_fp4_marlin_linear``
  on bf16 activations) before it looks for W4A4 (``_is_nvfp4_format`` of both weights and inputs);
- ``mxfp4-w4a16``: bf16. compressed-tensors' MXFP4 (``_is_mxfp4`` of the weights alone, whatever the activations:
  ``CompressedTensorsW4A16Mxfp4``, Marlin, capability 8.0) and a Quark MXFP4 weight whose activations are not MXFP4
  (``QuarkOCP_MX.emulate`` when ``input_dtype != "mxfp4"``: a bf16 ``F.linear`` on every device).

A bf16 x fp4 GEMM is a bf16 MMA: Blackwell's ``tcgen05.mma`` (PTX ISA) multiplies fp4 only against fp4 at the fp4
rate (``.kind::mxf4nvf4``, ``.kind::mxf4``), and against fp8/fp6 at the fp8 rate (``.kind::mxf8f6f4``).

Where NVFP4 runs off Blackwell (vLLM 0.19.1 wheel; priced at bf16 there, ``fp4_native`` False):

- NVIDIA without fp4 tensor cores (L40S, 8.9; H20 and H100, 9.0; A100, 8.0): ``select_nvfp4_linear_backend`` falls to
  Marlin (``is_fp4_marlin_supported``: ``has_device_capability(75)``), W4A16 in bf16 MMAs; ``CompressedTensorsW4A4Fp4``
  and ``W4A16Fp4`` both ask capability 7.5 (``get_min_capability``);
- ROCm (MI300X, MI355X), by release (``core.engine.rocm_nvfp4``, which refuses what a release cannot serve): from
  0.20.0 ``RocmPlatform.supported_quantization`` lists ``modelopt_fp4`` and the only NVFP4 kernels are emulations
  (``EmulationNvFp4LinearKernel``, the MoE's ``EMULATION`` backend: weights dequantised into bf16 matmuls), for
  ModelOpt and compressed-tensors alike; 0.10.2-0.19.1 override a ModelOpt NVFP4 config to ``petit_nvfp4``
  (``petit.py``), W4A16 linear layers through the separate ``petit-kernel`` package, its experts left unquantised
  (refused); compressed-tensors NVFP4 selects Marlin there, which the ROCm build does not compile (refused). mha
  prices what runs at bf16 (not read: SGLang's ROCm NVFP4 path).

TensorRT-LLM's NVFP4 linear method quantises its activations to fp4 before ``nvfp4_gemm`` (``_torch/modules/linear.py``
as its unit tests patch ``_input_prepare``, returning fp4 activations and their scales); SGLang's is taken to do as
vLLM's (not read).

A checkpoint's scheme prices each module by its own rule (``core.weight_scheme.SchemeRule.compute``): a weight-only
rule (ModelOpt ``W4A16_NVFP4``, ``core.hf_quantization``) multiplies in bf16 whatever its format.

Pure Python.
"""

from typing import Literal

ComputeDtype = Literal["fp32", "bf16", "fp8", "nvfp4", "mxfp4-w4a4"]
"""What both operands of a matmul's MMA are: ``nvfp4`` e2m1 with an e4m3 scale per 16 values, ``mxfp4-w4a4`` e2m1
with an e8m0 scale per 32 (OCP MX; not gpt-oss's ``mxfp4`` experts, W4A16). Each maps to itself through
``compute_dtype`` (``core.cost.priors.dtype_matmul_curves`` prices a dtype by it)."""

FP4_KERNEL_VENDORS: dict[str, frozenset[str]] = {"nvfp4": frozenset({"NVIDIA"}), "mxfp4-w4a4": frozenset({"AMD"})}
"""The vendors whose engines run each fp4 compute dtype as an fp4 GEMM (the module docstring): NVFP4 through
FlashInfer's and vLLM's CUTLASS fp4 GEMMs on Blackwell (capability 10.x and 12.x, every NVIDIA row with an fp4
rate), MXFP4 linear layers through AITER on CDNA4 (``supports_mx``: gfx95). Elsewhere the format is dequantised into
bf16 MMAs (Marlin; Quark's emulation)."""


def compute_dtype(weight_format: str | None) -> ComputeDtype:
    """The dtype a matmul whose weight is stored in ``weight_format`` (a ``WeightFormatName``; None: unquantised,
    bf16) multiplies in where its kernel exists (``fp4_native`` says where an fp4 one does)."""
    if weight_format is not None and weight_format.startswith("fp8"):  # fp8, fp8-block
        return "fp8"
    if weight_format == "fp32":
        return "fp32"
    if weight_format == "nvfp4":
        return "nvfp4"
    if weight_format in ("mxfp4-linear", "mxfp4-w4a4"):
        return "mxfp4-w4a4"
    return "bf16"


def fp4_native(dtype: str, vendor: str, fp4_tflops_dense: float | None) -> bool:
    """Whether a matmul in ``dtype`` runs as an fp4 GEMM on a device of ``vendor`` whose dense fp4 rate is
    ``fp4_tflops_dense`` TFLOP/s (None: the device has no fp4 tensor cores): an fp4 dtype, a vendor whose engines
    issue its GEMM (``FP4_KERNEL_VENDORS``) and an fp4 rate."""
    return bool(fp4_tflops_dense) and vendor in FP4_KERNEL_VENDORS.get(dtype, frozenset())
