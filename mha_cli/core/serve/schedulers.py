"""Engine schedulers: which running and waiting requests one step computes, each rule read from the engine's source.

Every scheduler sees the same state (``EngineState``): requests waiting in arrival order, requests running in the
order admitted, the KV pool in blocks of ``block_size`` tokens (a request holding t tokens holds ceil(t / block)
blocks), and a token budget per step (``max_num_batched_tokens`` or its engine's name for it). A request's known
tokens are its prompt plus the tokens it has generated; the step computes some of them (a prefill chunk, or the one
token a decode adds) and samples the next token when it reaches the last.

- **vLLM V1** (``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``): running requests first, in order,
  each its remaining tokens up to the budget (a decode: 1, under speculative decoding 1 + its draft tokens,
  ``num_tokens_with_spec``; a chunked prefill: the rest of its prompt); when the pool
  cannot hold a running request's new tokens, the last admitted running request is preempted (its blocks freed,
  back to the front of the queue, recomputed: ``PreemptionMode.RECOMPUTE``), until it fits or the request itself
  was preempted. With prefix caching on, its whole computed blocks stay cached among the free ones; when it comes
  back it hits what the free queue has not yet handed out, and those blocks count against the pool beside its
  next chunk (``OwnBlocks``): near a full pool it waits instead of being admitted, preempted and admitted again.
  Then, if nothing was preempted this step, waiting requests first come first served while the budget lasts,
  fewer than ``max_num_seqs`` run and the pool holds the chunk (chunked prefill) and, from vLLM 0.19.0, the
  request's whole known tokens (``SchedulerConfig.scheduler_reserve_full_isl``, True by
  default: ``allocate_slots(full_sequence_must_fit=True)`` on the waiting path, ``KVCacheManager.allocate_slots``
  in 0.21.0, ``can_fit_full_sequence`` in 0.19.0; absent from 0.18.0, vllm-project/vllm#37307). Before it a long
  prompt was admitted on its first chunk, ran out of blocks part-way and was preempted, again and again.
  vLLM V0 (before 0.8) runs this loop too, with one rule of its own: a waiting request is admitted only when its
  whole prompt fits and leaves 1% of the pool free (``core/block_manager.py`` ``BlockSpaceManager.can_allocate``,
  ``watermark=0.01``; V1's ``SchedulerConfig.watermark``, from 0.24.0, is off by default).
- **SGLang** (``python/sglang/srt/managers/scheduler.py``, ``get_next_batch_to_run``; ``schedule_policy.py``,
  ``PrefillAdder``): a step is a prefill batch or a decode batch, never both (without ``--enable-mixed-chunk``);
  a prefill batch is formed whenever a waiting request can be admitted, and runs the unfinished chunked request
  first. A request is admitted when its prompt plus its output (clipped at 4,096) fits the pool after reserving,
  for every running request, its remaining output times ``new_token_ratio`` (0.7 at start, decaying by
  (0.7 - 0.098) / 600 a decode step to 0.098; reset to 0.7 on a retraction). Prompts longer than
  ``chunked_prefill_size`` are chunked. Out of memory in decode, the last admitted request is retracted.
- **TensorRT-LLM** (``cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp``, ``GUARANTEED_NO_EVICT``;
  ``microBatchScheduler.cpp``): in-flight batching, generation requests first, then context requests first come
  first served under ``max_num_tokens``; a request starts only when the pool can hold its whole prompt and output
  beside the running requests' remaining needs, so nothing is ever evicted; context chunking is off by default, so
  a prompt runs whole in one step (at most ``max_num_tokens``).

**Prefix caching** (on by default in all three: vLLM V1 ``enable_prefix_caching``, SGLang's radix cache,
TensorRT-LLM's ``enable_block_reuse``): requests that share their first ``prefix_len`` prompt tokens (a system
prompt) skip computing the part of it the cache holds. A request admitted with nothing computed starts at its hit:
the prefix's tokens cached, in whole blocks (a block's hash covers its tokens; a block that runs past the prefix is
the request's own), and short of its whole prompt (vLLM ``KVCacheManager.get_computed_blocks``: at most
``num_tokens - 1``, so one token is computed for the logits). vLLM caches a block when it allocates it
(``allocate_slots`` -> ``cache_blocks``), so a request admitted later in the same step hits what an earlier one is
computing; SGLang (radix tree insert after a prefill chunk) and TensorRT-LLM (blocks stored after the context step)
hold them once the step that computed them ends. vLLM's block pool and SGLang's radix cache hold the cached blocks
once (``share_blocks``, ``core.cost.prefix_pool``): a hit links them and takes blocks only for the rest, a block no
running request links stays cached among the free ones until a new block is taken (evicted, the tail first).
TensorRT-LLM's pool is priced as if each request held its own copy of the prefix (it too shares it): a floor.

**Sliding windows and states** (vLLM V1's hybrid allocator, no shared prefix): the pool is counted in blocks of one
KV cache group, a request holding its blocks in each; a sliding-window or chunked group gives back the blocks its
window left before each allocation, and from 0.21 asks at admission no more than the start-up sizer gave it; a
Mamba-state group holds one block (``core.engine.window_blocks``). Pure Python.
"""

import math
from bisect import bisect_right
from collections import Counter, deque
from typing import Literal, NamedTuple

