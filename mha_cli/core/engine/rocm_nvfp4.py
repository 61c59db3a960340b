"""Whether vLLM can serve an NVFP4 or ModelOpt checkpoint on an AMD GPU (ROCm), by release, read in the released
wheels.

ModelOpt FP8 (``quant_algo`` FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO: vLLM's ``modelopt`` method) and
MIXED_PRECISION (``modelopt_mixed``): ``RocmPlatform.supported_quantization`` lists neither in 0.10.2, 0.19.1, 0.20.0,
0.20.1 or 0.20.2 (0.20's list has ``modelopt_fp4`` alone) and both from 0.21.0, so ``Platform.verify_quantization``
refuses the checkpoint at start-up before 0.21.0 (trial 320 #1: a ModelOpt FP8 Llama was priced on an MI300X under
vLLM 0.10.0).

ModelOpt NVFP4 (``quant_method: modelopt``, ``quant_algo: NVFP4``):

- before 0.10.2: ``platforms/rocm.py`` ``RocmPlatform.supported_quantization`` lists neither ``modelopt`` nor
  ``modelopt_fp4`` (0.8.5, 0.10.0, 0.10.1), so ``Platform.verify_quantization`` refuses the checkpoint at start-up;
- 0.10.2-0.19.1: ``quantization/petit.py`` ``PetitNvFp4Config.override_quantization_method`` turns it into
  ``petit_nvfp4`` on ROCm, whose ``get_quant_method`` returns a method for ``LinearBase`` (W4A16 through the separate
  ``petit-kernel`` package) and for ``Attention``, and None for anything else. A ``FusedMoE`` layer given None takes
  ``UnquantizedFusedMoEMethod`` (``fused_moe/layer.py`` ``_get_quant_method``, 0.19.1): its experts are allocated
  as bf16 tensors, into which the checkpoint's packed fp4 bytes cannot load as fp4 (the model's loader skips their
  scales as ``ignore_suffixes``): an NVFP4 MoE is not served. A dense one is (W4A16, priced at bf16);
- from 0.20.0 (0.20.0, 0.21.0, 0.25.1, 0.32.0): ``petit.py`` is gone and ROCm lists ``modelopt_fp4``; its only NVFP4
  linear kernel is ``EmulationNvFp4LinearKernel`` (``kernels/linear/__init__.py`` ``_POSSIBLE_NVFP4_KERNELS``: the
  weight dequantised, a bf16 matmul) and its MoE falls to the ``EMULATION`` backend (``fused_moe/oracle/nvfp4.py``:
  ``Nvfp4QuantizationEmulationTritonExperts`` dequantises the experts each forward into bf16 Triton experts). Served,
  in bf16 (the dequantisation's own time is not priced).

compressed-tensors NVFP4 (W4A4 and W4A16): before 0.20.0 its linear layers run Marlin on ROCm. 0.10.2's
``CompressedTensorsW4A4Fp4`` needs ``cutlass_fp4_supported`` (False off CUDA) and falls to ``CompressedTensorsW4A16Fp4``
(Marlin, capability 8.0, which ROCm's 9.4 and 9.5 pass); 0.19.1's ``select_nvfp4_linear_backend`` picks Marlin by
``is_fp4_marlin_supported`` (capability 7.5), its MoE oracle has no emulation backend. vLLM's ``CMakeLists.txt``
compiles the Marlin sources only inside ``if(VLLM_GPU_LANG STREQUAL "CUDA")`` (read at vllm-project/vllm 000a1ee):
the ROCm build has no Marlin kernel, so the checkpoint does not run. From 0.20.0 both take the emulation kernels
above.

NVFP4 typed as a format (``--weight-dtype nvfp4``, no checkpoint read) is read as a ModelOpt NVFP4 checkpoint, the
format's own (``typed_nvfp4_refusal``).
"""

from mha_cli.core.engine.release_numbers import release_key
from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.weight_bytes import stored_matrices, stored_scheme
from mha_cli.core.weight_scheme import WeightScheme

PETIT_FROM = (0, 10, 2, 0)
"""The first vLLM that turns a ModelOpt NVFP4 config into ``petit_nvfp4`` on ROCm."""
EMULATION_FROM = (0, 20, 0, 0)
"""The first vLLM that runs NVFP4 on ROCm through its emulation kernels (linear and MoE)."""
NVFP4_FORMATS = ("nvfp4", "nvfp4-w4a16")
EMULATED = (
    "--engine vllm@0.20.0: NVFP4 emulated in bf16, whose memory `mha kv` prices and whose step `mha plan` does not"
)
"""What vLLM from 0.20 does with NVFP4 on ROCm, as a refusal's way out says it (review 408 #6: the way out led into
plan's refusal of the emulated step)."""
PETIT_W4A16 = "--engine vllm@0.19: petit's W4A16 kernel on a dense model, priced"
MODELOPT_LISTED_FROM = (0, 21, 0, 0)
"""The first vLLM whose ROCm platform lists ModelOpt's FP8 and mixed-precision methods."""


