"""Prefix cache tiers in the serving simulator: several shared prefixes, the GPU pool's spare blocks as the first
tier and the host pool (KV offload) as the second.

Request i of the workload carries prefix i mod K (K conversations or documents coming back in turn). Each tier
holds a prefix's whole blocks:

- **GPU**: on vLLM and SGLang a prefix the running requests reference is held once in the blocks they link
  (``core.serve.schedulers``), and one nobody links sits in the free queue until its head hands the blocks out:
  first in, first out over every block, the requests' own ones too (``core.serve.free_queue``, review 321 #1; an
  LRU over whole prefixes in the free blocks' room kept prefixes that fresh requests had already pushed out).
  Elsewhere (TensorRT-LLM, where each running request holds its own copy) the prefix is cached in the blocks the
  running requests leave free, and when a request looks its prefix up the least recently used prefixes beyond
  those blocks are gone, of those no running request links. Without GPU prefix caching nothing is kept here
  (vLLM's host tier still works).
- **host**: every prefix a request computes is stored there too, and the request's own whole blocks beside it
  (vLLM's write-through of every full block, SGLang's write-through backup of radix nodes; TensorRT-LLM's eviction
  into its secondary pool holds the same set), up to the host pool's blocks, least recently used out first.

A request that finds its prefix on the GPU starts after it (as with one shared prefix); found on the host, it
starts after it too and its step pays the load, tokens x bytes per token / the load rate, as time the engine waits
(SGLang loads before the batch; vLLM loads asynchronously while other requests run, so this overstates the wait of
the others). A preempted request looks its prefix up again when it comes back; the rest of its KV (what vLLM 0.14+
also keeps on the host) is recomputed: not modelled. Pure Python.
"""

from __future__ import annotations

from collections import OrderedDict


