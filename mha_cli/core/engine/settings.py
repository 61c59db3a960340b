"""The engine's knobs, resolved: what the user set, else the engine's own default for this device.

Every default is the engine's (read in its source, version named) and every measured constant names the public
logs it comes from. Pure Python.
"""

from typing import Annotated

from pydantic import Field

from mha_cli.core.byte_units import GIB, MIB
from mha_cli.core.engine.blackwell_releases import check_release_runs_on
from mha_cli.core.engine.flags import release_meant
from mha_cli.core.engine.generations import Generation, Version, generation, generation_of, parse_version
from mha_cli.core.engine.release_numbers import release_key
from mha_cli.core.engine.sampler import SamplerPath, default_sampler, in_release, runs_flashinfer
from mha_cli.core.engine.sglang_reserve import NO_RESERVE, Reserve, SglangServing, sglang_reserve, vlm_factor
from mha_cli.core.engine.sglang_running import Requested, ceiling, requested_per_rank, running_release
from mha_cli.core.engine.vllm_rule_releases import offload_turns_off_hybrid
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, EngineName, GenerationId
from mha_cli.core.targets import Target, load_targets

VLLM_UTILISATION = 0.90
"""vLLM ``CacheConfig.gpu_memory_utilization`` default (``vllm/config/cache.py``)."""
TRTLLM_BATCH = 2048
"""TensorRT-LLM's max_batch_size default, with its max_num_tokens 8192: ``trtllm-build``'s ``BuildConfig`` (0.12-0.x,
``tensorrt_llm/builder.py``) and the PyTorch backend's ``llmapi`` arguments alike."""
TRTLLM_FRACTION = 0.90
"""TensorRT-LLM ``KvCacheConfig.free_gpu_memory_fraction`` default (``kDefaultGpuMemFraction = 0.9F``)."""
TRTLLM_VENDOR = "NVIDIA"
"""TensorRT-LLM runs on NVIDIA GPUs only ("TensorRT LLM supports the full spectrum of NVIDIA GPU architectures",
https://nvidia.github.io/TensorRT-LLM/supported-hardware.html; the 0.13-0.19 support matrices name NVIDIA parts
alone): other vendors' targets are refused for --engine trtllm."""
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128)
"""Block sizes vLLM's ``--block-size`` accepts on CUDA."""

CUDA_GRAPH_ESTIMATE = 1 * GIB
"""CUDA-graph memory of vLLM's default capture sizes: 0.65-1.66 GiB in the published v0.19 logs ("Graph capturing
finished ... took X GiB"). Up to v0.20 it is taken after the KV pool, from the (1 - utilisation) headroom."""


def engine_name(name: str | None) -> EngineName:
    """``vllm``, ``sglang`` or ``trtllm`` from what a person types (``TensorRT-LLM``, ``vllm@0.10``); None: vllm."""
    return generation_of(name).engine


class EngineSettings(Record):
    """The knobs one engine run uses, each resolved to a number, with where the number came from."""

    engine: EngineName
    generation: GenerationId
    """The engine's generation whose rules apply (``core.engine.generations``)."""
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
    sampler: SamplerPath = "triton"
    """vLLM: the top-k/top-p path of its profiling run's dummy sampler (``core.engine.sampler``)."""
    quantized_checkpoint: bool = False
    """vLLM: the checkpoint carries a quantization_config (``ModelConfig.is_quantized``, which keeps 0.22-0.23 on the
    V1 model runner: ``core.engine.model_runner``): the deployment's weight format is not fp32, fp16 or bf16, or a
    scheme read from the checkpoint."""
    weight_dtype: str = "bf16"
    """vLLM and SGLang: the checkpoint's weight format, which picks vLLM's MoE experts kernel
    (``core.engine.moe_workspace``) and whose dtype both engines' 16- or 32-bit cache follows
    (``core.engine.plan.fp32_cache_note``)."""
    kv_fp8_variant: Annotated[str, Field(exclude_if=lambda value: value == "e4m3")] = "e4m3"
    """vLLM: an fp8 cache's encoding (``DeploymentSpec.kv_fp8_variant``), which its MLA backends take as e4m3 alone
    (``core.engine.mla_fp8``)."""
    kv_connector: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """vLLM: the KV connector configured (``DeploymentSpec.kv_connector``), which turns the hybrid KV cache manager off
    before 0.22 (``core.engine.vllm_rule_releases.connector_turns_off_hybrid``); ``offloading``: the host tier of
    ``--kv-offloading-size``, served by 0.11.1-0.20 only with the manager off (``offload_turns_off_hybrid``); None:
    none."""
    awq_dequantizes: bool = False
    """vLLM: an AWQ checkpoint runs the unfused ``AWQLinearMethod`` (``DeploymentSpec.vllm_awq_kernel`` ``awq``), whose
    profiling run holds a layer's weight dequantized to fp16 (``core.engine.activation.awq_dequant_peak_bytes``)."""
    release: Version | None = None
    """vLLM: the release whose defaults apply (``_release_in_force``): the one typed, else the generation's last;
    None: the latest (and every other engine)."""
    block_size_given: bool = False
    """``block_size`` is the user's (``--block-size``), not the engine's default: vLLM 0.18+ keeps it for MLA
    (``core.engine.mla_blocks``)."""
    engine_version: str | None = None
    """The release as typed (``--engine vllm@0.10.2``) where the generation covers it (``_covered_release``); None:
    the generation's latest, so every rule read from it (vLLM's sampler, MLA block and MXFP4 kernel; SGLang's pools,
    ``core.engine.plan``) takes the generation's rules as its defaults do."""
    async_scheduling: bool | None = None
    """vLLM: async scheduling as the deployment sets it (``DeploymentSpec.async_scheduling``); None: the release's
    default."""
    cuda_graph_bs: int | None = None
    """SGLang: the decode CUDA-graph batch its default fraction reserves for (requests); None: other engines."""
    running_requested: Requested | None = None
    """SGLang: ``max_running_requests`` requested per rank (given, or speculative decoding's); None: SGLang's default,
    set by the pool (``core.engine.sglang_running``), or another engine. ``max_num_seqs`` is then its ceiling until
    the plan sizes the pool."""
    dp_attention_ranks: int = 1
    """SGLang: the DP-attention ranks of one server (1: none)."""
    prefix_caching: bool | None = None
    """vLLM: prefix caching as the deployment sets it (``DeploymentSpec.prefix_caching``), which decides a hybrid's
    Mamba cache mode (``core.engine.mamba_cache_mode``); None: the release's default."""
    radix_cache: bool = True
    """SGLang: its radix (prefix) cache is on (False: ``--disable-radix-cache``, the deployment's ``prefix_caching``
    False), which sizes a hybrid's state pool (``core.engine.sglang_state_pool``); True for other engines."""


