"""Settings a plan priced that the base launch lines leave out, in each engine's own words, or a note where an engine
has none (a line that would not reproduce the plan is never passed off as one that does).

The pool and block size (``mha plan --kv-cache-gib``, ``--block-size``):

- vLLM: ``--kv-cache-memory-bytes`` (per GPU, in bytes; ``CacheConfig.kv_cache_memory_bytes``,
  https://docs.vllm.ai/en/stable/api/vllm/config/cache/) on a GPU; on its CPU backend the pool is the variable
  ``VLLM_CPU_KVCACHE_SPACE`` in whole GiB (``vllm/envs.py``, as ``benchmarks/vllm_cpu`` runs it).
  ``--block-size`` (``CacheConfig.block_size``). The MXFP4 MoE kernel forced (``DeploymentSpec.vllm_mxfp4_kernel``
  ``marlin``) is the variable ``VLLM_MXFP4_USE_MARLIN=1`` before the command (``core.engine.mxfp4_moe``); the
  block-FP8 linear kernel named (``DeploymentSpec.vllm_fp8_linear_kernel``) is ``--linear-backend`` (from 0.22.0).
- SGLang: ``--page-size`` (``ServerArgs.page_size``,
  https://docs.sglang.io/advanced_features/server_arguments.html). It has no pool size in bytes: its
  ``--max-total-tokens`` only caps the pool ``--mem-fraction-static`` sizes, so a pool set outright is a note.
- TensorRT-LLM: ``trtllm-serve`` has no flag for either; ``tokens_per_block`` and ``max_tokens`` are
  ``KvCacheConfig`` fields of its ``--extra_llm_api_options`` file
  (https://nvidia.github.io/TensorRT-LLM/1.3.0rc27/llm-api/reference/KvCacheConfig.html), not written here: a note.

The step budget and the formats (``trtllm_words``, ``format_notes``):

- TensorRT-LLM: ``--max-num-batched-tokens`` is trtllm-serve's ``--max_num_tokens``
  (https://nvidia.github.io/TensorRT-LLM/0.18.2/commands/trtllm-serve.html); its KV cache format is
  ``kv_cache_config.dtype`` in the options file (``KvCacheConfig.dtype``, as TensorRT-LLM's own example sets
  ``dtype: fp8``, https://nvidia.github.io/TensorRT-LLM/1.3.0rc11/examples/deepseek_r1_reasoning_parser.html): a note.
  Not for int8: ``kv_cache_config.dtype`` takes auto or fp8 and only warns about int8 (``TRTLLM_INT8_KV``), so the
  note says the line runs its default cache.
- A KV format an engine does not offer (``core.engine.plan.KV_FORMATS``: int8 in vLLM and SGLang) leaves that
  engine's line on its default cache: a note.
- A weight format asked of a checkpoint not stored in it (``DeploymentSpec.checkpoint_format``) other than fp8 of an
  unquantised one (which ``--quantization fp8`` sets; a quantised checkpoint's method the engines read from it, and
  they refuse another, so its lines carry no ``--quantization``): the lines load the checkpoint as stored, so a note
  says the format priced needs a checkpoint stored in it. fp8 too for the trtllm-serve line: TensorRT-LLM runs checkpoints pre-quantised by Model Optimizer and quantises none on loading
  (https://nvidia.github.io/TensorRT-LLM/1.0.0/features/quantization.html, "Running Pre-quantized Models";
  trtllm-serve has no quantization flag, https://nvidia.github.io/TensorRT-LLM/0.18.2/commands/trtllm-serve.html).

Pure Python.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from mha_cli.core.byte_units import GIB
from mha_cli.core.cost.launch_nodes import COPIES_WHY
from mha_cli.core.engine.mxfp4_moe import MARLIN_VARIABLE
from mha_cli.core.engine.settings import VLLM_BLOCK_SIZES
from mha_cli.core.schemas import DeploymentSpec

CPU_POOL_VARIABLE = "VLLM_CPU_KVCACHE_SPACE"


class PoolWords(NamedTuple):
    """What each engine's line takes for the pool priced, and the notes for what no flag says."""

    vllm_variables: list[str]
    """``NAME=value`` words before the vLLM command (its CPU backend's pool, the MXFP4 MoE kernel forced)."""
    vllm: list[str]
    sglang: list[str]
    notes: list[str]


