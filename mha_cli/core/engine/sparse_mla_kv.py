"""The layout vLLM stores a sparse-MLA model's cache in (DeepSeek-V3.2's lightning indexer beside the latent), by the
``--kv-cache-dtype`` spelled, the release and the GPU: fp8_ds_mla (656 B a layer), plain fp8 (576 B) or bf16 (1,152 B).

Read in the vLLM wheels 0.11.0-0.34.0 (every minor release; 0.11.1, 0.13, 0.15, 0.16, 0.18, 0.19, 0.25, 0.29 and 0.31
to date the changes; patch releases between not read):

- 0.11-0.17: ``DeepseekV32ForCausalLM.verify_and_update_config`` (``model_executor/models/config.py``) turns every
  ``fp8*`` spelling into ``fp8_ds_mla`` (0.11.0 ``auto`` too; not priced here: ``auto`` is the model's dtype).
- From 0.18 that rewrite is gone. The backend is chosen first, comparing the spelling literally with each backend's
  ``supported_kv_cache_dtypes`` (``v1/attention/backend.py`` ``supports_kv_cache_dtype``: ``fp8_e4m3`` is not ``fp8``),
  then ``FLASHMLA_SPARSE`` serves any fp8 as fp8_ds_mla and ``FLASHINFER_MLA_SPARSE_SM120`` serves auto, fp8 and
  fp8_e4m3 as fp8_ds_mla (``model_executor/layers/attention/mla_attention.py``, inline 0.18-0.23,
  ``_canonicalize_sparse_mla_kv_cache_dtype`` from 0.24); FlashInfer's SM90 and SM100 sparse backends and ROCm's AITER
  store plain fp8. The order (``platforms/cuda.py`` ``_get_backend_priorities``, ``platforms/rocm.py``):

  - Hopper (9.x): ``FLASHMLA_SPARSE`` takes ``fp8`` (fp8_ds_mla); ``fp8_e4m3`` only FlashInfer's SM90 backend, from
    0.30 (plain fp8; refused before); ``fp8_e5m2`` none.
  - Blackwell (10.x): with a quantized cache FlashInfer's sparse backend first from 0.19 (plain fp8 for ``fp8`` and
    ``fp8_e4m3``); in 0.18 first only at 16 heads a rank or fewer; ``fp8_e5m2`` none.
  - RTX Blackwell (12.x), from 0.24: ``FLASHINFER_MLA_SPARSE_SM120``, fp8_ds_mla for auto, bf16, fp8, fp8_e4m3;
    ``fp8_e5m2`` none. A bf16 cache is priced as asked, with a note (``rtx_blackwell_bf16_note``).
  - AMD: ``ROCM_AITER_MLA_SPARSE`` takes ``fp8`` and ``fp8_e4m3`` from 0.21 (plain fp8; 0.12-0.17 refuse an fp8
    cache outright, 0.11 any sparse attention); ``fp8_e5m2`` never as e5m2 (from 0.31 the model hands it the backend
    unchecked, and it stores e5m2 as e4m3).
  - Other GPUs (Ampere, Ada, 11.x, 12.x before 0.24): no sparse backend from 0.11.1 (0.11.0 returned FlashMLA's
    unchecked): the model does not start.

Where no backend takes the cache the format is kept as asked and ``vllm_sparse_mla_refusal`` says why: a note beside
``mha kv``'s figures, a refusal of ``mha plan`` (``core.engine.plan.kv_format_note``), as for a dense MLA model's e5m2.

mha writes ``--kv-cache-dtype fp8`` for an e4m3 cache however it was typed (``fp8_e4m3`` too: ``core.dtypes.kv_named``),
so ``fp8`` is the spelling priced; vLLM's literal ``fp8_e4m3`` would take FlashInfer's SM90 backend on Hopper from 0.30
(plain fp8) and be refused there in 0.18-0.29. ``fp8_e5m2`` is written as typed. The indexer's own cache is 132 B a
layer in every release and format (``core.kv``). Without a target the GPU is unknown: fp8 is priced fp8_ds_mla, as
0.11-0.17 store it on NVIDIA GPUs and SGLang does (``NSATokenToKVPool``). vLLM 0.18 on Blackwell chose by heads a
rank: priced at the deployment's tp where it has one (``mha kv --tp``), else at tp 1 (a plan's search: every layout
alike). Not modelled: a backend named by the user, a kernel package missing (the next backend in the order). Pure
Python.
"""

from __future__ import annotations

from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import Target

Release = tuple[int, int, int, int]
"""(major, minor, patch, post), as ``core.engine.flags`` orders releases."""

DS_MLA, PLAIN_FP8 = "fp8_ds_mla", "fp8"


def minor_release(version: tuple[int, int] | None) -> Release:
    """A (major, minor) release as the rules here compare it: that minor's latest patch (None: after every release)."""
    from mha_cli.core.engine.release_numbers import LATEST

    return (LATEST, 0, 0, 0) if version is None else (*version[:2], LATEST, 0)


def _vllm_named(release: Release) -> str:
    """``vLLM 0.25.x``, or ``the latest release of vLLM``, as a clause names the release."""
    from mha_cli.core.engine.flags import format_release

    shown = format_release(release)
    return f"vLLM {shown}" if shown[:1].isdigit() else f"{shown} of vLLM"