def _covered_release(chosen: Generation, typed: str | None) -> str | None:
    """The release as typed where ``chosen`` covers it; None (the generation's last rules) for a release it does not
    cover (a log's, priced by another generation's rules: ``benchmarks/engine_logs.py``' control column)."""
    return typed if typed and chosen.covers(parse_version(typed)) else None


def rules_release(settings: EngineSettings) -> str | None:
    """The release whose memory rules price ``settings``' plan, as the JSON names it (trial 344 #3: four vLLM figures
    shared one generation, ``vllm-0.21``): the one typed (``--engine vllm@0.28``, ``sglang@0.4.6``) up to the newest
    release whose rules were read (``core.engine.releases_read.NEWEST_READ``), else the generation's last
    (``vllm-v1``: 0.20; ``sglang-0.4``: 0.4.10), else that newest read (vLLM 0.33, SGLang's newest); None for
    TensorRT-LLM, whose rules are its generation's, not dated by release."""
    from mha_cli.core.engine.releases_read import NEWEST_READ

    typed, engine = settings.engine_version, settings.engine
    if engine == "sglang":
        from mha_cli.core.engine.prefill_graphs import release_triple

        running = running_release(typed, settings.generation)
        # a post release as typed where its rules are the ones priced: 0.4.6.post2 is not 0.4.6 (trial 381 #6)
        post = typed is not None and "post" in typed.lower() and release_triple(typed) == running
        return typed.strip() if post else ".".join(map(str, running))
    if engine != "vllm":
        return None
    rules = NEWEST_READ[engine].rules  # 0.33: a later release (0.34 too, whose flags were read) takes its rules
    if typed is not None:
        return rules if release_key(typed)[:2] > release_key(rules)[:2] else typed
    return rules if settings.release is None else ".".join(map(str, settings.release))


def release_in_force(deployment: DeploymentSpec) -> Version | None:
    """The vLLM release whose rules ``deployment`` is priced by (``_release_in_force``; None: the latest)."""
    return _release_in_force(generation_of(deployment.engine_generation or deployment.engine or "vllm"),
                             deployment.engine_version)  # fmt: skip


def _shown_release(chosen: Generation, typed: str | None) -> str:
    """The engine as ``--engine`` named it: ``vllm@0.8`` as typed, else the generation (``vllm-v0``)."""
    return f"{chosen.engine}@{typed}" if typed and chosen.covers(parse_version(typed)) else chosen.id


def _release_in_force(chosen: Generation, typed: str | None) -> Version | None:
    """The release whose defaults apply: the one typed (``--engine vllm@0.11``) when ``chosen`` covers it, else the
    generation's last (None: the latest generation, open-ended)."""
    if typed and chosen.covers(parse_version(typed)):
        return parse_version(typed)
    return chosen.last


UNQUANTIZED = ("fp32", "fp16", "bf16")
"""Weight formats a checkpoint holds without a quantization_config."""
VLLM_CPU_BLOCK = 128
"""vLLM's block size on its CPU backend when none is given (``platforms/cpu.py``, 0.32; 16 for MLA)."""


VLLM_GB10_CAPABILITY = 12.1
"""GB10's compute capability, which vLLM keeps on its small step defaults whatever its memory. Up to 0.32
``NvmlCudaPlatform.get_device_total_memory`` (``platforms/cuda.py``) asks NVML's ``nvmlDeviceGetMemoryInfo``, which a
GB10 answers NVML_ERROR_NOT_SUPPORTED (https://docs.nvidia.com/dgx/dgx-spark/known-issues.html, "nvidia-smi reports
memory usage Not Supported"; vllm-project/vllm#57378), and ``EngineArgs.get_batch_defaults`` (``engine/arg_utils.py``)
takes the device's memory as 0 on any exception: read in 0.8.5, 0.10.2, 0.13.0, 0.16.0, 0.27.1, 0.28.0 and
0.29.0-0.32.0. From 0.33 the total falls back to torch's and ``get_batch_defaults`` keeps the small tier for
``current_platform.is_device_capability((12, 1))`` ("GB10 ... has the memory but not the compute of a large discrete
GPU"; read in 0.33.0 and 0.34.0). Logs 613, 1005 and 1008 (vLLM 0.27.1 on a DGX Spark) were in view when it was
read."""