class PrefixTiers:
    """The GPU and host tiers of K shared prefixes (module docstring); tokens are whole blocks."""

    def __init__(
        self, *, prefix_len: int, groups: int, block_size: int, host_blocks: int, load_s_per_token: float,
        gpu_caching: bool, evicts_by_room: bool = True,
    ) -> None:  # fmt: skip
        self.prefix_len, self.groups, self.block_size = prefix_len, groups, block_size
        self.host_capacity = host_blocks * block_size
        """Tokens the host pool holds."""
        self.load_s_per_token = load_s_per_token
        self.gpu_caching = gpu_caching
        self.evicts_by_room = evicts_by_room
        """Whether a lookup first shrinks the GPU tier to the free blocks' room (``_evict``); False: the engine holds
        each prefix once and the free queue's order evicts it (``EngineState.settle``, ``core.serve.free_queue``)."""
        self.gpu: OrderedDict[int, int] = OrderedDict()
        """Prefix -> its tokens cached in the GPU pool, least recently used first."""
        self.host: OrderedDict[int, tuple[int, int]] = OrderedDict()
        """Prefix -> the tokens of it the host pool holds, from .. to (whole blocks), least recently used first (a
        request's own blocks under ``-1 - request``). The LRU goes block by block, a prefix's first blocks the oldest
        of it (stored and touched in order), so what it loses is its front."""
        self.gpu_tokens = self.host_tokens = 0
        """What each tier holds, in tokens."""
        self.host_hit_tokens = 0
        """Prompt tokens loaded back from the host over the run, in the lookups the hit rate counts
        (``EngineState.count_lookup``)."""
        self.loaded = 0
        """The tokens the last lookup loaded back from the host."""
        self.pending_load_s = 0.0
        """Load time the next step waits for (hits found since the last step)."""

    def prefix_of(self, request: int) -> int:
        """The prefix request ``request`` carries: i mod K."""
        return request % self.groups

    def _whole(self, tokens: int) -> int:
        return min(tokens, self.prefix_len) // self.block_size * self.block_size

    def lookup(self, request: int, limit: int, free_blocks: int, in_use: frozenset[int] = frozenset()) -> int:
        """The tokens of ``request``'s prefix a tier serves (at most ``limit``), the GPU's first; a host hit's load is
        added to ``pending_load_s`` and the prefix is back on the GPU. ``free_blocks``: the blocks the GPU tier lives
        in: the pool's free ones, and where the pool shares prefix blocks, those the running requests link
        (``EngineState.shared_held``). ``in_use``: the prefixes running requests link, never evicted (``_evict``)."""
        prefix = self.prefix_of(request)
        self.loaded = 0
        if self.evicts_by_room:
            self._evict(free_blocks * self.block_size, in_use)
        on_gpu = min(self.gpu.get(prefix, 0), limit)
        if prefix in self.gpu:
            self.gpu.move_to_end(prefix)
        span = self.host.get(prefix)
        if span is None:
            return on_gpu
        self.host.move_to_end(prefix)  # vLLM's connector touches the request's blocks the host holds (``_touch``)
        if on_gpu >= limit or not span[0] <= on_gpu < span[1]:
            return on_gpu
        # the blocks after the GPU's hit come back from the host (the connector looks them up from the GPU hit on,
        # ``_lookup``; review 322 #1: a prefix the free queue had cut was served its GPU part alone)
        hit = min(span[1], limit)
        self.loaded = hit - on_gpu
        self.pending_load_s += (hit - on_gpu) * self.load_s_per_token
        if self.gpu_caching:
            self._put(self.gpu, prefix, hit, "gpu_tokens")
        return hit

    def _evict(self, room: int, in_use: frozenset[int]) -> None:
        """The GPU tier shrinks to ``room`` tokens, the least recently used prefix first, skipping those in
        ``in_use``: a block a running request links is never evictable (vLLM 0.10.2 ``vllm/v1/core/block_pool.py``:
        ``free_blocks`` queues only blocks with ``ref_cnt == 0`` and ``touch`` takes a hit block out of the queue, so
        ``get_new_blocks`` -> ``_maybe_evict_cached_block`` never reaches it; SGLang 0.5.5
        ``mem_cache/radix_cache.py`` ``RadixCache.evict`` skips nodes with ``lock_ref > 0``). What the linked
        prefixes hold beyond ``room`` stays."""
        for prefix in [p for p in self.gpu if p not in in_use]:
            if self.gpu_tokens <= room:
                return
            self.gpu_tokens -= self.gpu.pop(prefix)

    def cut(self, prefix: int, tokens: int) -> None:
        """``prefix`` keeps at most ``tokens`` in the GPU tier (none: it leaves it)."""
        held = self.gpu.get(prefix, 0)
        if held > tokens:
            self.gpu_tokens -= held - tokens
            if tokens:
                self.gpu[prefix] = tokens
            else:
                del self.gpu[prefix]

    def store(self, request: int, tokens: int, since: int = 0) -> None:
        """``request`` has its first ``tokens`` tokens computed (or allocated, in vLLM): its prefix's whole blocks among
        them enter the GPU tier (when the engine caches prefixes), and the host tier takes its whole blocks from
        ``since`` (its hit: the connector does not store again the blocks it found, ``update_state_after_alloc``),
        its prefix's and its own after them, which no other request hits but which take the host pool's room (vLLM's
        offloading connector stores every full block of every request, ``_build_store_jobs``; SGLang's write-through
        backs up every radix node; TensorRT-LLM offloads whatever it evicts)."""
        whole = self._whole(tokens)
        if not whole:
            return
        prefix = self.prefix_of(request)
        if self.gpu_caching and whole > self.gpu.get(prefix, 0):
            self._put(self.gpu, prefix, whole, "gpu_tokens")
        if not self.host_capacity:
            return
        start = min(since, whole)
        if start < whole or prefix in self.host:  # nothing stored, nothing held: no entry (review 324 #7)
            lo, hi = self.host.get(prefix, (start, start))
            self._put_span(prefix, (min(lo, start), max(hi, whole)) if start <= hi else (start, whole))
        own_from = max(since, self.prefix_len // self.block_size * self.block_size)
        own = tokens // self.block_size * self.block_size - own_from
        lo, hi = self.host.get(-1 - request, (0, 0))
        if own > hi or hi:  # touched after its prefix's, as the connector touches a request's blocks in order
            self._put_span(-1 - request, (lo, max(own, hi)))
        while self.host_tokens > self.host_capacity:  # block by block, the least recently used first
            key, (lo, hi) = next(iter(self.host.items()))
            excess = -(-(self.host_tokens - self.host_capacity) // self.block_size) * self.block_size
            if hi - lo <= excess:
                del self.host[key]
                self.host_tokens -= hi - lo
            else:
                self.host[key] = (lo + excess, hi)
                self.host_tokens -= excess

    def _put_span(self, key: int, span: tuple[int, int]) -> None:
        """The host pool holds ``span`` of ``key``, most recently used."""
        lo, hi = self.host.get(key, (0, 0))
        self.host_tokens += (span[1] - span[0]) - (hi - lo)
        self.host[key] = span
        self.host.move_to_end(key)

    def _put(self, tier: OrderedDict[int, int], prefix: int, tokens: int, total: str) -> None:
        """``prefix`` holds ``tokens`` in ``tier``, most recently used; ``total`` names the tier's running sum."""
        setattr(self, total, getattr(self, total) - tier.get(prefix, 0) + tokens)
        tier[prefix] = tokens
        tier.move_to_end(prefix)

    def take_load(self) -> float:
        """The load time the step about to run waits for; cleared."""
        seconds, self.pending_load_s = self.pending_load_s, 0.0
        return seconds