from mha_cli.core.engine.window_blocks import WindowGroup, admission_blocks, held_blocks
from mha_cli.core.serve.free_queue import FreeQueue
from mha_cli.core.serve.offload import PrefixTiers
from mha_cli.core.serve.speculative import AcceptedTokens

EngineKind = Literal["vllm", "sglang", "trtllm"]

SGLANG_CLIP_MAX_NEW_TOKENS = 4096
"""SGLang's ``CLIP_MAX_NEW_TOKENS_ESTIMATION``: the output a new request reserves at most."""
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
"""SGLang's ``init_new_token_ratio`` (x ``schedule_conservativeness`` = 1)."""
SGLANG_MIN_NEW_TOKEN_RATIO = 0.7 * 0.14
"""``init_new_token_ratio`` x ``min_new_token_ratio_factor`` (0.14)."""
SGLANG_DECAY_STEPS = 600
"""``new_token_ratio_decay_steps``: decode steps from the initial ratio to the minimum."""


class OwnBlocks(NamedTuple):
    """A preempted request's blocks in vLLM V1's free queue. ``KVCacheManager.free`` returns them to its tail, the
    last block first, keeping the whole computed ones cached; ``BlockPool.get_new_blocks`` takes new blocks from the
    head, evicting what it takes; a hit takes its blocks out of the middle and counts them as blocks to allocate
    (``get_num_blocks_to_allocate``: hit blocks with ``ref_cnt == 0``) (vllm/v1/core, 0.11.0 and 0.21.0). So the
    request keeps its first ``cached`` blocks until the head has taken the ``ahead`` blocks queued before them and
    then its own tail."""

    cached: int
    """Whole blocks of its computed tokens, cached."""
    freed: int
    """Blocks it returned, partial and not yet computed ones included (they sit before the cached ones)."""
    ahead: int
    """Free blocks queued before its own when it was preempted."""
    released_then: int
    """``EngineState.released_blocks`` just after its own were returned."""
    reclaimed_then: int
    """``EngineState.reclaimed_blocks`` then."""

    def surviving(self, state: "EngineState") -> int:
        """Its cached blocks the head has not taken yet: the blocks taken from the head since it was preempted are
        what the queue held then, plus what was returned since, less what it holds now and what hits took back."""
        queued_since = state.released_blocks - self.released_then
        reclaimed_since = state.reclaimed_blocks - self.reclaimed_then
        taken = self.ahead + self.freed + queued_since - reclaimed_since - state.free_blocks
        evicted = min(self.freed, max(0, taken - self.ahead))
        return min(self.cached, self.freed - evicted)