VLLM_TPU_STEP_TOKENS = {"tpu-v6e": 1024, "tpu-v5e": 512, "tpu-v5p": 256}
"""``vllm serve``'s max_num_batched_tokens on a TPU by chip (``get_batch_defaults``' ``current_platform.is_tpu()``
branch, ``chip_name == "V6E"`` / ``"V5E"`` / ``"V5P"``, OPENAI_API_SERVER; read in the 0.13.0, 0.21.0 and 0.32.0
wheels), in place of the GPU tiers' 2,048 or 8,192; other chips (v4) keep the tiers. The chip's name comes from the
TPU platform (tpu_inference from 0.32, not read). max_num_seqs is 256: the TPU platform raises NotImplementedError for
``get_device_total_memory``, which ``get_batch_defaults`` takes as 0 GiB, the small tier."""
VLLM_TPU_DEFAULTS_FROM = (0, 9, 0, 0)
"""The first release with the TPU branch (vllm-project/vllm#17508, May 2025): in the 0.9.0.1 wheel's
``_set_default_args_v1`` (the same per-chip figures), absent from 0.8.5's."""


VLLM_A100_NAME_CHECK = (0, 9, 0, 0)
"""The first vLLM whose step defaults keep an A100 on the small tier whatever its memory (``"a100" not in
device_name``, vllm-project/vllm#17885, "Setting large `max_num_batched_tokens` for A100 reduces throughput"): read
in the 0.9.0 wheel's ``EngineArgs._set_default_args_v1`` (``engine/arg_utils.py``), absent from 0.8.5.post1's, where
an A100 80GB (79.14 GiB) passes the 70 GiB test alone."""


def _vllm_large_gpu(target: Target, release: str | None) -> bool:
    """Whether vLLM ``release`` (None: the latest) gives ``target`` its large step defaults: 70 GiB or more, not a
    GB10, and from 0.9 (``VLLM_A100_NAME_CHECK``) not an A100."""
    a100_checked = release is None or tuple(release_key(release)) >= VLLM_A100_NAME_CHECK
    if (a100_checked and target.id.startswith("a100")) or target.compute_capability == VLLM_GB10_CAPABILITY:
        return False
    return target.device_memory_bytes >= 70 * GIB


VLLM_MEMORY_TIER_FROM = (0, 8, 5, 0)
"""The first vLLM whose V1 step defaults go by the device's memory (``device_memory >= 70 * GiB_bytes``): read in the
0.8.5 wheel's ``EngineArgs._set_default_args_v1`` (``engine/arg_utils.py``). 0.8.0-0.8.4 go by the device's name
(``"h100" in device_name or "h200" in device_name``, ``current_platform.get_device_name().lower()``): 8,192 batched
tokens there, else 2,048; ``max_num_seqs`` 1,024 on every device in 0.8.0-0.8.3 (``default_max_num_seqs = 1024``),
1,024 on an H100/H200 and 256 elsewhere in 0.8.4 (read in the 0.8.0, 0.8.1, 0.8.2, 0.8.3 and 0.8.4 wheels)."""
VLLM_SEQS_BY_NAME_FROM = (0, 8, 4, 0)
"""The first vLLM whose name-tiered defaults keep 256 sequences off an H100/H200 (0.8.4; 0.8.0-0.8.3: 1,024)."""


def _vllm_name_step_defaults(target: Target, key: tuple[int, ...]) -> tuple[int, int, str]:
    """vLLM 0.8.0-0.8.4's ``vllm serve`` defaults by device name (``VLLM_MEMORY_TIER_FROM``): the target's name
    stands for torch's (``NVIDIA H100 80GB HBM3``, ``NVIDIA H200``, ``NVIDIA GH200 480GB`` all match)."""
    name = target.name.lower()
    hopper = "h100" in name or "h200" in name
    seqs = 1024 if hopper or key < VLLM_SEQS_BY_NAME_FROM else 256
    tokens = 8192 if hopper else 2048
    where = "an H100/H200 (by device name)" if hopper else "a GPU not named H100/H200"
    return (
        tokens,
        seqs,
        f"max_num_batched_tokens {tokens}, max_num_seqs {seqs}: vllm serve's 0.8.0-0.8.4 defaults on {where}",
    )


