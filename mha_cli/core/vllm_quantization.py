"""vLLM's ``--quantization`` methods, read as the weight formats mha prices, and the rest refused by name.

vLLM's methods are the ``QuantizationMethods`` of ``vllm/model_executor/layers/quantization/__init__.py`` (vLLM 0.9),
with ``mxfp4`` (gpt-oss) added since. Those that name a format priced here are its names or aliases already
(``core.weight_formats``): fp8 (vLLM's online fp8, one scale per tensor), awq, gptq (4-bit, group 128), mxfp4,
modelopt_fp4 (NVFP4). The
Marlin methods are vLLM's kernels for AWQ and GPTQ checkpoints, chosen by vLLM itself; their repacked bytes are not
priced, so they are refused with the checkpoint's format named instead. Every other method is refused in one line
that says it is vLLM's and not priced, rather than "unknown weight format".
"""

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