def pool_words(deployment: DeploymentSpec, *, cpu: bool, trtllm: bool) -> PoolWords:
    """``deployment``'s pool set outright (``kv_cache_memory_bytes``, per rank) and block size, as each engine's
    words; ``cpu``: vLLM's CPU backend; ``trtllm``: a trtllm-serve line is written too."""
    variables: list[str] = []
    vllm: list[str] = []
    sglang: list[str] = []
    notes: list[str] = []
    if deployment.vllm_mxfp4_kernel == "marlin":
        variables.append(f"{MARLIN_VARIABLE}=1")
    if deployment.vllm_fp8_linear_kernel is not None:  # the block-FP8 linear kernel priced (core.engine.fp8_marlin)
        vllm += ["--linear-backend", deployment.vllm_fp8_linear_kernel]
    pool = deployment.kv_cache_memory_bytes
    if pool is not None and cpu:
        if pool % GIB == 0:
            variables.append(f"{CPU_POOL_VARIABLE}={pool // GIB}")
        else:
            notes.append(
                f"vLLM's CPU backend takes its pool in whole GiB ({CPU_POOL_VARIABLE}): {pool / GIB:g} GiB is not one;"
                " give --kv-cache-gib a whole number to launch the pool priced"
            )
    elif pool is not None:
        vllm += ["--kv-cache-memory-bytes", str(pool)]
    if pool is not None:
        notes.append(
            "the sglang line does not set the pool priced: SGLang sizes it from --mem-fraction-static and has no size"
            " in bytes (--max-total-tokens only caps it)"
        )
    block = deployment.block_size
    if block is not None and (cpu or block in VLLM_BLOCK_SIZES):
        vllm += ["--block-size", str(block)]
    elif block is not None:
        notes.append(
            f"the vllm line keeps its default block: vLLM on CUDA offers --block-size {VLLM_BLOCK_SIZES}, not {block}"
        )
    if block is not None:
        sglang += ["--page-size", str(block)]
        if trtllm:
            notes.append(
                f"trtllm-serve has no block-size flag: set kv_cache_config.tokens_per_block: {block}"
                " in its --extra_llm_api_options file"
            )
    return PoolWords(variables, vllm, sglang, notes)


ON_THE_FLY = ("fp32", "fp16", "bf16", "fp8")
"""Weight formats a line gets from an unquantized checkpoint: as stored, or fp8 by ``--quantization fp8``."""
STORED_AS_IS = ("fp32", "fp16", "bf16")
"""Weight formats the trtllm-serve line gets from an unquantized checkpoint: it has no ``--quantization``."""
VLLM_FP8_KV = ("fp8", "fp8_ds_mla")
"""KV formats the vLLM line asks with ``--kv-cache-dtype fp8``: a sparse-MLA model's fp8 cache is stored as
fp8_ds_mla or plain fp8 by the release and the GPU, asked for as ``fp8`` either way (``core.engine.sparse_mla_kv``)."""
KV_FLAG_FORMATS = {"vllm": ("bf16", "fp16", "fp32", *VLLM_FP8_KV, "nvfp4"),
                   "sglang": ("bf16", "fp16", "fp32", *VLLM_FP8_KV)}  # fmt: skip
"""KV formats the vLLM and SGLang lines write (the model's dtype, or ``--kv-cache-dtype fp8``)."""