def _vllm_step_defaults(target: Target, release: str | None) -> tuple[int, int, str]:
    """vLLM V1's ``vllm serve`` defaults for ``release`` (None: the latest; ``engine/arg_utils.py``
    ``EngineArgs._set_default_args_v1`` 0.8.0-0.10.2, ``_set_default_args`` 0.11.0, ``get_batch_defaults`` from
    0.11.2, as read in those wheels): 0.8.0-0.8.4 by device name (``_vllm_name_step_defaults``); from 0.8.5 8,192
    batched tokens and 1,024 sequences on a GPU of 70 GiB or more that is not a GB10 (``VLLM_GB10_CAPABILITY``) nor,
    from 0.9, an A100 (``VLLM_A100_NAME_CHECK``), else 2,048 and 256; on its CPU backend 2,048 and 128 (per rank;
    0.32)."""
    if target.vendor == "CPU":
        return 2048, 128, "max_num_batched_tokens 2048, max_num_seqs 128: vllm serve's defaults on its CPU backend"
    key = None if release is None else tuple(release_key(release))
    if target.id in VLLM_TPU_STEP_TOKENS and (key is None or key >= VLLM_TPU_DEFAULTS_FROM):
        tokens = VLLM_TPU_STEP_TOKENS[target.id]
        return tokens, 256, (
            f"max_num_batched_tokens {tokens}, max_num_seqs 256: vllm serve's defaults on a TPU {target.id[4:]} (its"
            " chip's own step budget; 256 sequences, as vLLM reads no memory total on a TPU)"
        )  # fmt: skip
    if key is not None and key < VLLM_MEMORY_TIER_FROM:
        return _vllm_name_step_defaults(target, key)
    if _vllm_large_gpu(target, release):
        return 8192, 1024, "max_num_batched_tokens 8192, max_num_seqs 1024: vllm serve's defaults on a GPU of >= 70 GiB"
    if target.compute_capability == VLLM_GB10_CAPABILITY:
        return (
            2048,
            256,
            "max_num_batched_tokens 2048, max_num_seqs 256: vllm serve's defaults on a GB10 (NVML reports no memory"
            " total there, so vLLM up to 0.32 reads 0 GiB; from 0.33 it keeps compute capability 12.1 on this tier)",
        )
    return 2048, 256, "max_num_batched_tokens 2048, max_num_seqs 256: vllm serve's defaults on an A100 or a smaller GPU"


V0_CHUNKED_BY_DEFAULT = (0, 5, 3, 0)
"""The first vLLM whose ``EngineArgs.create_engine_config`` turns chunked prefill on when max_model_len > 32768 and
it is not set (vllm-project/vllm#6666, in the 0.5.3 sdist's ``engine/arg_utils.py``; 0.5.2's default is off)."""
V0_CHUNK_2048 = (0, 6, 5, 0)
"""The first vLLM whose ``SchedulerConfig`` takes 2048 tokens a step under chunked prefill (0.6.5's ``config.py``;
0.5.3-0.6.4 take 512, "the values that have the best balance between ITL and TTFT on A100")."""
V0_STEP_FROM_CONTEXT = (0, 2, 0, 0)
"""The first vLLM whose step default follows the context, max(max_model_len, 2048) (0.2.0's ``config.py``
``SchedulerConfig``); 0.1.x takes ``EngineArgs.max_num_batched_tokens`` 2560 (0.1.0's ``engine/arg_utils.py``)."""


def _vllm_v0_step_defaults(target: Target, max_model_len: int, release: str | None = None) -> tuple[int, int, str]:
    """vLLM V0's defaults by ``release`` (None: the generation's last, 0.7): 256 sequences on any device; a step of
    2560 tokens in 0.1.x, else max(max_model_len, 2048) without chunked prefill (``config.py``
    ``SchedulerConfig``); chunked prefill on by default above 32K tokens of context from 0.5.3
    (``engine/arg_utils.py``), then 512 tokens a step, 2048 from 0.6.5. Read in the 0.1.0, 0.2.0, 0.5.2, 0.5.3,
    0.6.4 and 0.6.5 sdists."""
    key = None if release is None else tuple(release_key(release))
    if key is not None and key < V0_STEP_FROM_CONTEXT:
        return 2560, 256, "max_num_batched_tokens 2560, max_num_seqs 256: vLLM 0.1's EngineArgs defaults"
    if max_model_len > 32 * 1024 and (key is None or key >= V0_CHUNKED_BY_DEFAULT):
        tokens = 2048 if key is None or key >= V0_CHUNK_2048 else 512
        since = "from 0.6.5" if tokens == 2048 else "in 0.5.3-0.6.4"
        return (
            tokens,
            256,
            f"max_num_batched_tokens {tokens} (chunked prefill, on above 32K context from 0.5.3; {tokens} a step"
            f" {since}), max_num_seqs 256: vLLM V0",
        )
    tokens = max(max_model_len, 2048)
    return tokens, 256, f"max_num_batched_tokens {tokens} (max(max_model_len, 2048)), max_num_seqs 256: vLLM V0"


VLLM_160_GIB_TIER = (0, 28, 0, 0)
"""The first vLLM whose ``EngineArgs.get_batch_defaults`` (``engine/arg_utils.py``) has a tier for a GPU of 160 GiB
or more: read in the 0.28.0 wheel, absent from the 0.21.0 and 0.27.1 wheels."""


