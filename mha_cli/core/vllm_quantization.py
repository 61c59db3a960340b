"""vLLM's ``--quantization`` methods, read as the weight formats mha prices, and the rest refused by name.

vLLM's methods are the ``QuantizationMethods`` of ``vllm/model_executor/layers/quantization/__init__.py`` (vLLM 0.9),
with ``mxfp4`` (gpt-oss) and 0.20-0.34's names added since. Those that name a format priced here are its names or
aliases already (``core.weight_formats``): fp8 and fp8_per_tensor (vLLM's online fp8, one scale per tensor),
fp8_per_block, awq and auto_awq, gptq and auto_gptq (4-bit, group 128), mxfp4, modelopt_fp4 (NVFP4). The
Marlin methods are vLLM's kernels for AWQ and GPTQ checkpoints, chosen by vLLM itself; their repacked bytes are not
priced, so they are refused with the checkpoint's format named instead. Every other method is refused in one line
that says it is vLLM's and not priced, rather than "unknown weight format".
"""

from mha_cli.core.errors import BadInputError

MARLIN = {"awq_marlin": "awq", "gptq_marlin": "gptq", "gptq_marlin_24": "gptq", "marlin": "gptq"}
"""vLLM's Marlin kernels -> the checkpoint format they run."""
AUTO_KERNELS = {"auto_awq": "awq", "auto_gptq": "gptq"}
"""vLLM's methods that run a checkpoint's own AWQ or GPTQ method with vLLM's kernel choice (``auto_gptq`` from
0.22.0, absent from 0.21.0; ``auto_awq`` from 0.24.0, absent from 0.22.0: ``QuantizationMethods`` in the wheels), taken
by a checkpoint of that method. With ``fp8_per_tensor`` and ``fp8_per_block`` (online fp8, one scale per tensor or
per 128 x 128 block, ``config/quantization.py``, from 0.20.0, absent from 0.19.0) they are vLLM's later names for
formats priced here: ``core.weight_formats`` aliases (trial 368 #5)."""
NOT_PRICED = frozenset(
    {"aqlm", "deepspeedfp", "tpu_int8", "ptpc_fp8", "fbgemm_fp8", "deepgemm_fp8", "modelopt",
     "bitblas", "gguf", "gptq_bitblas", "compressed-tensors", "bitsandbytes", "qqq", "hqq", "experts_int8",
     "neuron_quant", "ipex", "quark", "moe_wna16", "torchao", "auto-round",
     # vLLM 0.20-0.34's online shorthands and methods beside them (QuantizationMethods, 0.34.0): per-channel fp8,
     # int8 weight-only experts, NVFP4 with per-token activations, MXFP8, LUT, Hadamard-rotated MXFP4, ...
     "fp8_per_channel", "int8_per_channel_weight_only", "nvfp4_per_token", "mxfp8", "lut_b_moe",
     "mxfp4_hadamard32", "w4afp8", "humming", "inc", "online", "deepseek_v4_fp8",
     "fp_quant", "cpu_awq", "petit_nvfp4", "rtn"}  # review 370 #9: rtn in 0.11.0, the others in 0.15-0.33
)  # fmt: skip
"""vLLM methods whose bytes no format here prices (per-channel or per-token fp8, GGUF, ...), given as a flag: a
checkpoint's own ``quantization_config`` (compressed-tensors, ModelOpt, Quark) is read tensor by tensor instead."""
PRICED = ("fp8", "fp8_per_tensor", "fp8_per_block", "awq", "auto_awq", "gptq", "auto_gptq", "mxfp4", "modelopt_fp4")
READ_FROM_CONFIG = frozenset(
    {"compressed-tensors", "modelopt", "quark", "modelopt_mxfp8", "modelopt_mixed", "gpt_oss_mxfp4"}
)
"""Methods whose checkpoints ``core.hf_quantization`` reads layer by layer from their ``quantization_config`` (and
vLLM's names for what it overrides such a checkpoint's method to: ModelOpt's by ``quant_algo``, gpt-oss's MXFP4)."""