def quantization_words(deployment: DeploymentSpec) -> list[str]:
    """``--dtype float32`` where fp32 weights are asked of a checkpoint not quantised (vLLM's ``ModelDType`` and
    SGLang's ``--dtype`` choices both have it); ``--quantization fp8`` (vLLM's and SGLang's alike) where fp8 is
    asked of a checkpoint not quantised, which
    the engine then quantises as it loads it; nothing for a quantised checkpoint, whose method the engine reads from
    its quantization_config and would refuse another (trial 352 #1: a compressed-tensors or ModelOpt FP8 checkpoint
    got the flag vLLM refuses, ``core.vllm_quantization.pasted_format``)."""
    unquantised = deployment.checkpoint_format is None or deployment.checkpoint_format in STORED_AS_IS
    unquantised = unquantised and deployment.checkpoint_unread is None  # one mha could not read is quantised too
    if deployment.weight_dtype == "fp32" and unquantised:  # both engines run --dtype auto as bf16 or fp16 otherwise
        return ["--dtype", "float32"]  # trial 359 #2: fp32 was priced and the line ran the checkpoint's bf16
    return ["--quantization", "fp8"] if deployment.weight_dtype == "fp8" and unquantised else []


def kv_cache_dtype_words(deployment: DeploymentSpec, *, sglang: bool) -> list[str]:
    """``--kv-cache-dtype`` for the fp8 cache priced (none for the model's dtype), in the encoding the user named:
    e4m3 is vLLM's ``fp8`` and SGLang's ``fp8_e4m3``, e5m2 ``fp8_e5m2`` on both (vLLM ``CacheDType``,
    vllm/config/cache.py in 0.19.1 and main; SGLang ``ServerArgs.kv_cache_dtype`` choices, 0.4.0 to 0.5.16)."""
    if deployment.kv_dtype == "nvfp4" and not sglang:  # vLLM's own name (SGLang's line runs its default: format_notes)
        return ["--kv-cache-dtype", "nvfp4"]
    if deployment.kv_dtype not in VLLM_FP8_KV:  # fp8_ds_mla: both engines' fp8 on a sparse-MLA model
        return []
    if deployment.kv_fp8_variant == "e5m2":
        return ["--kv-cache-dtype", "fp8_e5m2"]
    return ["--kv-cache-dtype", "fp8_e4m3" if sglang else "fp8"]


NIXL_CONFIG = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))
"""vLLM's ``--kv-transfer-config`` for NixlConnector, one worker both sending and receiving."""


def kv_connector_words(deployment: DeploymentSpec) -> list[str]:
    """``--kv-transfer-config`` for the KV connector priced (``DeploymentSpec.kv_connector``), none without one."""
    return ["--kv-transfer-config", NIXL_CONFIG] if deployment.kv_connector == "nixl" else []


TRTLLM_INT8_KV = (
    "TensorRT-LLM 1.0.0rc4 and a later stored revision, tensorrt_llm/llmapi/llm_args.py: TorchLlmArgs."
    "sync_quant_config_with_kv_cache_config_dtype maps kv_cache_config.dtype 'fp8' to QuantAlgo.FP8 and only logs"
    " 'Cannot sync quant_config.kv_cache_quant_algo with kv_cache_config.dtype of ...' for any other (auto keeps the"
    " checkpoint's); TrtLlmArgs.validate_kv_cache_dtype asserts 'auto'. INT8 is in tensorrt_llm/quantization/mode.py"
    " KV_CACHE_QUANT_ALGO_LIST (a checkpoint's kv_cache_quant_algo); the 1.0.0 quantization guide lists only the FP8 KV"
    " cache for the PyTorch backend (https://nvidia.github.io/TensorRT-LLM/1.0.0/features/quantization.html)"
)
"""Where trtllm_words' int8 note was read."""