def _vllm_latest_step_defaults(target: Target, max_model_len: int, release: str | None) -> tuple[int, int, str]:
    """vLLM 0.21+'s ``get_batch_defaults``: V1's, and from 0.28 (``VLLM_160_GIB_TIER``; ``release`` None: the
    latest) 16,384 tokens with 1,024 sequences on a GPU of 160 GiB or more (B200, B300)."""
    tiered = release is None or tuple(release_key(release)) >= VLLM_160_GIB_TIER
    if tiered and target.vendor != "CPU" and target.device_memory_bytes >= 160 * GIB:
        return (
            16384,
            1024,
            "max_num_batched_tokens 16384, max_num_seqs 1024: vllm serve's defaults on a GPU of >= 160 GiB",
        )
    return _vllm_step_defaults(target, release)


VLLM_STEP_DEFAULTS = {
    "vllm-v0": _vllm_v0_step_defaults,
    "vllm-v1": lambda target, max_model_len, release=None: _vllm_step_defaults(target, release),
    "vllm-0.21": lambda target, max_model_len, release=None: _vllm_latest_step_defaults(target, max_model_len, release),
}
"""(max_num_batched_tokens, max_num_seqs, note) by vLLM generation, from the device, max_model_len and the release
typed (None: the generation's last)."""


SGLANG_RESERVE_EXHAUSTED = "SGLang's reserve for a"
"""How the refusal of an SGLang deployment whose default reserve takes the whole GPU begins (a line that would not
start: ``core.cost.search`` leaves such a companion line out)."""


def sglang_04_fraction(tp: int) -> float:
    """SGLang 0.4.0-0.4.7's ``mem_fraction_static`` default (``server_args.py`` ``ServerArgs.__post_init__``): by the
    tensor-parallel size alone, whatever the GPU (0.4.8-0.5.2: ``core.engine.sglang_tiered``)."""
    for at_least, fraction in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87)):
        if tp >= at_least:
            return fraction
    return 0.88


def _sglang_04_step_defaults(target: Target, tp: int) -> tuple[int, int]:
    """SGLang 0.4.0-0.4.7's (chunked_prefill_size, cuda_graph_max_bs): 2048 and 8 on a GPU under 25,000 MiB, else
    8192 and 160 (``server_args.py``; 0.4.8-0.5.2: ``core.engine.sglang_tiered``)."""
    return (2048, 8) if target.device_memory_bytes < 25_000 * MIB else (8192, 160)


def sglang_default_fraction(
    target: Target, tp: int, chunked_prefill: int, cuda_graph_bs: int, *, pp: int = 1, reserve: Reserve = NO_RESERVE
) -> float:
    """SGLang's ``mem_fraction_static`` default (``server_args._handle_gpu_memory_settings``, 0.5.3-0.5.18;
    ``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings`` 0.5.19-0.5.23): the share of the GPU's MiB left
    after a reserve of 512 MiB + 1.5 x max(chunked prefill, 2048) + 2 x the CUDA-graph batch + tp x pp / 8 x 1024 MiB
    + ``reserve``'s part under the floor (``core.engine.sglang_reserve``), at least 10 GiB on a GPU over 60 GiB, then
    + its part above the floor, rounded to 3 decimals. SGLang reads the GPU's MiB from nvidia-smi, 0.3-0.6 GiB above
    torch's total used here: the fraction can differ in the third decimal."""
    gpu_mib = target.device_memory_bytes / MIB
    reserved = 512 + max(chunked_prefill, 2048) * 1.5 + cuda_graph_bs * 2 + tp * pp / 8 * 1024
    reserved += reserve.under_floor_mib
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mib - reserved - reserve.over_floor_mib) / gpu_mib, 3)


def sglang_fraction(
    target: Target,
    tp: int,
    chunked: int,
    graph_bs: int,
    generation: str,
    release: str | None,
    dp: int,
    serving: SglangServing | None,
) -> tuple[float, str]:
    """SGLang 0.5 ``release``'s default fraction for ``serving`` (None: no model known) on ``target``, and the note
    naming the reserves beyond the base one (``core.engine.sglang_reserve``), "" where none applies."""
    reserve = sglang_reserve(
        serving, generation, release, target.vendor, tp=tp, chunk=chunked, graph_bs=graph_bs, dp=dp
    )
    pp = 1 if serving is None else serving.pp
    fraction = sglang_default_fraction(target, tp, chunked, graph_bs, pp=pp, reserve=reserve)
    parts = list(reserve.parts)
    if pp > 1:
        parts.insert(0, f"pp {pp} in tp x pp / 8 x 1,024 MiB")
    vision = None if serving is None else serving.model.vision
    if vision is not None:
        factor = vlm_factor(vision)
        fraction *= factor
        parts.append(f"x {factor:.3f} for the vision tower (adjust_mem_fraction_for_vlm)")
    return fraction, "" if not parts else f"; mem_fraction_static beyond its base reserve: {', '.join(parts)}"


SGLANG_MID_TIER: tuple[tuple[tuple[int, int, int], tuple[int, int, int]], ...] = (
    ((0, 5, 20), (4096, 48, 160)),
    ((0, 5, 5), (2048, 24, 80)),
)
"""SGLang's (chunked_prefill_size, cuda_graph_max_bs at tp < 4, at tp >= 4) on a GPU of 20-35 GiB, by the first
release that sets them, newest first: 0.5.20's ``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings`` (4096,
48, 160: "32GB Blackwell (RTX 5090) can hold decode cuda graphs well past bs=24"); 0.5.5-0.5.19's ``server_args.py``
``_handle_gpu_memory_settings`` (2048, 24, 80); 0.5.3-0.5.4 and a release not read: (2048, 16, 80)."""