def _runs_sparse_mla(release: Release, target: Target) -> bool:
    """Whether some sparse-MLA backend of vLLM ``release`` runs on ``target``'s NVIDIA GPU (9.x and 10.x; 12.x from
    0.24; any from 0.11.0, whose selection returned FlashMLA's sparse backend unchecked)."""
    major = int(target.compute_capability or 0)
    return release < (0, 11, 1, 0) or major in (9, 10) or (major == 12 and release >= (0, 24, 0, 0))


def vllm_sparse_mla_gpu_refusal(release: Release, target: Target) -> str | None:
    """Why vLLM ``release`` cannot start a sparse-MLA model on ``target`` at all, whatever its cache (no sparse
    backend runs on the GPU: ``_runs_sparse_mla``); None where one does, or the vendor's rules were not read here."""
    if target.vendor != "NVIDIA" or _runs_sparse_mla(release, target):
        return None
    return (
        f"{_vllm_named(release)} has no sparse-MLA attention backend on {target.id} (compute capability {target.compute_capability})"
        " for this model's indexer: FlashMLA's and FlashInfer's sparse kernels run on 9.x and 10.x, FlashInfer's on"
        " 12.x from 0.24"
    )


def vllm_sparse_mla_refusal(kv_dtype: str, e5m2: bool, release: Release, target: Target) -> str | None:
    """Why vLLM ``release`` has no sparse-MLA attention backend on ``target`` for this cache (mha's ``kv_dtype``,
    ``e5m2`` its fp8 encoding), a clause for ``core.engine.plan.kv_format_note`` (a note beside ``mha kv``'s
    figures, a refusal of ``plan``'s); None where one takes it (the module docstring)."""
    vllm = _vllm_named(release)
    cache = "fp8_e5m2" if kv_dtype == "fp8" and e5m2 else kv_dtype
    if target.vendor == "AMD":
        if kv_dtype == "fp8" and e5m2:
            why = "ROCM_AITER_MLA_SPARSE lists fp8 and fp8_e4m3; from 0.31, handed the model directly, it stores e5m2 as e4m3"
        elif kv_dtype == "fp8" and release < (0, 21, 0, 0):
            why = "ROCM_AITER_MLA_SPARSE takes an fp8 cache from 0.21"
        else:
            return None
        return f"{vllm} has no sparse-MLA attention backend on {target.id} for this model's cache in {cache} ({why})"
    if target.vendor != "NVIDIA":
        return None
    where = f"{target.id} (compute capability {target.compute_capability})"
    if not _runs_sparse_mla(release, target):
        return vllm_sparse_mla_gpu_refusal(release, target)
    if kv_dtype == "fp8" and e5m2 and release >= (0, 18, 0, 0):
        return (
            f"{vllm} has no sparse-MLA attention backend on {where} for this model's cache in fp8_e5m2 (none lists it"
            " in supported_kv_cache_dtypes)"
        )
    return None


def vllm_sparse_mla_kv(
    kv_dtype: str | None, e5m2: bool, release: Release, target: Target, heads_per_rank: int
) -> str | None:
    """The KV format vLLM ``release`` stores a sparse-MLA model's cache in on ``target`` for mha's ``kv_dtype``
    (``fp8``, its encoding ``e5m2`` or e4m3; None: the model's dtype): ``fp8_ds_mla``, ``fp8``, or None where it
    keeps the format asked, as where no backend takes it (``vllm_sparse_mla_refusal`` says so: module docstring)."""
    fp8 = kv_dtype == "fp8"
    if not fp8 or vllm_sparse_mla_refusal(kv_dtype, e5m2, release, target) is not None:
        return None  # a bf16 cache on RTX Blackwell: said, not priced (``rtx_blackwell_bf16_note``)
    if target.vendor == "AMD":
        return PLAIN_FP8
    if release < (0, 18, 0, 0) or target.vendor != "NVIDIA":
        return DS_MLA  # the config rewrite; another vendor's not read: as 0.11-0.17 store it
    major = int(target.compute_capability or 0)
    if major == 12:  # FLASHINFER_MLA_SPARSE_SM120
        return DS_MLA
    if major == 10 and (release >= (0, 19, 0, 0) or heads_per_rank <= 16):
        return PLAIN_FP8  # FlashInfer's sparse backend first
    return DS_MLA  # FLASHMLA_SPARSE


def rtx_blackwell_bf16_note(model: ModelSpec, target: Target, release: Release, kv_dtype: str) -> str | None:
    """The plan's note where vLLM ``release`` stores a sparse-MLA ``model``'s bf16 cache as fp8_ds_mla on ``target``
    (RTX Blackwell from 0.24: FLASHINFER_MLA_SPARSE_SM120 serves ``auto`` so). Priced as asked (bf16): the same
    deployment gives the other engines' launch lines, which must not gain an fp8 cache no one asked for."""
    mla = model.attention.mla
    if mla is None or mla.indexer is None or kv_dtype not in ("bf16", "fp16") or target.vendor != "NVIDIA":
        return None
    if int(target.compute_capability or 0) != 12 or release < (0, 24, 0, 0):
        return None
    return (
        f"vLLM stores this sparse-MLA model's {kv_dtype} cache as fp8_ds_mla on {target.id} from 0.24"
        " (FLASHINFER_MLA_SPARSE_SM120 serves auto so: 656 B a layer, not the 1,152 priced): pass --kv-dtype fp8 to"
        " price what it allocates"
    )
