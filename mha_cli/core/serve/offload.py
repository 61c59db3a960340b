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
        each prefix once and the free queue's order evicts it (``EngineState._settle``, ``core.serve.free_queue``)."""
        self.gpu: OrderedDict[int, int] = OrderedDict()
        """Prefix -> its tokens cached in the GPU pool, least recently used first."""
        self.host: OrderedDict[int, int] = OrderedDict()
        """Prefix -> its tokens held in the host pool, least recently used first."""
        self.gpu_tokens = self.host_tokens = 0
        """What each tier holds, in tokens."""
        self.host_hit_tokens = 0
        """Prompt tokens loaded back from the host over the run."""
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
        if self.evicts_by_room:
            self._evict(free_blocks * self.block_size, in_use)
        if prefix in self.gpu:
            self.gpu.move_to_end(prefix)
            return min(self.gpu[prefix], limit)
        if prefix in self.host:
            self.host.move_to_end(prefix)
            hit = min(self.host[prefix], limit)
            self.host_hit_tokens += hit
            self.pending_load_s += hit * self.load_s_per_token
            if self.gpu_caching:
                self._put(self.gpu, prefix, hit, "gpu_tokens")
            return hit
        return 0

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

    def store(self, request: int, tokens: int) -> None:
        """``request`` has its first ``tokens`` tokens computed (or allocated, in vLLM): its prefix's whole blocks among
        them enter the GPU tier (when the engine caches prefixes) and the host tier, and so do its own whole blocks
        after the prefix's, which no other request hits but which take the host pool's room (vLLM's offloading
        connector stores every full block of every request, ``_get_reqs_to_store``; SGLang's write-through backs up
        every radix node; TensorRT-LLM offloads whatever it evicts): under key ``-1 - request``."""
        whole = self._whole(tokens)
        if not whole:
            return
        prefix = self.prefix_of(request)
        if self.gpu_caching and whole > self.gpu.get(prefix, 0):
            self._put(self.gpu, prefix, whole, "gpu_tokens")
        if not self.host_capacity:
            return
        if whole > self.host.get(prefix, 0):
            self._put(self.host, prefix, whole, "host_tokens")
        own = tokens // self.block_size * self.block_size - self.prefix_len // self.block_size * self.block_size
        if own > self.host.get(-1 - request, 0):
            self._put(self.host, -1 - request, own, "host_tokens")
        while self.host_tokens > self.host_capacity:
            self.host_tokens -= self.host.popitem(last=False)[1]

    def _put(self, tier: OrderedDict[int, int], prefix: int, tokens: int, total: str) -> None:
        """``prefix`` holds ``tokens`` in ``tier``, most recently used; ``total`` names the tier's running sum."""
        setattr(self, total, getattr(self, total) - tier.get(prefix, 0) + tokens)
        tier[prefix] = tokens
        tier.move_to_end(prefix)

    def take_load(self) -> float:
        """The load time the step about to run waits for; cleared."""
        seconds, self.pending_load_s = self.pending_load_s, 0.0
        return seconds