def trtllm_words(deployment: DeploymentSpec, step_tokens: int, prompt_tokens: int) -> tuple[list[str], list[str]]:
    """trtllm-serve's words for the step budget priced (``step_tokens``, when ``--max-num-batched-tokens`` was given)
    and the notes for its KV format and block reuse as asked, and for context chunking where a prompt of
    ``prompt_tokens`` is over the budget, priced chunked (set in its options file, not on the line; a format
    TensorRT-LLM does not offer, ``core.engine.plan.KV_FORMATS``, is not written there)."""
    from mha_cli.core.engine.plan import KV_FORMATS

    words = [] if deployment.max_num_batched_tokens is None else ["--max_num_tokens", str(step_tokens)]
    notes = []
    if prompt_tokens > step_tokens:  # trial 365 #3: priced chunked (core.cost.serving), refused without the option
        notes.append(
            f"trtllm-serve takes context chunking in its --extra_llm_api_options file: set enable_chunked_prefill:"
            f" true (the {prompt_tokens:,}-token prompt was priced in chunks of {step_tokens:,}; off by default, it"
            " refuses a prompt over --max_num_tokens)"
        )
    if deployment.kv_dtype not in KV_FORMATS["trtllm"]:
        notes.append(f"the trtllm line runs its default KV cache: TensorRT-LLM has no {deployment.kv_dtype} cache")
    elif deployment.kv_dtype == "int8":  # TRTLLM_INT8_KV: no options-file word for it
        notes.append(
            "the trtllm line runs its default KV cache, not the int8 one priced: trtllm-serve's"
            " kv_cache_config.dtype takes auto or fp8 (int8 is only warned about, not applied); TensorRT-LLM's int8"
            " cache is built into a TensorRT engine from a checkpoint quantised with kv_cache_quant_algo INT8"
        )
    elif deployment.kv_dtype not in ("fp32", "fp16", "bf16"):
        notes.append(
            f"trtllm-serve takes the KV cache format in its --extra_llm_api_options file: set kv_cache_config.dtype:"
            f" {deployment.kv_dtype}"
        )
    if deployment.kv_dtype == "fp8" and deployment.kv_fp8_variant == "e5m2":  # TorchLlmArgs'
        # sync_quant_config_with_kv_cache_config_dtype maps "fp8" to QuantAlgo.FP8 (e4m3) and names no e5m2
        notes.append("TensorRT-LLM's fp8 cache is e4m3 (kv_cache_config.dtype takes auto or fp8): it has no e5m2")
    if deployment.prefix_caching is not None:  # as priced: its PyTorch backend reuses blocks by default, C++ does not
        notes.append(
            "trtllm-serve takes block reuse in its --extra_llm_api_options file: set"
            f" kv_cache_config.enable_block_reuse: {'true' if deployment.prefix_caching else 'false'}"
        )
    return words, notes


def replicas_note(replicas: int, gpus_per_replica: int, engines: list[str]) -> str:
    """How to run the ``replicas`` the plan priced with ``engines``' lines when none of them can say it: trtllm-serve
    has no data-parallel flag (its options: ``--tp_size``, ``--pp_size``,
    https://nvidia.github.io/TensorRT-LLM/0.18.2/commands/trtllm-serve.html), and for an MoE model whose replicas
    each hold their own experts vLLM's ``--data-parallel-size`` would spread the experts over every replica's GPUs
    instead (without expert parallelism its MoE layers take dp x tp ranks as one tensor-parallel group:
    ``FusedMoEParallelConfig.make``, 0.32.0), a layout not priced; SGLang's ``--dp-size`` starts independent copies,
    as priced. One server per replica, each on its own ``gpus_per_replica`` consecutive GPUs."""
    groups = [
        ",".join(str(replica * gpus_per_replica + gpu) for gpu in range(gpus_per_replica))
        for replica in range(replicas)
    ]
    devices = "; ".join(f"server {index + 1}: CUDA_VISIBLE_DEVICES={group}" for index, group in enumerate(groups))
    named = f"the {engines[0]} line" if len(engines) == 1 else f"the {', '.join(engines[:-1])} and {engines[-1]} lines"
    reasons = []
    if "vllm" in engines:
        reasons.append(COPIES_WHY)
    if "trtllm" in engines:
        reasons.append("trtllm-serve has no data-parallel flag")
    return (
        f"run {named} once per replica ({replicas} servers), each on its own GPUs ({devices}) and port, behind a"
        f" load balancer: {'; '.join(reasons)}"
    )


