"""The engine's knobs, resolved: what the user set, else the engine's own default for this device.

Every default is the engine's (read in its source, version named) and every measured constant names the public
logs it comes from. Pure Python.
"""

from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, EngineName
from mha_cli.core.suggest import did_you_mean
from mha_cli.core.targets import Target

GIB = 2**30
MIB = 2**20

ENGINE_ALIASES: dict[str, EngineName] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "trtllm": "trtllm",
    "trt-llm": "trtllm",
    "tensorrt-llm": "trtllm",
    "tensorrt_llm": "trtllm",
}

VLLM_UTILISATION = 0.90
"""vLLM ``CacheConfig.gpu_memory_utilization`` default (``vllm/config/cache.py``)."""
TRTLLM_FRACTION = 0.90
"""TensorRT-LLM ``KvCacheConfig.free_gpu_memory_fraction`` default (``kDefaultGpuMemFraction = 0.9F``)."""
VLLM_BLOCK = 16
"""vLLM's block size on CUDA when none is given (``platforms/cuda.py``)."""
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128)
"""Block sizes vLLM's ``--block-size`` accepts on CUDA."""
SGLANG_PAGE = 1
"""SGLang's default ``page_size``."""
TRTLLM_BLOCK = 32
"""TensorRT-LLM's ``tokens_per_block`` default (32 in current releases, 64 in old ones)."""

NON_TORCH_ONE_RANK = round(0.25 * GIB)
"""vLLM's "non-torch forward increase memory" on one GPU: 0.24-0.26 GiB in every published v0.19 log of one
rank (H100, Llama/Qwen/Gemma/Phi/DeepSeek; ``tests/fixtures/vllm_logs.yaml``): CUDA context growth, cuBLAS
workspaces."""
NON_TORCH_TENSOR_PARALLEL = round(2.1 * GIB)
"""The same at tp > 1: 2.06-2.21 GiB in the published v0.19 logs at tp 2 and 4 (NCCL and custom all-reduce
buffers). vLLM 0.11 takes its memory snapshot after NCCL starts and so charges less of it."""
CUDA_GRAPH_ESTIMATE = 1 * GIB
"""CUDA-graph memory of vLLM's default capture sizes: 0.65-1.66 GiB in the published v0.19 logs ("Graph capturing
finished ... took X GiB"). Up to v0.20 it is taken after the KV pool, from the (1 - utilisation) headroom."""


def engine_name(name: str | None) -> EngineName:
    """``vllm``, ``sglang`` or ``trtllm`` from what a person types (``TensorRT-LLM``); None: vllm."""
    if name is None:
        return "vllm"
    key = str(name).strip().lower()
    if key in ENGINE_ALIASES:
        return ENGINE_ALIASES[key]
    raise BadInputError(
        f"unknown engine {name!r}: {did_you_mean(key, list(ENGINE_ALIASES), otherwise='use vllm, sglang or trtllm')}"
    )


class EngineSettings(Record):
    """The knobs one engine run uses, each resolved to a number, with where the number came from."""

    engine: EngineName
    utilisation: float
    """vLLM gpu_memory_utilization, SGLang mem_fraction_static, TRT-LLM free_gpu_memory_fraction."""
    utilisation_source: str
    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    """Tokens per KV block (vLLM block_size, SGLang page_size, TRT-LLM tokens_per_block)."""
    defaults_note: str
    """Which of the engine's defaults applied and why (device size, usage context)."""
    kv_cache_bytes: int | None = None
    """vLLM: the KV pool set outright (``--kv-cache-memory-bytes``, ``VLLM_CPU_KVCACHE_SPACE``); None: derived."""
    limit_mm_per_prompt: dict[str, int] | None = None
    """vLLM: the most items of each modality per prompt (``--limit-mm-per-prompt``); None: vLLM's 999 each."""


VLLM_CPU_BLOCK = 128
"""vLLM's block size on its CPU backend when none is given (``platforms/cpu.py``, 0.32; 16 for MLA)."""


def _vllm_step_defaults(target: Target) -> tuple[int, int, str]:
    """vLLM V1's ``vllm serve`` defaults (``engine/arg_utils.py`` ``_set_default_args``, 0.10-0.11): 8,192 batched
    tokens and 1,024 sequences on a GPU of 70 GiB or more that is not an A100, else 2,048 and 256; on its CPU
    backend 2,048 and 128 (per rank; 0.32)."""
    if target.vendor == "CPU":
        return 2048, 128, "max_num_batched_tokens 2048, max_num_seqs 128: vllm serve's defaults on its CPU backend"
    big = target.device_memory_bytes >= 70 * GIB and not target.id.startswith("a100")
    if big:
        return 8192, 1024, "max_num_batched_tokens 8192, max_num_seqs 1024: vllm serve's defaults on a GPU of >= 70 GiB"
    return 2048, 256, "max_num_batched_tokens 2048, max_num_seqs 256: vllm serve's defaults on an A100 or a smaller GPU"


