"""The KV pool and block size a plan priced, in each engine's own launch words.

``mha plan --kv-cache-gib`` and ``--block-size`` change the pool priced; the launch lines carry them, or say in a
note that an engine has no word for them:

- vLLM: ``--kv-cache-memory-bytes`` (per GPU, in bytes; ``CacheConfig.kv_cache_memory_bytes``,
  https://docs.vllm.ai/en/stable/api/vllm/config/cache/) on a GPU; on its CPU backend the pool is the variable
  ``VLLM_CPU_KVCACHE_SPACE`` in whole GiB (``vllm/envs.py``, as ``benchmarks/vllm_cpu`` runs it).
  ``--block-size`` (``CacheConfig.block_size``).
- SGLang: ``--page-size`` (``ServerArgs.page_size``,
  https://docs.sglang.io/advanced_features/server_arguments.html). It has no pool size in bytes: its
  ``--max-total-tokens`` only caps the pool ``--mem-fraction-static`` sizes, so a pool set outright is a note.
- TensorRT-LLM: ``trtllm-serve`` has no flag for either; ``tokens_per_block`` and ``max_tokens`` are
  ``KvCacheConfig`` fields of its ``--extra_llm_api_options`` file
  (https://nvidia.github.io/TensorRT-LLM/1.3.0rc27/llm-api/reference/KvCacheConfig.html), not written here: a note.

Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.engine.settings import VLLM_BLOCK_SIZES
from mha_cli.core.schemas import DeploymentSpec

GIB = 2**30
CPU_POOL_VARIABLE = "VLLM_CPU_KVCACHE_SPACE"


class PoolWords(NamedTuple):
    """What each engine's line takes for the pool priced, and the notes for what no flag says."""

    vllm_variables: list[str]
    """``NAME=value`` words before the vLLM command (its CPU backend's pool)."""
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
