"""vLLM's ``--quantization`` methods, read as the weight formats mha prices, and the rest refused by name.

vLLM's methods are the ``QuantizationMethods`` of ``vllm/model_executor/layers/quantization/__init__.py`` (vLLM 0.9),
with ``mxfp4`` (gpt-oss) added since. Those that name a format priced here are its names or aliases already
(``core.weight_formats``): fp8 (vLLM's online fp8, one scale per tensor), awq, gptq (4-bit, group 128), mxfp4,
modelopt_fp4 (NVFP4). The
Marlin methods are vLLM's kernels for AWQ and GPTQ checkpoints, chosen by vLLM itself; their repacked bytes are not
priced, so they are refused with the checkpoint's format named instead. Every other method is refused in one line
that says it is vLLM's and not priced, rather than "unknown weight format".
"""

from mha_cli.core.errors import BadInputError

MARLIN = {"awq_marlin": "awq", "gptq_marlin": "gptq", "gptq_marlin_24": "gptq", "marlin": "gptq"}
"""vLLM's Marlin kernels -> the checkpoint format they run."""
NOT_PRICED = frozenset(
    {"aqlm", "deepspeedfp", "tpu_int8", "ptpc_fp8", "fbgemm_fp8", "deepgemm_fp8", "modelopt",
     "bitblas", "gguf", "gptq_bitblas", "compressed-tensors", "bitsandbytes", "qqq", "hqq", "experts_int8",
     "neuron_quant", "ipex", "quark", "moe_wna16", "torchao", "auto-round"}
)  # fmt: skip
"""vLLM methods whose bytes no format here prices (per-channel or per-token fp8, GGUF, ...), given as a flag: a
checkpoint's own ``quantization_config`` (compressed-tensors, ModelOpt, Quark) is read tensor by tensor instead."""
PRICED = ("fp8", "awq", "gptq", "mxfp4", "modelopt_fp4")
READ_FROM_CONFIG = frozenset({"compressed-tensors", "modelopt", "quark"})
"""Methods whose checkpoints ``core.hf_quantization`` reads layer by layer from their ``quantization_config``."""


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
    "fp8": "fp8",
    "fp8-block": "fp8",
    "awq": "awq",
    "gptq-int4": "gptq",
    "mxfp4": "mxfp4",
    "nvfp4": "modelopt_fp4",
}
"""A checkpoint format read without a scheme (a preset, or a named format's loader) -> vLLM's ``quant_method`` for it."""


def checkpoint_methods(checkpoint_format: str | None, scheme_method: str | None) -> frozenset[str]:
    """vLLM's ``--quantization`` names that mean a checkpoint's own method: its scheme's ``quant_method`` (ModelOpt's
    NVFP4 also ``modelopt_fp4``, the method vLLM overrides it to), else its format's loader; empty: not quantised."""
    if checkpoint_format is None:
        return frozenset()
    if scheme_method is not None:
        extra = {"modelopt_fp4"} if scheme_method == "modelopt" and checkpoint_format.startswith("nvfp4") else set()
        return frozenset({scheme_method, *extra})
    method = FORMAT_METHODS.get(checkpoint_format)
    return frozenset() if method is None else frozenset({method})


def pasted_format(method: str, checkpoint_format: str | None, scheme_method: str | None) -> str | None:
    """What vLLM's ``--quantization METHOD`` prices on a checkpoint: None (the checkpoint as stored) where METHOD is
    the checkpoint's own method; on a checkpoint quantised otherwise, refused, as vLLM refuses to start (both in
    ``ModelConfig._verify_quantization``, 0.21.0); on an unquantised one, METHOD as a format (or its refusal)."""
    key = method.strip().lower()
    own = checkpoint_methods(checkpoint_format, scheme_method)
    if key in own:
        return None
    if own and key not in MARLIN:  # a Marlin name is vLLM's kernel for the checkpoint's own method: said below
        raise BadInputError(
            f"--quantization {method}: the checkpoint's quantization_config says {' or '.join(sorted(own))}, and vLLM"
            " refuses to start on another method ('Quantization method specified in the model config ... does not"
            " match', ModelConfig._verify_quantization): leave the flag out, or price another format with"
            " --weight-dtype"
        )
    if (refusal := vllm_quantization_refusal(key)) is not None:
        raise BadInputError(f"--quantization: {refusal}")
    return str(method)