def _sglang_step_defaults(target: Target, tp: int, release: str | None = None) -> tuple[int, int]:
    """SGLang's (chunked_prefill_size, cuda_graph_max_bs) by GPU memory (``server_args``, 0.5.3) for ``release``
    (None: the newest read, ``prefill_graphs.LATEST_READ``); a GPU of 20-35 GiB by ``SGLANG_MID_TIER``."""
    from mha_cli.core.engine.prefill_graphs import LATEST_READ, release_triple

    gib = target.device_memory_bytes / GIB
    small_tp = tp < 4
    if gib < 20:
        return 2048, 8
    if gib < 35:
        triple = release_triple(release or LATEST_READ)
        chunked, small, large = next(
            (tier for since, tier in SGLANG_MID_TIER if triple is not None and triple >= since), (2048, 16, 80)
        )
        return chunked, small if small_tp else large
    if gib < 60:
        return 4096, 32 if small_tp else 160
    if gib < 160:
        return 8192, 256 if small_tp else 512
    return 16384, 512


SGLANG_GRAPH_CAPPED_FROM = (0, 5, 22)
"""The first SGLang release whose default decode ``cuda_graph_max_bs`` is capped at ``--max-running-requests``
before the fraction's reserve is sized (``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings``, 0.5.22 and
0.5.23: ``decode_max_bs_is_default and max_bs > max_running_requests``); 0.5.3-0.5.21 (read in every wheel) reserve
for the device's default batch whatever the cap."""


def sglang_graph_batch(graph_bs: int, max_running: int | None, release: str | None) -> int:
    """SGLang ``release`` (None: the newest read)'s decode CUDA-graph batch: its device default ``graph_bs``, capped at
    ``max_running`` requests from ``SGLANG_GRAPH_CAPPED_FROM``; a commit or a dev build: uncapped."""
    from mha_cli.core.engine.prefill_graphs import LATEST_READ, release_triple

    triple = release_triple(release or LATEST_READ)
    if max_running is None or triple is None or triple < SGLANG_GRAPH_CAPPED_FROM:
        return graph_bs
    return min(graph_bs, max_running)


def sglang_dp_attention_chunk(chunked: int, dp: int) -> int:
    """Each data-parallel rank's chunked prefill (tokens) when SGLang runs DP attention over ``dp`` ranks:
    ``chunked_prefill_size // dp_size`` (``server_args.py`` ``_handle_data_parallelism``, 0.5.x, also multiplying
    ``schedule_conservativeness`` by 0.3; from sgl-project/sglang#4390, merged 2025-03-13: earlier 0.4 releases
    forced dp to tp and halved the size instead). ``_handle_gpu_memory_settings`` runs first, so the default
    ``mem_fraction_static`` is sized on the undivided figure. Refused when nothing is left to a rank."""
    step = chunked // dp
    if step < 1:
        raise BadInputError(
            f"SGLang's DP attention gives each of its {dp} ranks --chunked-prefill-size // {dp} tokens, and {chunked}"
            f" leaves none: give --chunked-prefill-size {dp} or more"
        )
    return step


def release_key_priced(deployment: DeploymentSpec) -> tuple[int, ...] | None:
    """The release of ``deployment``'s engine whose rules price it, as a sortable key (``release_key``): the one typed
    (``--engine sglang@0.5.10``), else its generation's last minor at its newest patch, as that minor typed reads
    (``sglang-0.4`` is ``sglang@0.4``, 0.4.10.post2: review 373 #3; it had been (0, 4), before every 0.4.x patch);
    None: the latest."""
    if deployment.engine_version:
        return release_key(deployment.engine_version)
    last = deployment_generation(deployment).last
    return None if last is None else release_key(".".join(map(str, last)))


def deployment_generation(deployment: DeploymentSpec) -> Generation:
    """The generation a deployment is priced by: its ``engine_generation``, else its engine's latest; refused when
    the two name different engines."""
    engine = engine_name(deployment.engine)
    chosen = generation(deployment.engine_generation, engine)
    if chosen.engine != engine:
        raise BadInputError(
            f"engine generation {chosen.id} is not one of {engine}'s: give --engine {chosen.engine}@VERSION or drop it"
        )
    return chosen


SGLANG_ON_TPU = (
    "SGLang runs on TPUs through SGLang-JAX, a separate JAX engine (sgl-project/sglang-jax,"
    " https://docs.sglang.io/platforms/tpu.html) whose memory and launch mha does not model"
)
"""Why a TPU target has no SGLang plan nor line: mainline SGLang has no TPU backend."""
TPU_VENDOR = "Google"


def on_tpu(target_id: str) -> bool:
    """Whether ``target_id`` names one of the shipped TPU targets."""
    target = load_targets().get(target_id)
    return target is not None and target.vendor == TPU_VENDOR


