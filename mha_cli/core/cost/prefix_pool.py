"""A shared prefix's blocks held once in the KV pool, as vLLM V1's block pool and SGLang's radix cache share them.

vLLM V1 (read in the 0.10.2 release, ``vllm/v1/core``) gives a request that hits the prefix cache the cached
blocks themselves: ``KVCacheManager.get_computed_blocks`` finds them (full blocks only, at most the prompt's first
``prompt - 1`` tokens), ``allocate_slots`` touches them (``BlockPool.touch``: ``ref_cnt`` + 1) and takes new
blocks only for the rest (``SingleTypeKVCacheManager.get_num_blocks_to_allocate``: the blocks the tokens need less
the hit's, plus the hit blocks no running request holds, ``ref_cnt == 0``, which leave the free queue). A request's
last, partial prefix block and its own tokens are its own blocks. A cached block goes back to the free queue when
its last holder is freed (``BlockPool.free_blocks``) and is evicted only when a new block is taken from there
(``get_new_blocks`` -> ``_maybe_evict_cached_block``). So while requests run, the prefix's whole blocks are held
once per replica and each request holds ceil((isl + osl) / block) - those blocks.

SGLang (read in the 0.5.4 release, ``python/sglang/srt``) does the same with its radix cache: ``Req.
init_next_round_input`` matches at most the prompt's first ``input_len - 1`` tokens (``RadixCache.match_prefix``,
whole pages when ``page_size`` > 1) and the request computes only ``extend_input_len`` = the rest;
``PrefillAdder.add_one_req`` admits it when that rest plus its output (clipped) fits ``rem_total_tokens`` = the
pool's available tokens plus the tree's evictable ones; ``inc_lock_ref`` moves the matched nodes from evictable to
protected while a request holds them, ``dec_lock_ref`` back, and ``evict`` frees unlocked leaves (the tail first)
only when tokens are needed. The same count applies, in pages.

TensorRT-LLM's block reuse shares too; it is priced at the floor here (each request its own copy), which admits
fewer. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.engine.plan import EnginePlan


def shares_prefix_blocks(engine: EnginePlan) -> bool:
    """Whether the pool is priced with the prefix's blocks held once: vLLM V1 with one KV cache group of token
    blocks (a hybrid model's groups stay at one copy a request), and SGLang with a KV cache (TensorRT-LLM stays at
    one copy, not read; a model with fixed states has no prefix served, ``plan.gpu_prefix_cache``).

    SGLang's sliding-window models share too (read in 0.5.5, ``python/sglang/srt``): ``server_args.py``
    ``_handle_model_specific_adjustments`` sets ``disable_hybrid_swa_memory`` for every architecture that reports a
    window there (GptOss, Gemma 2/3/3n, Olmo2), so they run one pool and the plain ``RadixCache`` above; where the
    window pool is on, ``SWARadixCache.match_prefix`` hands a request the same tree nodes and ``inc_lock_ref`` locks
    each matched node in the full pool and the window's tail of them in the window pool, so both pools hold a
    matched prefix once."""
    if engine.kv_bytes_per_token_per_rank <= 0:
        return False
    if engine.name == "sglang":
        return True
    return engine.name == "vllm" and engine.generation != "vllm-v0" and len(engine.groups) <= 1


def prefix_blocks(cached_tokens: int, block_size: int) -> int:
    """The prefix's whole blocks the cache holds: ``cached_tokens`` (already whole blocks) / ``block_size``."""
    return cached_tokens // block_size


def own_blocks(context: int, cached_tokens: int, block_size: int) -> int:
    """Blocks a request of ``context`` tokens holds of its own beside the shared prefix's ``cached_tokens`` (whole
    blocks): ceil(context / block) - the prefix's blocks."""
    return -(-context // block_size) - prefix_blocks(cached_tokens, block_size)


def shared_admitted(engine: EnginePlan, *, context: int, cached_tokens: int, prefixes: int = 1) -> int:
    """Requests of ``context`` tokens one replica holds at once when their first ``cached_tokens`` (whole blocks of a
    shared prefix, 0: none cached) are held once for each of the ``prefixes`` different prefixes the running requests
    carry (at most one a request): n = (pool blocks - min(prefixes, n1) x prefix blocks) // each request's own blocks,
    n1 that count with one prefix, at most ``max_num_seqs``, and never below what the engine admits with a copy
    each."""
    if not cached_tokens or not shares_prefix_blocks(engine) or not engine.starts:
        return engine.admitted_per_replica
    size = engine.block_size
    shared = prefix_blocks(cached_tokens, size)
    own = own_blocks(context, cached_tokens, size)
    blocks = engine.kv_tokens // size
    if own < 1 or blocks <= shared:
        return engine.admitted_per_replica
    admitted = max(engine.admitted_per_replica, min(engine.max_num_seqs, (blocks - shared) // own))
    if prefixes > 1:  # each running prefix's blocks once: fewer requests than prefixes hold one each
        admitted = max(engine.admitted_per_replica, min(admitted, (blocks - min(prefixes, admitted) * shared) // own))
    return admitted