def vllm_quantization_refusal(name: str) -> str | None:
    """The one line refusing ``name`` when it is a vLLM ``--quantization`` method mha does not price; else None."""
    key = str(name).strip().lower()
    if key in MARLIN:
        return (
            f"{key} is vLLM's Marlin kernel for {MARLIN[key]} checkpoints (its repacked bytes are not priced): give"
            f" {MARLIN[key]}, vLLM picks the kernel itself"
        )
    if key in READ_FROM_CONFIG:
        return (
            f"{key} checkpoints are priced from their own quantization_config, tensor by tensor: give the model's"
            " folder or config.json instead of this flag"
        )
    if key in NOT_PRICED:
        return (
            f"{key} is a vLLM quantization mha does not price; of vLLM's it prices {', '.join(PRICED)} (and int8,"
            " int4, nf4, fp8-block)"
        )
    return None


class PastedQuantization(str):
    """A weight format typed as vLLM's ``--quantization METHOD`` (pasted from a launch line): where the checkpoint is
    quantised, vLLM reads METHOD as the checkpoint's own method, not as a format to price (``pasted_format``)."""

    __slots__ = ()


FORMAT_METHODS = {
    "fp8": "fp8", "fp8-block": "fp8", "awq": "awq", "gptq-int4": "gptq", "mxfp4": "mxfp4", "nvfp4": "modelopt_fp4",
    "nf4": "bitsandbytes", "nf4-dq": "bitsandbytes",
}  # fmt: skip
"""A checkpoint format read without a scheme (a preset, or a named format's loader) -> vLLM's ``quant_method`` for it."""


def checkpoint_method(checkpoint_format: str | None, scheme_method: str | None) -> str | None:
    """vLLM's ``quant_method`` of a checkpoint: its scheme's, else its format's loader's; None: not quantised."""
    if checkpoint_format is None:
        return None
    return scheme_method if scheme_method is not None else FORMAT_METHODS.get(checkpoint_format)


def checkpoint_methods(checkpoint_format: str | None, scheme_method: str | None) -> frozenset[str]:
    """vLLM's ``--quantization`` names that mean a checkpoint's own method: its scheme's ``quant_method``, else its
    format's loader, and the kernels vLLM runs that method with (``gptq_marlin``, ``awq_marlin``, ``moe_wna16``:
    their ``override_quantization_method`` takes such a checkpoint, 0.21.0); empty: not quantised."""
    method = checkpoint_method(checkpoint_format, scheme_method)
    if method is None:
        return frozenset()
    kernels = {name for name, runs in {**MARLIN, **AUTO_KERNELS}.items() if runs == method and name != "marlin"}
    if method in ("gptq", "awq"):
        kernels.add("moe_wna16")
    return frozenset({method, *kernels})


def overrides_any_method(checkpoint_format: str | None, scheme_method: str | None, family: str | None) -> bool:
    """Whether vLLM runs the checkpoint as stored whatever ``--quantization`` says: its override for the checkpoint
    ignores the value typed (0.21.0: ModelOpt's configs by ``quant_algo``, ``modelopt.py``; gpt-oss's MXFP4,
    ``GptOssMxfp4Config`` in ``mxfp4.py``), so ``_verify_quantization`` takes the override and never compares."""
    return scheme_method == "modelopt" or (
        checkpoint_format == "mxfp4" and scheme_method is None and family == "gpt_oss"
    )


def pasted_format(
    method: str, checkpoint_format: str | None, scheme_method: str | None, family: str | None = None
) -> str | None:
    """What vLLM's ``--quantization METHOD`` prices on a checkpoint: None (the checkpoint as stored) where METHOD is
    the checkpoint's own method or a kernel of it, or vLLM overrides any value for it (``overrides_any_method``); on a
    checkpoint quantised otherwise, refused, as vLLM refuses to start (``ModelConfig._verify_quantization``, 0.21.0);
    on an unquantised one, METHOD as a format (or its refusal)."""
    key = method.strip().lower()
    own = checkpoint_methods(checkpoint_format, scheme_method)
    if key in own or overrides_any_method(checkpoint_format, scheme_method, family):
        return None
    if own:
        raise BadInputError(
            f"--quantization {method}: the checkpoint's quantization_config says"
            f" {checkpoint_method(checkpoint_format, scheme_method)}, and vLLM"
            " refuses to start on another method ('Quantization method specified in the model config ... does not"
            " match', ModelConfig._verify_quantization): leave the flag out, or price another format with"
            " --weight-dtype"
        )
    if (refusal := vllm_quantization_refusal(key)) is not None:
        raise BadInputError(f"--quantization: {refusal}")
    return str(method)