def format_notes(deployment: DeploymentSpec, engines: list[str]) -> list[str]:
    """Notes for the formats priced that the ``engines``' lines (``vllm``, ``sglang``, ``trtllm``) cannot write."""
    names = {"vllm": "vLLM", "sglang": "SGLang"}
    notes = [
        f"the {engine} line runs its default KV cache: {names[engine]} has no {deployment.kv_dtype} cache"
        for engine in engines
        if engine in KV_FLAG_FORMATS and deployment.kv_dtype not in KV_FLAG_FORMATS[engine]
    ]
    in_dtype = [names[engine] for engine in engines if engine in names]
    if deployment.kv_dtype == "fp32" and in_dtype and deployment.weight_dtype != "fp32":  # caches follow --dtype
        notes.append(
            f"the {' and '.join(in_dtype)} lines run the KV cache in the model's dtype (bf16 or fp16 checkpoints): the"
            " fp32 cache priced, twice their bytes a token, needs the model run in float32 (add --dtype float32)"
        )
    if deployment.weight_dtype == "fp32" and "sglang" in engines:  # review 363 #6: its pick of backend, not priced
        notes.append(
            "the sglang line runs float32: where SGLang picks FlashAttention 3 (Hopper: 0.5.9"
            " _handle_attention_backend_compatibility), which takes fp16, bf16 or fp8, it may need another"
            " --attention-backend (not checked here)"
        )
        if deployment.kv_dtype in ("bf16", "fp16"):  # review 364 #4: SGLang 0.5.9 takes it, the line asks none
            notes.append(
                f"the sglang line runs its cache in the model's dtype (fp32): the {deployment.kv_dtype} cache priced"
                " needs --kv-cache-dtype bf16 added (SGLang 0.5.9 offers it; earlier releases not read)"
            )
    asked, checkpoint = deployment.weight_dtype, deployment.checkpoint_format or deployment.checkpoint_unread
    stored = (
        deployment.weight_scheme is not None
        or deployment.checkpoint_headers is not None
        or asked == checkpoint  # the checkpoint's own quantization_config stores it so
    )
    quantised_otherwise = checkpoint is not None and checkpoint not in STORED_AS_IS and asked != checkpoint
    if quantised_otherwise:  # trial 352 #2: no flag turns a quantised checkpoint into another format
        notes.append(
            f"the lines load the checkpoint as stored ({checkpoint}): the {asked} weights priced need a checkpoint"
            f" stored in {asked} (point the lines at one)"
        )
    elif asked not in ON_THE_FLY and not stored:
        notes.append(
            f"the lines load the checkpoint as stored: the {asked} weights priced need a checkpoint stored in {asked}"
            " (point the lines at one)"
        )
    elif asked == "fp8" and not stored and {"vllm", "sglang"} & set(engines):  # trial 390 #6: said nowhere
        named = [name for key, name in (("vllm", "vLLM"), ("sglang", "SGLang")) if key in engines]  # those written
        lines, verbs = (
            (f"the {named[0]} line", ("quantises", "it loads", "it reads"))
            if len(named) == 1
            else ("the vLLM and SGLang lines", ("quantise", "they load", "they read"))
        )
        notes.append(
            f"{lines} {verbs[0]} the checkpoint to fp8 as {verbs[1]} it (--quantization: a scale per tensor), so"
            f" {verbs[2]} its full-width weights; a published FP8 checkpoint of the model loads as stored, with its own"
            " scales (point the lines at it where there is one)"
        )
    if asked == "fp32" and "trtllm" in engines and checkpoint != "fp32" and not quantised_otherwise:
        notes.append(
            "the trtllm line loads the checkpoint in its own dtype (trtllm-serve has no dtype flag): the fp32 weights"
            " priced need a checkpoint stored in float32 (point the line at one)"
        )
    elif asked == "fp8" and not stored and not quantised_otherwise and "trtllm" in engines:  # the formats the lines
        notes.append(  # quantise on loading are fp8 alone (ON_THE_FLY): the others took the note above
            f"the trtllm line loads the checkpoint as stored (TensorRT-LLM quantises no weights on loading): the"
            f" {asked} weights priced need a checkpoint Model Optimizer stored in {asked} (point the line at one)"
        )
    return notes


def notes_for(
    notes: list[str], written: list[str], engines: tuple[str, ...] = ("vllm", "sglang", "trtllm")
) -> list[str]:
    """``notes`` less those about an engine whose line was not written (``the sglang line ...``, ``trtllm-serve``)."""
    gone = [engine for engine in engines if engine not in written]
    return [note for note in notes if not any(f"{e} line" in note or f"{e}-serve" in note for e in gone)]
