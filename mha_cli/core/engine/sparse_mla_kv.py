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
  - AMD: ``ROCM_AITER_MLA_SPARSE`` takes ``fp8`` and ``fp8_e4m3`` from 0.21 (plain fp8), ``fp8_e5m2`` from 0.31 (the
    backend is passed directly, unchecked).

mha writes ``--kv-cache-dtype fp8`` for an e4m3 cache however it was typed (``fp8_e4m3`` too: ``core.dtypes.kv_named``),
so ``fp8`` is the spelling priced; vLLM's literal ``fp8_e4m3`` would take FlashInfer's SM90 backend on Hopper from 0.30
(plain fp8) and be refused there in 0.18-0.29. ``fp8_e5m2`` is written as typed. The indexer's own cache is 132 B a
layer in every release and format (``core.kv``). Without a target the GPU is unknown: fp8 is priced fp8_ds_mla, as
0.11-0.17 store it on any GPU and SGLang does (``NSATokenToKVPool``). Not modelled: a backend named by the user, a
kernel package missing (the next backend in the order), the GPUs no sparse backend runs on (Ampere, Ada). Pure Python.
"""

from __future__ import annotations

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import Target

Release = tuple[int, int, int, int]
"""(major, minor, patch, post), as ``core.engine.flags`` orders releases."""

DS_MLA, PLAIN_FP8 = "fp8_ds_mla", "fp8"


def vllm_sparse_mla_kv(
    kv_dtype: str | None, e5m2: bool, release: Release, target: Target, heads_per_rank: int
) -> str | None:
    """The KV format vLLM ``release`` stores a sparse-MLA model's cache in on ``target`` for mha's ``kv_dtype``
    (``fp8``, its encoding ``e5m2`` or e4m3; None: the model's dtype): ``fp8_ds_mla``, ``fp8``, or None where it
    keeps the format asked. ``BadInputError`` where no sparse backend of that release takes it (module docstring)."""
    fp8 = kv_dtype == "fp8"
    spelled = "fp8_e5m2" if fp8 and e5m2 else kv_dtype
    if release < (0, 18, 0, 0):
        return DS_MLA if fp8 else None
    if target.vendor == "AMD":
        if fp8 and release < ((0, 31, 0, 0) if e5m2 else (0, 21, 0, 0)):
            _refuse(spelled, release, target, "ROCM_AITER_MLA_SPARSE takes fp8 from 0.21, fp8_e5m2 from 0.31")
        return PLAIN_FP8 if fp8 else None
    major = int(target.compute_capability or 0)
    if target.vendor != "NVIDIA" or major not in (9, 10, 12) or (major == 12 and release < (0, 24, 0, 0)):
        return DS_MLA if fp8 else None  # no sparse backend read runs there: the cache as 0.11-0.17 store it
    if fp8 and e5m2:
        _refuse(spelled, release, target, "no sparse-MLA backend lists fp8_e5m2")
    if not fp8:  # a bf16 cache on RTX Blackwell: said, not priced (``rtx_blackwell_bf16_note``)
        return None
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


def _refuse(spelled: str | None, release: Release, target: Target, why: str) -> None:
    from mha_cli.core.engine.flags import format_release

    where = target.id if target.vendor != "NVIDIA" else f"{target.id} (compute capability {target.compute_capability})"
    fp8_runs = target.vendor == "NVIDIA" or release >= (0, 21, 0, 0)
    fix = "use --kv-dtype fp8" if spelled == "fp8_e5m2" and fp8_runs else "leave --kv-dtype out (bf16)"
    shown = format_release(release)
    vllm = f"vLLM {shown}" if shown[:1].isdigit() else f"{shown} of vLLM"
    raise BadInputError(
        f"--kv-dtype {spelled}: {vllm} has no sparse-MLA attention backend on {where} for this model's cache in"
        f" {spelled} ({why}: supported_kv_cache_dtypes); {fix}"
    )