def sglang_default_fraction(target: Target, tp: int, chunked_prefill: int, cuda_graph_bs: int) -> float:
    """SGLang's ``mem_fraction_static`` default (``server_args._handle_gpu_memory_settings``, 0.5.3): the share
    of the GPU's MiB left after a reserve of 512 MiB + 1.5 x max(chunked prefill, 2048) + 2 x the CUDA-graph
    batch + tp / 8 x 1024 MiB, at least 10 GiB on a GPU over 60 GiB, rounded to 3 decimals. SGLang reads the GPU's
    MiB from nvidia-smi, 0.3-0.6 GiB above torch's total used here: the fraction can differ in the third decimal."""
    gpu_mib = target.device_memory_bytes / MIB
    reserved = 512 + max(chunked_prefill, 2048) * 1.5 + cuda_graph_bs * 2 + tp / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mib - reserved) / gpu_mib, 3)


def _sglang_step_defaults(target: Target, tp: int) -> tuple[int, int]:
    """SGLang's (chunked_prefill_size, cuda_graph_max_bs) by GPU memory (``server_args``, 0.5.3)."""
    gib = target.device_memory_bytes / GIB
    small_tp = tp < 4
    if gib < 20:
        return 2048, 8
    if gib < 35:
        return 2048, 16 if small_tp else 80
    if gib < 60:
        return 4096, 32 if small_tp else 160
    if gib < 160:
        return 8192, 256 if small_tp else 512
    return 16384, 512


def resolve_settings(deployment: DeploymentSpec, target: Target, tp: int) -> EngineSettings:
    """The deployment's engine knobs, the engine's defaults where unset."""
    engine = engine_name(deployment.engine)
    util = deployment.gpu_memory_utilization
    if target.vendor == "CPU" and engine != "vllm":
        raise BadInputError(f"the cpu target is vLLM's CPU backend: {engine} is not modelled there; use --engine vllm")
    if deployment.kv_cache_memory_bytes is not None and engine != "vllm":
        raise BadInputError("--kv-cache-gib sets vLLM's pool (--kv-cache-memory-bytes): use it with --engine vllm")
    if engine == "vllm":
        tokens, seqs, note = _vllm_step_defaults(target)
        tokens = deployment.max_num_batched_tokens or tokens
        if deployment.max_num_seqs is not None and deployment.max_num_seqs > tokens:
            raise BadInputError(
                f"--max-num-seqs ({deployment.max_num_seqs}) must not exceed --max-num-batched-tokens ({tokens}):"
                " vLLM refuses it; lower one or raise the other"
            )
        cpu = target.vendor == "CPU"
        if deployment.block_size is not None and deployment.block_size not in VLLM_BLOCK_SIZES and not cpu:
            raise BadInputError(
                f"--block-size {deployment.block_size} is not one vLLM offers on CUDA:"
                f" use one of {', '.join(map(str, VLLM_BLOCK_SIZES))}"
            )
        seqs = min(deployment.max_num_seqs or seqs, tokens)
        return EngineSettings(
            engine=engine, utilisation=util or VLLM_UTILISATION,
            utilisation_source="--gpu-memory-utilization" if util else "vLLM's default",
            max_num_batched_tokens=tokens, max_num_seqs=seqs,
            block_size=deployment.block_size or (VLLM_CPU_BLOCK if cpu else VLLM_BLOCK), defaults_note=note,
            kv_cache_bytes=deployment.kv_cache_memory_bytes, limit_mm_per_prompt=deployment.limit_mm_per_prompt,
        )  # fmt: skip
    if engine == "sglang":
        chunked, graph_bs = _sglang_step_defaults(target, tp)
        chunked = deployment.max_num_batched_tokens or chunked
        fraction = util or sglang_default_fraction(target, tp, chunked, graph_bs)
        if fraction <= 0:
            raise BadInputError(
                f"SGLang's reserve for a {chunked}-token chunked prefill leaves nothing of {target.torch_memory_gib:g} GiB:"
                " give --mem-fraction-static or a smaller --chunked-prefill-size"
            )
        return EngineSettings(
            engine=engine, utilisation=fraction,
            utilisation_source="--mem-fraction-static" if util else "SGLang's default for this GPU",
            max_num_batched_tokens=chunked, max_num_seqs=deployment.max_num_seqs or graph_bs,
            block_size=deployment.block_size or SGLANG_PAGE,
            defaults_note=f"SGLang on {target.torch_memory_gib:g} GiB: chunked prefill {chunked}, CUDA-graph batch {graph_bs}",
        )  # fmt: skip
    tokens = deployment.max_num_batched_tokens or 8192
    return EngineSettings(
        engine=engine, utilisation=util or TRTLLM_FRACTION,
        utilisation_source="--free-gpu-memory-fraction" if util else "TensorRT-LLM's default",
        max_num_batched_tokens=tokens, max_num_seqs=deployment.max_num_seqs or 2048,
        block_size=deployment.block_size or TRTLLM_BLOCK,
        defaults_note="TensorRT-LLM (PyTorch backend): max_num_tokens 8192, max_batch_size 2048",
    )  # fmt: skip