class EngineState:
    """The engine's queues, pool and per-request progress (indices into the workload's requests)."""

    def __init__(
        self, prompts: list[int], outputs: list[int], *, blocks: int, block_size: int, budget: int, max_seqs: int
    ) -> None:
        self.prompts, self.outputs = prompts, outputs
        count = len(prompts)
        self.computed = [0] * count
        """Tokens of each request whose K/V are in the pool."""
        self.generated = [0] * count
        self.held = [0] * count
        """Blocks each request holds."""
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.busy: set[int] = set()
        """Running requests waiting for the token of a batch still in flight (pipeline parallelism,
        ``core.serve.pipelined``): no scheduler computes them again, nor preempts them, until it comes back."""
        self.order = [0] * count
        """When each request last entered ``running``: its place in the running order (``enter_running``)."""
        self.entries = 0
        """Admissions to ``running`` over the run (the next ``order``)."""
        self.scope: list[int] | None = None
        """SGLang under pipeline parallelism: the running requests of the micro-batch whose turn it is, in the running
        order (``core.serve.pipelined.MicroBatches.scope``), the only ones its scheduler computes or retracts this
        turn; None: every running request."""
        self.scope_set: set[int] | None = None
        """``scope`` as a set, for ``preempt_last``'s membership test (None with it)."""
        self.free_blocks, self.block_size, self.budget, self.max_seqs = blocks, block_size, budget, max_seqs
        self.total_blocks = blocks
        self.preemptions = 0
        self.whole_prompt_admission = False
        """vLLM 0.19+: a waiting request is admitted only when the pool holds all its known tokens
        (``core.engine.vllm_rule_releases.admits_whole_prompt``); False: when it holds the step's chunk."""
        self.decode_tokens = 1
        """Tokens a running decode takes of the step's budget: 1, or 1 + its draft tokens under speculative decoding
        in vLLM V1 (``num_tokens_with_spec``, as many as the budget leaves) and TensorRT-LLM (``MicroBatchScheduler``:
        beam width + ``getNumDraftTokens``); SGLang's and vLLM V0's decodes take 1 (``EngineLimits.drafts_in_budget``)."""
        self.accepted: AcceptedTokens | None = None
        """Under speculative decoding, the tokens each decode step keeps (``core.serve.speculative``); None: one."""
        self.undrafted: set[int] = set()
        """Under speculative decoding, requests with no draft tokens to verify: vLLM clears a preempted request's
        (``Scheduler._preempt_request``, 0.21.0), so its next decode step, if it comes back as one, keeps 1 token."""
        self.lookahead = 0
        """vLLM under speculative decoding: slots a running request's step allocates past its scheduled tokens for
        the drafter (``num_lookahead_tokens``, k; ``core.serve.speculative``); 0 elsewhere."""
        self.admission_lookahead = 0
        """Of them, those an admitted request's first step allocates (vLLM 0.23+: all, review 331 #1; 0 before)."""
        self.watermark_blocks = 0
        """vLLM V0: blocks a waiting request must leave free, its whole prompt held, to be admitted
        (``BlockSpaceManager.can_allocate``, ``core.engine.vllm_rule_releases.admission_watermark``); 0: none."""
        self.new_token_ratio = SGLANG_INIT_NEW_TOKEN_RATIO
        self.prefix_len = 0
        """Prompt tokens every request shares, when the engine caches prefixes (0: nothing to hit)."""
        self.prefix_cached = 0
        """Of them, the tokens whose blocks the cache holds (whole blocks)."""
        self.cache_at_allocation = False
        """vLLM: blocks are cached as they are allocated; the others cache them once computed."""
        self.hit_tokens = 0
        """Prompt tokens served from the prefix cache over the run (vLLM's "Prefix cache hit rate" numerator)."""
        self.queried_tokens = 0
        """Prompt tokens looked up in the cache over the run (the rate's denominator): vLLM's at every try of a
        waiting request (``try_waiting``), the others' once each time a request enters the queue (``start``)."""
        self.counts_preempted_lookups = True
        """Whether a preempted request's lookups count in the rate when it restarts (vLLM before 0.12, the other
        engines); False: vLLM 0.12+, which keeps them apart (``vllm_rule_releases.counts_preempted_lookups``)."""
        self.counts_at_admission = False
        """vLLM 0.27+: a waiting request's lookup is counted once, when it is admitted (``vllm_admit``), not at every
        try (``vllm_rule_releases.counts_lookups_at_admission``)."""
        self.was_preempted = [False] * count
        self.counted = [False] * count
        """SGLang, TensorRT-LLM: whether the request's lookup since it last entered the queue is counted."""
        self.tiers: PrefixTiers | None = None
        """Several prefixes, or a host tier (``core.serve.offload``): they decide the hits instead of the one shared
        prefix above."""
        self.share_blocks = False
        """vLLM and SGLang: a hit's blocks are the cache's own, held once however many requests reference them
        (``core.cost.prefix_pool``); False: each request holds a copy (the floor)."""
        self.linked = [0] * count
        """Of each request's blocks (``held``), the leading ones that are the cache's shared blocks (its hit, and the
        prefix blocks it computed that became the cache's)."""
        self.holders: dict[int, Counter[int]] = {}
        """Prefix -> how many running requests link how many of its blocks."""
        self.shared_held = 0
        """Blocks the shared prefixes hold in the pool: for each, the most any running request links."""
        self.free_queue: FreeQueue | None = None
        """Several shared prefixes held once (``tiers`` and ``share_blocks``): where their unreferenced blocks sit in
        the free queue, which evicts them as its head reaches them (``core.serve.free_queue``)."""
        self.queue_appended = 0
        """Blocks returned to the free queue's tail over the run (``release``)."""
        self.queue_reclaimed = 0
        """Cached prefix blocks a hit took back out of the free queue's middle over the run."""
        self.host_part = [0] * count
        """With ``tiers``: of each request's hit at its last lookup, the tokens loaded from the host (counted in the
        host hit rate with the lookup, as the hit rate counts it: review 324 #6)."""
        self.hit_at = [0] * count
        """With ``tiers``: each request's hit at its last lookup, less what was evicted before it was admitted (the
        host tier stores its blocks from there on)."""
        self.loading: dict[int, int] = {}
        """Prefix -> the tokens of it on the GPU when a waiting request's lookup loaded the rest from the host tier:
        the GPU tier entry keeps the loaded tokens above them until that request links them, while those tokens stay
        cached (``settle``)."""
        self.caches_own_blocks = False
        """vLLM V1 with prefix caching and no shared prefix: a preempted request's own computed blocks stay cached
        among the free ones and it hits what survives of them when it comes back (``OwnBlocks``)."""
        self.own_blocks: dict[int, OwnBlocks] = {}
        """Preempted request -> its cached blocks in the free queue (``caches_own_blocks``)."""
        self.own_hit = [0] * count
        """Of a waiting request's computed tokens, the blocks its own cached blocks serve (taken back when it is
        admitted: ``grow``)."""
        self.released_blocks = 0
        """Blocks returned to the free queue over the run (its tail)."""
        self.reclaimed_blocks = 0
        """Cached blocks taken back out of the free queue's middle by their own request over the run."""
        self.window_groups: tuple[WindowGroup, ...] = ()
        """vLLM's KV cache groups where some are sliding-window, chunked or state ones (``core.engine.window_blocks``): the
        pool's blocks are then blocks of one group, a request holding its blocks in each; empty: a block holds one
        block of tokens in every group, as a request takes them where no group frees any."""
        self.caps_window_admission = False
        """vLLM 0.21+: a windowed group's ask at admission is capped at the start-up sizer's
        (``core.engine.vllm_rule_releases.caps_window_admission``)."""
        self.window_free_lags = False
        """vLLM 0.26+ with batches in flight: a windowed group frees behind the tokens processed, a request's
        computed less those its last step scheduled (``in_flight``)."""
        self.in_flight = [0] * count
        """With ``window_free_lags``: the tokens each request's last allocation was for, still in flight at its next."""

    def start(self, request: int) -> None:
        """SGLang, TensorRT-LLM: ``request`` is tried: with nothing computed yet, it starts at its prefix-cache hit;
        the lookup is counted in the hit rate once each time the request enters the queue (a request sent back to
        wait keeps its hit, or its miss, uncounted; a preempted one is counted again when it restarts)."""
        if self.prefix_len and not self.computed[request]:
            self._look_up(request)
        if self.prefix_len and not self.counted[request]:
            self.count_lookup(request)

    def try_waiting(self, request: int) -> None:
        """vLLM tries waiting ``request`` this step: it starts at its prefix-cache hit, looked up and counted in the
        hit rate at every try, a request sent back to wait counted again at its next (v1 ``Scheduler.schedule`` calls
        ``KVCacheManager.get_computed_blocks`` for a waiting request with ``num_computed_tokens == 0``, which records
        ``num_tokens`` and the hit in ``PrefixCacheStats`` before ``allocate_slots`` may refuse it: 0.8.5, 0.11.0,
        0.21.0; from 0.27 counted once, when admitted: ``counts_at_admission``); a preempted request's tries only
        where ``counts_preempted_lookups``. Without a host tier the lookup is redone (the hit may have grown or been
        evicted since); with one the hit found first is kept (a lookup there loads it back, ``core.serve.offload``).
        A preempted request first looks up its own cached blocks (``caches_own_blocks``)."""
        if self.caches_own_blocks:
            self._look_up_own(request)
        if not self.prefix_len:
            return
        if self.tiers is None and not self.held[request]:
            self.computed[request] = self.linked[request] = 0  # a waiting request holds nothing but its hit
        if not self.computed[request]:
            self._look_up(request)
        if self.counts_this(request) and not self.counts_at_admission:
            self.count_lookup(request)

    def counts_this(self, request: int) -> bool:
        """Whether ``request``'s lookups count in the hit rate (a preempted one's only where
        ``counts_preempted_lookups``)."""
        return self.counts_preempted_lookups or not self.was_preempted[request]

    def _look_up(self, request: int) -> None:
        """``request``, with nothing computed, starts at its hit: the prefix's tokens the cache holds, whole blocks,
        short of its whole prompt (the prompt is what it shares; a preempted request's output is its own)."""
        limit = (self.prompts[request] - 1) // self.block_size * self.block_size
        if self.tiers is not None:
            self.settle(request)
            in_use = frozenset(prefix for prefix, counts in self.holders.items() if counts)
            hit = self.tiers.lookup(request, limit, self.free_blocks + self.shared_held, in_use)
            self.hit_at[request], self.host_part[request] = hit, self.tiers.loaded
            if self.free_queue is not None and self.tiers.loaded:
                self.loading[self.tiers.prefix_of(request)] = hit - self.tiers.loaded
        else:
            hit = min(self.prefix_cached, limit)
        self.computed[request] = hit
        self.linked[request] = hit // self.block_size if self.share_blocks else 0

    def _look_up_own(self, request: int) -> None:
        """Waiting ``request``, preempted earlier, starts at what survives of its own cached blocks, short of its
        known tokens (``get_computed_blocks`` hits at most ``num_tokens - 1``). Not counted in the hit rate: the
        simulator reports one only for a shared prefix."""
        own = self.own_blocks.get(request)
        if own is None or self.held[request]:
            return
        limit = (self.known(request) - 1) // self.block_size
        hit = min(own.surviving(self), limit)
        self.own_hit[request] = hit
        self.computed[request] = hit * self.block_size

    def count_lookup(self, request: int) -> None:
        """One lookup of waiting ``request`` in the hit rate: its known tokens queried (its prompt, and a preempted
        one's output so far: vLLM's ``PrefixCacheStats`` records ``request.num_tokens``, review 321 #6), its hit
        served."""
        self.hit_tokens += self.computed[request]
        self.queried_tokens += self.known(request)
        if self.tiers is not None:
            self.tiers.host_hit_tokens += min(self.host_part[request], self.computed[request])
        self.counted[request] = True

    def take_load(self) -> float:
        """Seconds the next step waits for prefixes loaded back from the host tier (0 without one)."""
        return 0.0 if self.tiers is None else self.tiers.take_load()

    def cache_prefix(self, tokens: int, request: int = 0) -> None:
        """``request``'s first ``tokens`` tokens are computed (or, ``cache_at_allocation``, allocated): the prefix's
        whole blocks among them enter the cache. Sharing blocks, a running request that links the whole cached run
        hands its new prefix blocks to the cache (vLLM ``cache_full_blocks`` hashes the request's own blocks); one
        that computed a part already cached keeps its copy (vLLM keeps both, ``BlockPool`` does not de-duplicate)."""
        before = self.cached_blocks(request)
        if self.tiers is not None:
            self.tiers.store(request, tokens, self.hit_at[request])
        elif tokens > self.prefix_cached and self.prefix_len:
            whole = min(tokens, self.prefix_len) // self.block_size * self.block_size
            self.prefix_cached = max(self.prefix_cached, whole)
        after = self.cached_blocks(request)
        if self.share_blocks and after > before and self.held[request] and self.linked[request] == before:
            self._relink(request, min(after, self.held[request]))

    def group_of(self, request: int) -> int:
        """The prefix ``request`` carries (0 with one shared prefix)."""
        return 0 if self.tiers is None else self.tiers.prefix_of(request)

    def cached_blocks(self, request: int) -> int:
        """Whole blocks of ``request``'s prefix the GPU cache holds."""
        if self.tiers is None:
            return self.prefix_cached // self.block_size
        return self.tiers.gpu.get(self.tiers.prefix_of(request), 0) // self.block_size

    def queue_warm(self, request: int) -> None:
        """With ``free_queue``: ``request``'s prefix, cached before the run, sits at the free queue's tail, behind the
        prefixes warmed before it (called in the prefixes' order)."""
        if self.free_queue is None or self.tiers is None:
            return
        self.free_queue.warm(self.tiers.prefix_of(request), self.cached_blocks(request), self.total_blocks)

    def queue_pops(self) -> int:
        """Blocks the free queue's head has handed out over the run: what it held at the start and what came back,
        less what hits took out of its middle and what it holds now."""
        return self.total_blocks + self.queue_appended - self.queue_reclaimed - self.free_blocks

    def settle(self, request: int) -> None:
        """Where the free queue orders evictions (``free_queue``): ``request``'s prefix's GPU tier entry cut to the
        blocks the queue's head has not taken, before it is looked up or linked (``core.serve.free_queue``)."""
        if self.free_queue is None or self.tiers is None:
            return
        prefix = self.tiers.prefix_of(request)
        if not any(run.prefix == prefix for run in self.free_queue.runs):
            return  # held by running requests, or just computed or loaded back: nothing of it in the queue
        linked = max(self.holders.get(prefix, ()), default=0)
        cached = self.free_queue.settle(prefix, linked, self.queue_pops()) * self.block_size
        if prefix in self.loading and cached >= self.loading[prefix]:
            return  # the tokens loaded from the host sit above a GPU part still cached
        self.loading.pop(prefix, None)  # the GPU part below them was evicted (review 325 #2): the load is lost too
        self.tiers.cut(prefix, cached)

    def _relink(self, request: int, blocks: int) -> None:
        """``request`` links ``blocks`` of its prefix's shared blocks (0: none) instead of what it linked; the pool's
        free blocks change by what its own blocks and the prefix's held blocks change."""
        group = self.group_of(request)
        counts = self.holders.setdefault(group, Counter())
        top = max(counts, default=0)
        if self.linked[request]:
            counts[self.linked[request]] -= 1
            if not counts[self.linked[request]]:
                del counts[self.linked[request]]
        if blocks:
            counts[blocks] += 1
        new_top = max(counts, default=0)
        self.free_blocks += (blocks - self.linked[request]) - (new_top - top)
        self.shared_held += new_top - top
        self.linked[request] = blocks

    def evict_unreferenced(self) -> None:
        """The one prefix's cached blocks no running request links sit in the free queue (SGLang: evictable) and go
        as new blocks are taken (``BlockPool.get_new_blocks`` -> ``_maybe_evict_cached_block``), the tail first (a
        request's blocks are freed tail first): the cache keeps what the linked blocks and the free blocks cover. With
        several prefixes or a host tier the free queue's order evicts them (``settle``; TensorRT-LLM's tiers evict
        whole prefixes at lookup, ``core.serve.offload``)."""
        if self.share_blocks and self.tiers is None:
            kept = self.shared_held + self.free_blocks
            if self.prefix_cached > kept * self.block_size:
                self.prefix_cached = kept * self.block_size

    def known(self, request: int) -> int:
        """Tokens the request has: its prompt and what it has generated."""
        return self.prompts[request] + self.generated[request]

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def decode_slots(self, request: int, before: int = 0) -> int:
        """Slots ``request``'s decode step after ``before`` more ones holds past its computed tokens and the one it
        adds: none; under speculative decoding vLLM's scheduled and lookahead slots (the k + 1 tokens a step can keep
        among them), elsewhere the rest of the tokens it keeps (``core.serve.speculative``)."""
        if self.accepted is None:
            return 0
        if self.lookahead:
            return self.decode_tokens + self.lookahead - 1
        left = self.outputs[request] - self.generated[request]
        return self.accepted.after(request, before + 1, left) - self.accepted.after(request, before, left) - 1

    def grow(self, request: int, tokens: int, slots: int = 0) -> bool:
        """Hold blocks for ``tokens`` of ``request`` and ``slots`` past them (speculative decoding's, which cache
        nothing: ``decode_slots``); False (nothing taken) when the pool lacks them. Sharing
        blocks, a request's first blocks are its hit, linked rather than taken: only those no running request
        links leave the free queue (vLLM ``get_num_blocks_to_allocate``: the hit's blocks with ``ref_cnt == 0``).
        With windowed groups, the blocks their windows left go back first (``core.engine.window_blocks``)."""
        if self.window_groups:
            return self._grow_windowed(request, tokens + slots)
        more = self.blocks_for(tokens + slots) - self.held[request]
        link = 0
        if self.share_blocks and not self.held[request] and self.linked[request]:
            link = self._hit_blocks(request)
            more -= link
            if more + self._taken_with(request, link) > self.free_blocks:
                return False
            self.linked[request], self.held[request] = 0, link
            if self.free_queue is not None:  # the hit's queued blocks come out of the queue's middle
                top = max(self.holders.get(self.group_of(request), ()), default=0)
                if link > top:
                    self.queue_reclaimed += self.free_queue.reclaim(self.group_of(request), link, self.queue_pops())
                self.loading.pop(self.group_of(request), None)
            self.free_blocks -= link  # taken as its own, then handed to the prefix: only ``taken`` leaves the queue
            self._relink(request, link)
        elif more > self.free_blocks:
            return False
        if self.caches_own_blocks and not self.held[request]:  # admitted: its hit out of the queue's middle
            self.reclaimed_blocks += self.own_hit[request]
            self.own_hit[request] = 0
            self.own_blocks.pop(request, None)
        if more > 0:
            self.free_blocks -= more
            self.held[request] += more
        if self.cache_at_allocation and tokens > self.prefix_cached:
            self.cache_prefix(tokens, request)
        self.evict_unreferenced()
        return True

    def _grow_windowed(self, request: int, tokens: int) -> bool:
        """``grow`` over windowed groups: the request's blocks for ``tokens`` less those its windows skipped at its
        computed tokens (no prefix is shared in this mode: ``core.serve.simulate``)."""
        computed = self.computed[request]
        processed = computed - self.in_flight[request] if self.window_free_lags else computed
        held = held_blocks(self.window_groups, tokens, max(0, processed), self.block_size)
        more = held - self.held[request]
        if more > self.free_blocks:
            return False
        self.free_blocks -= more
        self.held[request] = held
        self.in_flight[request] = tokens - computed
        return True

    def windowed_decode_grows(self, request: int, steps: int) -> list[tuple[int, int]]:
        """(step, blocks held) after each allocation ``_vllm`` makes for ``request`` over its next ``steps`` decode
        steps (numbered from 1), the first one's already made: a decode allocates only when its computed tokens fill
        whole blocks (a new block; the windows' skipped ones freed then), as ``_grow_windowed`` does, one token in
        flight after each. Nothing changes: ``windowed_decode_excess`` and ``advance_windowed_decodes`` read it."""
        grows = []
        computed, in_flight, size = self.computed[request], self.in_flight[request], self.block_size
        first = computed + 1 + (-(computed + 1)) % size  # the first whole-block count after the first step
        for done in range(first, computed + steps, size):
            processed = done - in_flight if self.window_free_lags else done
            in_flight = 1
            grows.append((done - computed + 1, held_blocks(self.window_groups, done + 1, max(0, processed), size)))
        return grows

    def windowed_decode_excess(self, request: int, grows: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
        """The most blocks beyond those it holds now ``request`` holds at any point of its next k decode steps
        (windowed groups; ``grows``: ``windowed_decode_grows``), as (``at``, ``most``): from step ``at[i]`` on the
        most is ``most[i]`` (0 before ``at[0]``), one entry each time it rises. k such steps of every running request
        fit when the sum of theirs is at most the free blocks, whatever order their allocations and frees come in."""
        at, most, excess, held_now = [], [], 0, self.held[request]
        for step, held in grows:
            if held - held_now > excess:
                excess = held - held_now
                at.append(step)
                most.append(excess)
        return at, most

    def advance_windowed_decodes(self, request: int, grows: list[tuple[int, int]], steps: int) -> None:
        """``request``'s blocks after ``steps`` decode steps (windowed groups), each allocation fitting
        (``windowed_decode_excess``): as ``steps`` calls of ``_vllm`` leave them, from ``grows``
        (``windowed_decode_grows`` over at least ``steps``); its tokens are the caller's."""
        made = bisect_right(grows, (steps, math.inf))  # the allocations of the first ``steps`` steps
        if made:
            held = grows[made - 1][1]
            self.free_blocks -= held - self.held[request]
            self.held[request] = held
            self.in_flight[request] = 1

    def _taken_with(self, request: int, link: int) -> int:
        """Of ``link`` hit blocks ``request`` would link, those that leave the free queue: the ones no running
        request links yet."""
        return max(0, link - max(self.holders.get(self.group_of(request), ()), default=0))

    def holds_whole(self, request: int, keep: int = 0) -> bool:
        """Whether the pool could hold all of waiting ``request``'s known tokens now, its hit linked, nothing
        taken, and still have ``keep`` blocks free (vLLM ``allocate_slots(full_sequence_must_fit=True)``: the blocks
        for ``request.num_tokens`` less the hit's blocks already in use, against the free blocks, evictable cached
        ones included; V0 ``can_allocate``: the prompt's blocks and the watermark; windowed groups:
        ``window_blocks.admission_blocks``)."""
        if self.window_groups:
            ask = admission_blocks(
                self.window_groups, self.known(request), self.block_size, capped=self.caps_window_admission
            )
            return ask - self.held[request] + keep <= self.free_blocks
        more = self.blocks_for(self.known(request)) - self.held[request]
        if self.share_blocks and not self.held[request] and self.linked[request]:
            self.settle(request)
            link = min(self.linked[request], self.cached_blocks(request))
            more += self._taken_with(request, link) - link
        return more + keep <= self.free_blocks

    def _hit_blocks(self, request: int) -> int:
        """The blocks of ``request``'s hit still cached now (a waiting request's hit may have been evicted since it
        was looked up: what is gone is computed again)."""
        self.settle(request)
        link = min(self.linked[request], self.cached_blocks(request))
        lost = (self.linked[request] - link) * self.block_size
        if lost:
            self.computed[request] -= lost
            if self.counts_this(request) and not self.counts_at_admission:
                self.hit_tokens -= lost  # its last counted lookup found them
            self.linked[request] = link
            self.hit_at[request] = link * self.block_size  # the host stores what it computes again (review 325 #3)
            self.host_part[request] = min(self.host_part[request], self.computed[request])
        return link

    def release(self, request: int) -> None:
        """``request``'s blocks go back: its own ones, and the prefix's it linked once no other request links them
        (they stay cached, evictable: ``evict_unreferenced`` for the one prefix; with several, at the free queue's tail
        behind its own blocks, ``free_queue``)."""
        pops, before = self.queue_pops(), self.free_blocks
        self.free_blocks += self.held[request]  # its own blocks go to the queue's tail before the prefix's
        if self.held[request] and self.linked[request]:
            shared = self.shared_held
            self._relink(request, 0)
            freed = shared - self.shared_held  # the prefix's blocks no running request links any more
            if freed and self.free_queue is not None:
                start = max(self.holders.get(self.group_of(request), ()), default=0)
                self.free_queue.append(self.group_of(request), start, freed, pops=pops, ahead=self.free_blocks - freed)
        self.linked[request] = 0
        self.queue_appended += self.free_blocks - before
        self.released_blocks += self.held[request]
        self.held[request] = 0
        self.in_flight[request] = 0

    def decay_ratio(self, steps: int = 1) -> None:
        """SGLang: ``steps`` decode steps' decay of ``new_token_ratio`` toward its minimum."""
        step = (SGLANG_INIT_NEW_TOKEN_RATIO - SGLANG_MIN_NEW_TOKEN_RATIO) / SGLANG_DECAY_STEPS
        self.new_token_ratio = max(SGLANG_MIN_NEW_TOKEN_RATIO, self.new_token_ratio - steps * step)

    def enter_running(self, request: int) -> None:
        """``request`` is admitted: it runs after every running request (``order``)."""
        self.running.append(request)
        self.order[request] = self.entries
        self.entries += 1

    def preempt_last(self) -> int:
        """Preempt the last admitted running request by recompute (of those not ``busy``, and in ``scope`` where one
        is set): its blocks freed, to the front of the queue."""
        if self.busy or self.scope_set is not None:
            scope = self.scope_set
            victim = next(r for r in reversed(self.running) if r not in self.busy and (scope is None or r in scope))
            self.running.remove(victim)
        else:
            victim = self.running.pop()
        if self.caches_own_blocks:
            cached = min(self.computed[victim] // self.block_size, self.held[victim])
            ahead = self.free_blocks
            freed = self.held[victim]
            self.release(victim)
            self.own_blocks[victim] = OwnBlocks(cached, freed, ahead, self.released_blocks, self.reclaimed_blocks)
        else:
            self.release(victim)
        self.computed[victim] = 0
        self.counted[victim] = False
        self.was_preempted[victim] = True
        if self.accepted is not None:
            self.undrafted.add(victim)
        self.waiting.appendleft(victim)
        self.preemptions += 1
        return victim


Plan = tuple[list[int], list[tuple[int, int]]]
"""One step: (decoding requests, (request, tokens) prefill chunks)."""


def schedule(engine: EngineKind, state: EngineState) -> Plan:
    """The requests ``engine`` computes in its next step (see the module docstring)."""
    if engine == "sglang":
        return _sglang(state)
    if engine == "trtllm":
        return _trtllm(state)
    return _vllm(state)


def _vllm(state: EngineState) -> Plan:
    budget = state.budget
    decodes: list[int] = []
    chunks: list[tuple[int, int]] = []
    preempted = False
    computed, prompts, generated, size = state.computed, state.prompts, state.generated, state.block_size
    decode_tokens, lookahead = state.decode_tokens, state.lookahead
    speculative = state.accepted is not None
    # the running requests not in a batch in flight, in order; a preemption takes the last of them
    # (``preempt_last``), so those still running are always the first ``end``
    free = [r for r in state.running if r not in state.busy] if state.busy else state.running
    end, index = len(free), 0
    while index < end and budget > 0:
        request = free[index]
        done = computed[request]
        remaining = prompts[request] + generated[request] - done
        tokens = remaining if remaining < budget else budget  # min(): this loop runs once a request a step
        decode = tokens == 1 and done >= prompts[request]
        if decode and done % size and not speculative:  # a decode inside its last block: no block
            decodes.append(request)
            budget = budget - decode_tokens if decode_tokens < budget else 0
            index += 1
            continue
        # under speculative decoding, the step's slots past its tokens (``EngineState.decode_slots``)
        while not state.grow(request, done + tokens, state.decode_slots(request) if decode else lookahead):
            preempted = True
            end -= 1
            if state.preempt_last() == request:
                break
        else:
            if decode:
                decodes.append(request)
                tokens = min(decode_tokens, budget)  # its draft tokens too (vLLM V1)
            else:
                chunks.append((request, tokens))
            budget -= tokens
            index += 1
            continue
        break  # the request itself was preempted
    if preempted:
        return decodes, chunks
    for request, tokens in vllm_admit(state, budget):
        if tokens == 1 and computed[request] >= prompts[request]:  # back with all but its last token cached
            decodes.append(request)
        else:
            chunks.append((request, tokens))
    return decodes, chunks


def vllm_admit(state: EngineState, budget: int) -> list[tuple[int, int]]:
    """vLLM's waiting requests admitted in a step that preempted none: first come first served while ``budget``
    tokens, ``max_num_seqs`` and the pool's blocks last (a prompt chunked to the budget left; from 0.19 the pool
    must hold the whole of it: ``EngineState.whole_prompt_admission``; V0's whole prompt and its watermark too:
    ``EngineState.watermark_blocks``). (request, tokens)."""
    admitted = []
    while state.waiting and budget > 0 and len(state.running) < state.max_seqs:
        request = state.waiting[0]
        state.try_waiting(request)
        whole = state.whole_prompt_admission or state.watermark_blocks
        if whole and not state.holds_whole(request, state.watermark_blocks):
            break
        tokens = min(state.known(request) - state.computed[request], budget)
        if not state.grow(request, state.computed[request] + tokens, state.admission_lookahead):
            break
        state.waiting.popleft()
        state.enter_running(request)
        if state.counts_at_admission and state.prefix_len and state.counts_this(request):
            state.count_lookup(request)  # the hit it is admitted with
        admitted.append((request, tokens))
        budget -= tokens
    return admitted


def _sglang(state: EngineState) -> Plan:
    chunks: list[tuple[int, int]] = []
    budget = state.budget
    members = state.running if state.scope is None else state.scope
    computed, prompts, generated, busy = state.computed, state.prompts, state.generated, state.busy
    # an unfinished chunked prefill goes on first
    for request in members:
        if request in busy:
            continue
        done = computed[request]
        remaining = prompts[request] + generated[request] - done  # ``known`` less ``done``, inlined (a call saved)
        if remaining > 1 or done < prompts[request]:
            tokens = min(remaining, budget)
            if tokens > 0 and state.grow(request, done + tokens):
                chunks.append((request, tokens))
                budget -= tokens
    admits = state.waiting and budget > 0 and len(state.running) < state.max_seqs  # the loop's condition, below
    reserved = sum(  # the running requests' reserve, O(running): summed only where one may be admitted
        min(state.outputs[r] - state.generated[r], SGLANG_CLIP_MAX_NEW_TOKENS) * state.new_token_ratio
        for r in state.running
    ) if admits else 0.0  # fmt: skip
    room = state.free_blocks * state.block_size - reserved
    while state.waiting and budget > 0 and len(state.running) < state.max_seqs:
        request = state.waiting[0]
        state.start(request)
        remaining = state.known(request) - state.computed[request]
        need = remaining + min(state.outputs[request] - state.generated[request], SGLANG_CLIP_MAX_NEW_TOKENS)
        if need >= room:
            break
        tokens = min(remaining, budget)
        if not state.grow(request, state.computed[request] + tokens):
            break
        state.waiting.popleft()
        state.enter_running(request)
        chunks.append((request, tokens))
        budget -= tokens
        room -= need
    if chunks:
        return [], chunks
    decodes: list[int] = []
    retracted: set[int] = set()  # a set, not ``in state.running``: a list's lookup made each step O(running^2)
    held, size = state.held, state.block_size
    # then ``grow`` of a decode only takes its blocks, for one token
    plain = not state.window_groups and not state.share_blocks and state.accepted is None
    for request in list(members):
        if request in retracted or request in busy:
            continue  # retracted below, or its last token still in flight
        more = (computed[request] + size) // size - held[request]  # the blocks of computed + 1 tokens, less its own
        if plain and more <= state.free_blocks:  # ``grow``, inlined: SGLang's page of 1 grows every decode
            if more > 0:
                state.free_blocks -= more
                held[request] += more
            decodes.append(request)
            continue
        while not state.grow(request, computed[request] + 1, state.decode_slots(request)):
            victim = state.preempt_last()
            retracted.add(victim)
            state.new_token_ratio = SGLANG_INIT_NEW_TOKEN_RATIO
            if victim == request:
                break
        else:
            decodes.append(request)
    state.decay_ratio()
    return decodes, []


def _trtllm(state: EngineState) -> Plan:
    budget = state.budget
    decodes = [r for r in state.running if r not in state.busy]  # their blocks were reserved whole at admission
    for request in decodes:
        state.grow(request, state.computed[request] + 1, state.decode_slots(request))
    budget -= len(decodes) * state.decode_tokens
    chunks: list[tuple[int, int]] = []
    if not state.waiting or len(state.running) >= state.max_seqs:  # the admission loop's condition, negated
        return decodes, chunks  # none to admit: the running requests' reserve, O(running), is not summed
    reserved = sum(state.blocks_for(state.prompts[r] + state.outputs[r]) - state.held[r] for r in state.running)
    while state.waiting and len(state.running) < state.max_seqs:
        request = state.waiting[0]
        whole = state.blocks_for(state.prompts[request] + state.outputs[request])
        state.start(request)
        prompt = state.prompts[request] - state.computed[request]
        if prompt > budget or whole > state.free_blocks - reserved:
            break
        state.waiting.popleft()
        state.enter_running(request)
        state.grow(request, state.prompts[request])
        reserved += whole - state.held[request]
        chunks.append((request, prompt))
        budget -= prompt
    return decodes, chunks