def rocm_modelopt_refusal(scheme: WeightScheme | None, release: str | None) -> str | None:
    """Why vLLM ``release`` (None: the latest) cannot load a ModelOpt checkpoint that is not one NVFP4 algorithm on
    every layer (FP8, or MIXED_PRECISION: module docstring) on ROCm; None when it can, or when the checkpoint is
    another one (NVFP4: ``rocm_nvfp4_refusal``)."""
    if scheme is None or release is None or scheme.method != "modelopt":
        return None
    # one algorithm on every linear layer reads as one rule targeting them all; MIXED_PRECISION names its modules
    one_algorithm = len(scheme.rules) == 1 and scheme.rules[0].targets == ["Linear"]
    if (one_algorithm and scheme.rules[0].format in NVFP4_FORMATS) or release_key(release) >= MODELOPT_LISTED_FROM:
        return None
    kind = "FP8" if one_algorithm else "MIXED_PRECISION"
    return (
        f"vLLM {release} does not list ModelOpt {kind} on ROCm (RocmPlatform.supported_quantization has it from"
        " 0.21.0): use --engine vllm@0.21.0 or later, or a checkpoint in fp8 or compressed-tensors FP8"
    )


def rocm_nvfp4_refusal(scheme: WeightScheme | None, nvfp4_experts: bool, release: str | None) -> str | None:
    """Why vLLM ``release`` (as typed, or a generation's last as ``0.19``; None: the latest) cannot serve the
    checkpoint's ``scheme`` on an AMD GPU (module docstring), in one line with what to do; None when it can.
    ``nvfp4_experts``: the routed experts are stored in NVFP4."""
    if scheme is None or release is None or not any(rule.format in NVFP4_FORMATS for rule in scheme.rules):
        return None
    key = release_key(release)
    if key >= EMULATION_FROM:
        return None
    fix = f"use vLLM 0.20 or later ({EMULATED}) or a bf16, FP8 or MXFP4 checkpoint"
    if scheme.method == "compressed-tensors":
        return (
            f"vLLM {release} runs compressed-tensors NVFP4 through Marlin, whose kernels its ROCm build does not"
            f" compile: {fix}"
        )
    if scheme.method != "modelopt":
        return None
    if key < PETIT_FROM:
        return f"vLLM {release} does not support ModelOpt quantization on ROCm (RocmPlatform.supported_quantization): {fix}"
    if nvfp4_experts:
        return (
            f"vLLM {release} serves ModelOpt NVFP4 on ROCm as petit_nvfp4, which quantises linear layers only: the"
            f" fp4 experts of this MoE do not load (UnquantizedFusedMoEMethod): {fix}"
        )
    return None


def refuse_rocm_nvfp4(
    model: ModelSpec, deployment: DeploymentSpec | None, weight_dtype: str, *, engine: str, vendor: str,
    release: str | None,
) -> None:  # fmt: skip
    """Raises ``BadInputError`` (``rocm_nvfp4_refusal``) when vLLM ``release`` cannot serve the checkpoint's NVFP4
    scheme on a GPU of ``vendor`` (AMD only)."""
    if engine != "vllm" or vendor != "AMD":
        return
    scheme = stored_scheme(deployment, weight_dtype)
    if scheme is None and weight_dtype in NVFP4_FORMATS:  # a format typed: read as ModelOpt's, NVFP4's own checkpoint
        refusal = typed_nvfp4_refusal(model.block.moe is not None, release)
        if refusal is not None:
            raise BadInputError(refusal)
        return
    if scheme is None:
        return
    refusal = rocm_modelopt_refusal(scheme, release)
    if refusal is not None:
        raise BadInputError(refusal)
    matrices = stored_matrices(model, 1, weight_dtype, scheme).matrices if model.block.moe is not None else {}
    experts = any(key[0] == "expert" and dtype == "nvfp4" for key, dtype in matrices)
    refusal = rocm_nvfp4_refusal(scheme, experts, release)
    if refusal is not None:
        raise BadInputError(refusal)


def typed_nvfp4_refusal(moe: bool, release: str | None) -> str | None:
    """Why vLLM ``release`` (None: the latest) cannot serve NVFP4 weights typed as a format (``--weight-dtype
    nvfp4``, no checkpoint read) on ROCm, read as a ModelOpt NVFP4 checkpoint (the format's own; a compressed-tensors
    one fares no better before 0.20: Marlin, not in the ROCm build); ``moe``: the model's experts are NVFP4 too.
    Trial 402 #4: vllm@0.10 on an MI300X priced and launched them without a word."""
    if release is None or release_key(release) >= EMULATION_FROM:
        return None
    # review 403 #8, 405 #7: no MXFP4 offered (the experts' alone on a dense model; emulated off CDNA4, refused)
    fix = f"use vLLM 0.20 or later ({EMULATED}) or bf16 or fp8 weights"
    if release_key(release) < PETIT_FROM:
        petit = "" if moe else f"use vLLM 0.10.2 to 0.19 ({PETIT_W4A16}), or "  # review 408 #6: priced there
        return (
            f"vLLM {release} does not run NVFP4 on ROCm (RocmPlatform.supported_quantization lists no ModelOpt method,"
            f" and its ROCm build has no Marlin kernel): {petit}{fix.removeprefix('use ') if petit else fix}"
        )
    if moe:
        return (
            f"vLLM {release} serves NVFP4 on ROCm as petit_nvfp4, which quantises linear layers only: the fp4 experts"
            f" of this MoE do not load (UnquantizedFusedMoEMethod): {fix}"
        )
    return None
