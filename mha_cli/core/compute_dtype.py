"""The dtype a linear layer's matmul multiplies in, from the format its weight is stored in.

One rule for every matrix of a step (``core.cost.work``) and for a whole-step profile (``core.cost.priors``):

- ``fp8``, ``fp8-block``: fp8 (W8A8: vLLM's ``Fp8LinearMethod`` and ModelOpt's FP8 quantise the activations on the
  fly and run an fp8 GEMM where the device has fp8 tensor cores; ``peak_matmul_flops`` falls back to bf16 where not);
- ``fp32``: fp32. vLLM 0.16.0's ``Worker.__init__`` (``v1/worker/gpu_worker.py``) sets
  ``torch.set_float32_matmul_precision(VLLM_FLOAT32_MATMUL_PRECISION)``, default ``"highest"``: no TF32, the
  non-tensor (SIMT) rate;
- anything else (bf16, fp16, and the weight-only formats int4, AWQ, GPTQ, int8, NF4, NVFP4, MXFP4, dequantised into
  bf16 GEMMs as mha has always priced them): bf16.

Pure Python.
"""

from typing import Literal

ComputeDtype = Literal["fp32", "bf16", "fp8"]


def compute_dtype(weight_format: str | None) -> ComputeDtype:
    """The dtype a matmul whose weight is stored in ``weight_format`` (a ``WeightFormatName``; None: unquantised,
    bf16) multiplies in."""
    if weight_format is not None and weight_format.startswith("fp8"):  # fp8, fp8-block
        return "fp8"
    if weight_format == "fp32":
        return "fp32"
    return "bf16"