def check_engine_runs_on(engine: EngineName, target: Target) -> None:
    """Refuse in one line an engine that does not run on ``target``: the cpu target is vLLM's CPU backend alone;
    TensorRT-LLM runs on NVIDIA GPUs alone (``TRTLLM_VENDOR``); SGLang not on a TPU (``SGLANG_ON_TPU``)."""
    if target.vendor == "CPU" and engine != "vllm":
        raise BadInputError(f"the cpu target is vLLM's CPU backend: {engine} is not modelled there; use --engine vllm")
    if engine == "sglang" and target.vendor == TPU_VENDOR:
        raise BadInputError(f"{SGLANG_ON_TPU}: use --engine vllm on {target.id}")
    if engine == "trtllm" and target.vendor != TRTLLM_VENDOR:
        raise BadInputError(
            f"TensorRT-LLM runs on NVIDIA GPUs only; {target.id} is {target.vendor}'s: use --engine vllm or sglang"
        )


def check_deployment_runs_on(deployment: DeploymentSpec, target: Target) -> None:
    """Refuse in one line the deployment's engine where it does not run (``check_engine_runs_on``), and its release
    where it predates the GPU (``core.engine.blackwell_releases``), before any layout is priced."""
    chosen = deployment_generation(deployment)
    check_engine_runs_on(chosen.engine, target)
    typed = deployment.engine_version
    covered = typed if typed and chosen.covers(parse_version(typed)) else None
    check_release_runs_on(chosen.engine, release_meant(chosen, covered), _shown_release(chosen, typed), target)


def _check_pool_setting(chosen: Generation, typed: str | None, *, cpu: bool) -> None:
    """Refuse ``--kv-cache-gib`` in one line for a vLLM release without the setting its launch line writes for it
    (``core.engine.flags``): ``--kv-cache-memory-bytes`` on a GPU (first in 0.10.2), ``VLLM_CPU_KVCACHE_SPACE`` on
    its CPU backend (first in 0.4.1); the release is the one typed, else the generation's latest."""
    from mha_cli.core.engine.flags import setting_refusal

    word = "VLLM_CPU_KVCACHE_SPACE" if cpu else "--kv-cache-memory-bytes"
    refusal = setting_refusal("--kv-cache-gib", "vllm", chosen, typed, word)
    if refusal is not None:
        raise BadInputError(refusal)


def resolve_settings(
    deployment: DeploymentSpec,
    target: Target,
    tp: int,
    *,
    dp_attention_ranks: int = 1,
    serving: SglangServing | None = None,
) -> EngineSettings:
    """The deployment's engine knobs, the engine's (generation's) defaults where unset. ``dp_attention_ranks``: the
    data-parallel ranks SGLang runs DP attention over (its step budget is then one rank's,
    ``sglang_dp_attention_chunk``; its default fraction keeps a reserve for them); 1 without DP attention.
    ``serving``: what SGLang 0.5's default fraction reads of the model and layout (``sglang_fraction``); None: the
    base reserve and the DP-attention one alone (a table of defaults with no model)."""  # fmt: skip
    chosen = deployment_generation(deployment)
    engine = chosen.engine
    util = deployment.gpu_memory_utilization
    check_deployment_runs_on(deployment, target)
    if deployment.kv_cache_memory_bytes is not None and engine != "vllm":
        raise BadInputError("--kv-cache-gib sets vLLM's pool (--kv-cache-memory-bytes): use it with --engine vllm")
    in_force = _release_in_force(chosen, deployment.engine_version)
    if deployment.kv_connector is not None and (engine != "vllm" or (in_force is not None and in_force < (0, 9))):
        raise BadInputError(
            "kv_connector names vLLM's NixlConnector (--kv-transfer-config, first in vLLM 0.9.0): use it with --engine"
            " vllm, 0.9 or later"
        )
    if deployment.kv_cache_memory_bytes is not None:
        _check_pool_setting(chosen, deployment.engine_version, cpu=target.vendor == "CPU")
    covered = _covered_release(chosen, deployment.engine_version)
    if engine == "vllm":
        tokens, seqs, note = VLLM_STEP_DEFAULTS[chosen.id](target, deployment.seq_len, covered)
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
        if deployment.max_num_batched_tokens is not None or deployment.max_num_seqs is not None:
            unset = note.split(": ", 1)[1]  # the defaults' reason, for the setting not given
            note = (
                f"max_num_batched_tokens {tokens}{'' if deployment.max_num_batched_tokens else ' (default)'},"
                f" max_num_seqs {seqs}{'' if deployment.max_num_seqs else ' (default)'}; (default) = {unset}"
            )
        release = _release_in_force(chosen, deployment.engine_version)
        return EngineSettings(
            engine=engine, generation=chosen.id, utilisation=util or VLLM_UTILISATION,
            utilisation_source="--gpu-memory-utilization" if util else "vLLM's default",
            max_num_batched_tokens=tokens, max_num_seqs=seqs,
            block_size=deployment.block_size or (VLLM_CPU_BLOCK if cpu else chosen.block_size), defaults_note=note,
            kv_cache_bytes=deployment.kv_cache_memory_bytes, limit_mm_per_prompt=deployment.limit_mm_per_prompt,
            sampler=in_release(deployment.vllm_sampler, release) if deployment.vllm_sampler else default_sampler(
                chosen.id, covered,
                flashinfer_capable=runs_flashinfer(target.vendor, target.compute_capability), cpu=cpu,
            ),
            release=release, block_size_given=deployment.block_size is not None, engine_version=covered,
            quantized_checkpoint=deployment.weight_dtype not in UNQUANTIZED or deployment.weight_scheme is not None,
            awq_dequantizes=deployment.vllm_awq_kernel == "awq", async_scheduling=deployment.async_scheduling,
            kv_connector=deployment.kv_connector or (
                "offloading"
                if deployment.kv_offload_bytes and offload_turns_off_hybrid(release_key_priced(deployment))
                else None
            ),
            kv_fp8_variant=deployment.kv_fp8_variant, prefix_caching=deployment.prefix_caching,
            weight_dtype=deployment.weight_dtype if deployment.weight_scheme is None else "mixed",
        )  # fmt: skip
    if engine == "sglang":
        old = chosen.id == "sglang-0.4"
        # SGLang's --tp-size under DP attention counts every GPU of the server (its _handle_data_parallelism asserts
        # tp_size % dp_size == 0): its step defaults and fraction read that size, not one rank's tp
        server_tp = tp * dp_attention_ranks
        from mha_cli.core.engine.sglang_tiered import tiered_era, tiered_fraction, tiered_step_defaults

        tiered = tiered_era(covered, chosen.id)
        if tiered:
            chunked, graph_bs = tiered_step_defaults(target, server_tp)
        elif old:
            chunked, graph_bs = _sglang_04_step_defaults(target, server_tp)
        else:
            chunked, graph_bs = _sglang_step_defaults(target, server_tp, covered)
            # the line's --max-running-requests counts every DP-attention rank's (core.cost.search.launch_commands)
            running = None if deployment.max_num_seqs is None else deployment.max_num_seqs * dp_attention_ranks
            graph_bs = sglang_graph_batch(graph_bs, running, covered)
        chunked = deployment.max_num_batched_tokens or chunked
        reserve_note = ""
        if util:
            fraction = util
        elif tiered:
            fraction, reserve_note = tiered_fraction(
                target, server_tp, covered, dp_attention=dp_attention_ranks > 1, serving=serving
            )
        elif old:
            fraction = sglang_04_fraction(server_tp)
        else:
            fraction, reserve_note = sglang_fraction(
                target, server_tp, chunked, graph_bs, chosen.id, covered, dp_attention_ranks, serving
            )
        if fraction <= 0:
            raise BadInputError(
                f"{SGLANG_RESERVE_EXHAUSTED} {chunked}-token chunked prefill leaves nothing of"
                f" {target.torch_memory_gib:g} GiB: give --mem-fraction-static or a smaller --chunked-prefill-size"
            )
        size = (
            f" at --tp-size {server_tp} (every GPU of the server: its DP-attention ranks x tp)"
            if dp_attention_ranks > 1
            else ""
        )
        note = (
            f"{chosen.label} on {target.torch_memory_gib:g} GiB{size}: chunked prefill {chunked}, CUDA-graph batch"
            f" {graph_bs}{reserve_note}"
        )
        triple = running_release(covered, chosen.id)
        speculative = deployment.speculative is not None
        requested = requested_per_rank(deployment.max_num_seqs, speculative, dp_attention_ranks, triple)
        step = chunked
        if dp_attention_ranks > 1:
            step = sglang_dp_attention_chunk(chunked, dp_attention_ranks)
            note += (
                f"; DP attention over {dp_attention_ranks} ranks gives each {chunked} // {dp_attention_ranks} ="
                f" {step} tokens a step (server_args _handle_data_parallelism, since sgl-project/sglang#4390 of March"
                " 2025; the schedule_conservativeness x 0.3 it also sets is not priced)"
            )
            if old:  # the generation spans the change
                note += "; 0.4 releases before that PR forced dp to tp and halved the chunk instead"
        return EngineSettings(
            engine=engine, generation=chosen.id, utilisation=fraction,
            utilisation_source="--mem-fraction-static" if util else f"{chosen.label}'s default for this GPU and tp",
            max_num_batched_tokens=step, max_num_seqs=ceiling(triple) if requested is None else requested.requests,
            block_size=deployment.block_size or chosen.block_size, defaults_note=note,
            block_size_given=deployment.block_size is not None, engine_version=covered,
            cuda_graph_bs=graph_bs, running_requested=requested, radix_cache=deployment.prefix_caching is not False,
            dp_attention_ranks=dp_attention_ranks,
            weight_dtype=deployment.weight_dtype if deployment.weight_scheme is None else "mixed",
        )  # fmt: skip
    tokens = deployment.max_num_batched_tokens or 8192
    batch = deployment.max_num_seqs or TRTLLM_BATCH
    block = deployment.block_size or chosen.block_size

    def said(value: int, given: object) -> str:
        return f"{value}" if given else f"{value} (default)"

    return EngineSettings(
        engine=engine, generation=chosen.id, utilisation=util or TRTLLM_FRACTION,
        utilisation_source="--free-gpu-memory-fraction" if util else "TensorRT-LLM's default",
        max_num_batched_tokens=tokens, max_num_seqs=batch, block_size=block,
        defaults_note=f"{chosen.label}: max_num_tokens {said(tokens, deployment.max_num_batched_tokens)},"
        f" max_batch_size {said(batch, deployment.max_num_seqs)},"
        f" tokens_per_block {said(block, deployment.block_size)}",
    )  # fmt: skip
