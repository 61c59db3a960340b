"""The serving loop, step by step: a benchmark client's requests through one engine replica's scheduler, each step
priced by the cost model.

The loop: requests enter the engine when the client sends them (``core.serve.workload``); the engine's scheduler
(``core.serve.schedulers``) picks the step's decodes and prefill chunks; the step takes the cost model's time on
that mix (``core.serve.step_cost``); at its end every request whose known tokens are all computed samples a token
(its first, or the next), and a request that has all its output leaves, freeing its blocks and, in a closed loop,
its user's slot. Two shortcuts keep 10,000 requests under a second without changing any figure (tested against
the step-by-step loop): under vLLM's scheduler the decoding requests advance as a cohort (``core.serve.cohort``),
so a step costs the requests that start or end in it; under SGLang's and TensorRT-LLM's, steps in which the same
requests only decode, with nothing new able to start, repeat until the next event (a request ends or arrives, the
pool runs out) without visiting each request.

What comes out is what ``vllm bench serve`` reports: per request TTFT (from send to first token), TPOT ((e2e -
TTFT) / (output - 1)), end-to-end latency, and every inter-token gap (ITL); their mean, median, p90 and p99;
request, output and total token throughput over the run's duration (first send to last token). Pure Python.
"""

import heapq
from bisect import bisect_right
from typing import TYPE_CHECKING, NamedTuple

from pydantic import Field

from mha_cli.core.cost.prefix_pool import shares_prefix_blocks
from mha_cli.core.engine.window_blocks import (
    NULL_BLOCKS,
    WindowGroup,
    admission_blocks,
    sizer_blocks,
    window_groups_of,
)
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record, empty_list
from mha_cli.core.serve.cohort import Cohort, schedule_together
from mha_cli.core.serve.free_queue import FreeQueue
from mha_cli.core.serve.offload import PrefixTiers
from mha_cli.core.serve.recv_interval import RecvSkipper
from mha_cli.core.serve.schedulers import EngineKind, EngineState, schedule
from mha_cli.core.serve.speculative import AcceptedTokens
from mha_cli.core.serve.stats import LatencyStats, summarise, summarise_weighted
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload

if TYPE_CHECKING:
    from mha_cli.core.engine.plan import EnginePlan

MAX_TRACE_POINTS = 2000
"""Points of the running / queued / pool trace kept (``--plot``); longer runs keep every n-th."""


class EngineLimits(NamedTuple):
    """One replica's scheduler settings and KV pool (``core.engine``'s plan gives them)."""

    engine: EngineKind
    kv_blocks: int
    block_size: int
    max_num_batched_tokens: int
    max_num_seqs: int
    prefix_caching: bool = True
    """The engine reuses cached prefixes (on by default in vLLM V1, SGLang and TensorRT-LLM's PyTorch backend)."""
    host_blocks: int = 0
    """KV offload: the host pool in blocks of ``block_size`` (``core.serve.offload``); 0: none."""
    load_s_per_token: float = 0.0
    """KV offload: seconds one token takes to load back from the host."""
    shares_prefix_blocks: bool = False
    """The pool holds a cached prefix's blocks once, however many requests reference them (vLLM V1, SGLang:
    ``core.cost.prefix_pool``); False: each request its own copy (the floor)."""
    window_groups: tuple[WindowGroup, ...] = ()
    """vLLM V1's KV cache groups where some are sliding-window, chunked or state ones (``core.engine.window_blocks``);
    empty: none, or groups the simulator counts as full ones."""
    group_blocks: int = 0
    """With ``window_groups``: the pool's usable blocks, each a block of one group (the null block out);
    ``kv_blocks`` is then the pool as the start-up sizer counts requests of max_model_len, in blocks of every group,
    for a run that shares a prefix (whose hits the simulator counts in every group)."""
    caps_window_admission: bool = False
    """vLLM 0.21+: a windowed group's ask at admission capped at the start-up sizer's."""
    window_free_lags: bool = False
    """vLLM 0.26+ with batches in flight: a windowed group frees behind the tokens processed, not scheduled."""
    whole_prompt_admission: bool = True
    """vLLM 0.19+ admits a waiting request only when the pool holds its whole prompt
    (``core.engine.vllm_rule_releases.admits_whole_prompt``); False: on its first chunk (0.8-0.18)."""
    watermark_blocks: int = 0
    """vLLM V0: blocks a waiting request must leave free to be admitted, its whole prompt held (int(0.01 x the
    pool), ``core.engine.vllm_rule_releases.admission_watermark``); 0: none (V1 by default, the other engines)."""
    counts_preempted_lookups: bool = False
    """vLLM 0.8-0.11 counts a preempted request's prefix-cache lookups in its hit rate again; from 0.12 it keeps them
    apart (``core.engine.vllm_rule_releases.counts_preempted_lookups``). The other engines count them."""
    counts_lookups_at_admission: bool = False
    """vLLM 0.27+ counts a waiting request's prefix-cache lookup in its hit rate once, when it is admitted
    (``core.engine.vllm_rule_releases.counts_lookups_at_admission``); False: at every try (vLLM before 0.27)."""
    caches_preempted_blocks: bool = False
    """vLLM V1: with prefix caching on, a preempted request's computed blocks stay cached until evicted and it hits
    them when it comes back (``core.serve.schedulers.OwnBlocks``); False: V0 (its cache off by default), the other
    engines (SGLang frees a retracted request's tokens, TensorRT-LLM never evicts), or a hand-built pool."""
    recv_interval: int = 1
    """SGLang's ``--scheduler-recv-interval``: a request that reaches the engine while it decodes joins its queue at
    the next N-th decode step (``core.serve.recv_interval``); 1: at the next step."""
    drafts_in_budget: bool = False
    """Under speculative decoding a running decode takes 1 + its draft tokens of the step's token budget: vLLM V1
    (``Scheduler.schedule``: ``num_tokens_with_spec - num_computed_tokens``, capped at the budget left) and
    TensorRT-LLM (``MicroBatchScheduler``); False: 1 (vLLM V0 counts its lookahead slots outside the budget, SGLang
    runs its decodes as a batch of their own)."""
    acceptance_length: float = 0.0
    """Speculative decoding: T, the tokens a decode step keeps on average (``core.serve.speculative``); 0: none."""
    lookahead_tokens: int = 0
    """vLLM under speculative decoding: the lookahead slots a running request's step allocates for the drafter (k)."""
    lookahead_at_admission: bool = True
    """vLLM 0.23+: an admitted request's first step allocates them too (``vllm_rule_releases.lookahead_at_admission``)."""


def drafts_in_budget(engine: "EnginePlan") -> bool:
    """A decode takes its draft tokens of the step's budget (``EngineLimits.drafts_in_budget``): vLLM V1, TensorRT-LLM."""
    return engine.name == "trtllm" or (engine.name == "vllm" and engine.generation != "vllm-v0")


def engine_limits(engine: "EnginePlan", *, prefix_caching: bool = True, recv_interval: int = 1) -> EngineLimits:
    """The scheduler's settings and pool of an engine's memory plan, its pool as blocks of one request's tokens:
    vLLM's blocks over its KV cache groups (a request takes a block in every group for each block of its tokens),
    with ``window_groups`` where a group holds less (a window, a state), the other engines' tokens in blocks. An
    attention-free model's pool holds states, one a request whatever its length: blocks of max_model_len tokens
    (vLLM's block size for such a model), as many as the pool holds states. ``recv_interval``: SGLang's ``--scheduler-recv-interval``
    (``ServingCase.recv_interval``)."""
    if not engine.kv_bytes_per_token_per_rank:
        return EngineLimits(
            engine=engine.name, kv_blocks=int(engine.max_concurrency), block_size=engine.max_model_len,
            max_num_batched_tokens=engine.max_num_batched_tokens, max_num_seqs=engine.max_num_seqs,
            prefix_caching=prefix_caching, recv_interval=recv_interval, drafts_in_budget=drafts_in_budget(engine),
        )  # fmt: skip
    groups = len(engine.groups)
    blocks = engine.kv_blocks // groups if groups else engine.kv_tokens // engine.block_size
    windowed = engine.name == "vllm" and window_groups_of(engine.groups, engine.block_size, engine.max_model_len)
    if windowed:  # counted in every group only where a prefix is shared: as many as the start-up sizer allows
        blocks = engine.window_pool_blocks or sizer_blocks(
            engine.max_concurrency, engine.max_model_len, engine.block_size
        )
    return EngineLimits(
        engine=engine.name, kv_blocks=blocks, block_size=engine.block_size,
        max_num_batched_tokens=engine.max_num_batched_tokens, max_num_seqs=engine.max_num_seqs,
        prefix_caching=prefix_caching, shares_prefix_blocks=shares_prefix_blocks(engine),
        whole_prompt_admission=engine.admits_whole_prompt, counts_preempted_lookups=engine.counts_preempted_lookups,
        watermark_blocks=int(engine.admission_watermark * blocks),
        caches_preempted_blocks=engine.name == "vllm" and not engine.admission_watermark,
        counts_lookups_at_admission=engine.counts_lookups_at_admission, recv_interval=recv_interval,
        window_groups=windowed or (), group_blocks=engine.kv_blocks - NULL_BLOCKS if windowed else 0,
        caps_window_admission=bool(windowed) and engine.caps_window_admission,
        window_free_lags=bool(windowed) and engine.window_free_lags,
        drafts_in_budget=drafts_in_budget(engine), lookahead_at_admission=engine.lookahead_at_admission,
    )  # fmt: skip


class TracePoint(NamedTuple):
    seconds: float
    running: int
    waiting: int
    kv_used: float
    """Share of the pool's blocks held."""


class Simulation(Record):
    """One simulated benchmark run (``vllm bench serve``'s figures), on one replica."""

    engine: str
    requests: int
    duration_s: float
    """First send to last token."""
    ttft_ms: LatencyStats
    tpot_ms: LatencyStats
    itl_ms: LatencyStats
    e2e_ms: LatencyStats
    request_throughput: float
    """Requests per second."""
    output_tokens_per_s: float
    total_tokens_per_s: float
    """Prompt and output tokens per second."""
    steps: int
    preemptions: int
    """Requests preempted when the pool ran out (recomputed from scratch, or in vLLM V1 from what survives of their
    cached blocks)."""
    max_running: int
    max_waiting: int
    saturated: bool = False
    """Open loop: the queue grew through the run (the rate is beyond what the replica serves)."""
    prefix_cache_hit_rate: float = 0.0
    """Prompt tokens served from the prefix cache over the prompt tokens looked up, each lookup counted as the engine
    counts it (vLLM's "Prefix cache hit rate": every try of a waiting request, ``EngineState.try_waiting``; from
    vLLM 0.27 once, at admission)."""
    host_hit_rate: float = 0.0
    """Of the prompt tokens, those loaded back from the host tier (KV offload; in ``prefix_cache_hit_rate`` too)."""
    looked_up: bool = False
    """Whether the requests shared a prefix the caches were looked up for (the hit rate is then said, 0 too)."""
    trace: list[TracePoint] = Field(default_factory=empty_list)

    def good_requests(self, per_request: "RequestTimes", ttft_ms: float | None, tpot_ms: float | None) -> int:
        """Requests within both limits (``vllm bench serve --goodput``)."""
        return sum(
            (ttft_ms is None or ttft * 1e3 <= ttft_ms) and (tpot_ms is None or tpot * 1e3 <= tpot_ms)
            for ttft, tpot in zip(per_request.ttft, per_request.tpot, strict=True)
        )


class RequestTimes(NamedTuple):
    """Per request, in seconds (requests of one output token have no TPOT: 0)."""

    ttft: list[float]
    tpot: list[float]
    e2e: list[float]


class _Client:
    """When each request is sent: its arrival, delayed by the concurrency cap until a request in flight ends."""

    def __init__(self, workload: Workload, overhead_s: float) -> None:
        self.ready = workload.arrivals()
        self.cap = workload.max_concurrency or len(self.ready)
        self.overhead_s = overhead_s
        self.next = 0
        self.in_flight = 0
        self.sent = [0.0] * len(self.ready)
        self.slot_free_at = 0.0
        """When a slot last became free while every slot was taken (a request waiting on the cap goes then)."""
        self.entering: list[tuple[float, int]] = []
        """(time it reaches the engine, request): a heap."""

    def send(self, now: float) -> None:
        """Send every request that is ready by ``now`` and has a slot (a slot freed at ``now`` sends at ``now``)."""
        while self.next < len(self.ready) and self.in_flight < self.cap and self.ready[self.next] <= now:
            request = self.next
            self.sent[request] = max(self.ready[request], self.slot_free_at)
            heapq.heappush(self.entering, (self.sent[request] + self.overhead_s, request))
            self.in_flight += 1
            self.next += 1

    def release(self, now: float) -> None:
        """A request in flight ended at ``now``."""
        if self.in_flight == self.cap:
            self.slot_free_at = now
        self.in_flight -= 1

    def next_event(self) -> float | None:
        """The earliest time a request reaches the engine or a ready one could be sent."""
        times = [t for t in (self.next_entry(), self.next_send()) if t is not None]
        return min(times) if times else None

    def next_entry(self) -> float | None:
        """When the next request sent reaches the engine (None: none on its way)."""
        return self.entering[0][0] if self.entering else None

    def next_send(self) -> float | None:
        """When the next request could be sent: its arrival, if a slot is free (None: none, or none free)."""
        return self.ready[self.next] if self.next < len(self.ready) and self.in_flight < self.cap else None


def windowed(workload: Workload, limits: EngineLimits) -> bool:
    """Whether the run counts the pool by vLLM's windowed groups (``EngineLimits.window_groups``): not where a prefix
    is shared or a host tier holds blocks, whose hits the simulator counts in blocks of every group (a windowed
    group's hit needs only its window's blocks: not modelled)."""
    shared = workload.prefix_len and (limits.prefix_caching or limits.host_blocks)
    return bool(limits.window_groups) and not shared and not limits.host_blocks


class _Run:
    """The state of one simulation: the engine's, the client's, and what each request saw."""

    def __init__(self, workload: Workload, limits: EngineLimits, cost: StepCost, overhead_s: float) -> None:
        self.prompts = [prompt for prompt, _ in workload.lengths]
        self.outputs = [output for _, output in workload.lengths]
        self.limits, self.cost = limits, cost
        self.windowed = windowed(workload, limits)
        """The pool counted in blocks of one vLLM group, windowed groups freeing theirs (``windowed``)."""
        self.state = EngineState(
            self.prompts, self.outputs, blocks=limits.group_blocks if self.windowed else limits.kv_blocks,
            block_size=limits.block_size, budget=limits.max_num_batched_tokens, max_seqs=limits.max_num_seqs,
        )  # fmt: skip
        if self.windowed:
            self.state.window_groups = limits.window_groups
            self.state.caps_window_admission = limits.caps_window_admission
            self.state.window_free_lags = limits.window_free_lags
        self.state.whole_prompt_admission = limits.engine == "vllm" and limits.whole_prompt_admission
        self.state.counts_preempted_lookups = limits.engine != "vllm" or limits.counts_preempted_lookups
        self.state.counts_at_admission = limits.engine == "vllm" and limits.counts_lookups_at_admission
        self.state.watermark_blocks = limits.watermark_blocks if limits.engine == "vllm" else 0
        self.state.decode_tokens = cost.per_decode if limits.engine == "trtllm" or limits.drafts_in_budget else 1
        if limits.acceptance_length:
            if cost.pp > 1:  # ``cost.plan`` refuses it; the pipelined loops add one token a decode
                raise ValueError("speculative decoding is simulated at pp 1 only")
            self.state.accepted = AcceptedTokens(limits.acceptance_length, len(self.prompts))
            self.state.lookahead = limits.lookahead_tokens
            self.state.admission_lookahead = limits.lookahead_tokens if limits.lookahead_at_admission else 0
        tiered = workload.prefix_groups > 1 or limits.host_blocks > 0
        self.state.caches_own_blocks = (
            limits.engine == "vllm" and limits.caches_preempted_blocks and limits.prefix_caching
            and not workload.prefix_len and not limits.host_blocks and not self.windowed
        )  # fmt: skip
        if workload.prefix_len and (limits.prefix_caching or limits.host_blocks):
            self.state.prefix_len = workload.prefix_len
            self.state.cache_at_allocation = limits.engine == "vllm"
            self.state.share_blocks = limits.shares_prefix_blocks and limits.prefix_caching
            if tiered:
                queued = self.state.share_blocks  # held once: the free queue's order evicts them
                self.state.tiers = PrefixTiers(
                    prefix_len=workload.prefix_len, groups=workload.prefix_groups, block_size=limits.block_size,
                    host_blocks=limits.host_blocks, load_s_per_token=limits.load_s_per_token,
                    gpu_caching=limits.prefix_caching, evicts_by_room=not queued,
                )  # fmt: skip
                self.state.free_queue = FreeQueue() if queued else None
            if workload.warm_prefix:
                for request in range(workload.prefix_groups if tiered else 1):
                    self.state.cache_prefix(workload.prefix_len, request)
                    self.state.queue_warm(request)
        self.client = _Client(workload, overhead_s)
        count = len(self.prompts)
        self.first, self.last, self.done = [0.0] * count, [0.0] * count, [0.0] * count
        self.gaps: dict[float, int] = {}
        """Inter-token gaps: seconds -> how many tokens saw it (a step's decodes share theirs)."""
        self.trace: list[TracePoint] = []
        self.queue_at_arrival: list[int] = []
        self.now = 0.0
        self.finished = self.steps = self.max_running = self.max_waiting = 0
        self.cohort = Cohort(self.state)
        self.loose: list[int] = []
        """Running requests outside the cohort, in the running order."""
        self.recv = RecvSkipper(limits.recv_interval)

    def admit(self) -> None:
        """Requests that reached the engine by now join its queue, on a turn that receives them
        (``core.serve.recv_interval``)."""
        entering, waiting = self.client.entering, self.state.waiting
        if not self.recv.receives(idle=not self.state.running and not waiting):
            return
        while entering and entering[0][0] <= self.now:
            waiting.append(heapq.heappop(entering)[1])
            self.queue_at_arrival.append(len(waiting))

    def emit(self, request: int) -> bool:
        """``request`` samples a token now; True when it was its last."""
        state = self.state
        state.generated[request] += 1
        if state.generated[request] == 1:
            self.first[request] = self.now
        else:
            gap = self.now - self.last[request]
            self.gaps[gap] = self.gaps.get(gap, 0) + 1
        self.last[request] = self.now
        return state.generated[request] >= self.outputs[request]

    def finish(self, request: int) -> None:
        state = self.state
        if state.tiers is not None and not state.cache_at_allocation:  # its output's blocks too (review 324 #1)
            # SGLang's cache_finished_req inserts prompt and output; TensorRT-LLM offloads the blocks it evicts
            state.tiers.store(request, state.computed[request], state.hit_at[request])
        self.state.release(request)
        self.state.running.remove(request)
        self.done[request] = self.now
        self.finished += 1
        self.client.release(self.now)

    def one_step(self, decodes: list[int], chunks: list[tuple[int, int]]) -> list[int]:
        """Run one step of ``decodes`` and prefill ``chunks``; the requests it ended."""
        state = self.state
        context = sum(state.computed[r] for r in decodes) // len(decodes) if decodes else 0
        chunk_shapes = [(tokens, state.computed[r]) for r, tokens in chunks]
        self.now += self.cost.seconds(len(decodes), context, chunk_shapes) + state.take_load()
        self.steps += 1
        self.recv.step(prompt=bool(chunks))
        ended = []
        now, computed, generated, outputs, last, gaps = (
            self.now, state.computed, state.generated, self.outputs, self.last, self.gaps
        )  # fmt: skip
        accepted, undrafted = state.accepted, state.undrafted
        for request in decodes:  # ``emit`` for a decode, inlined: the loop's hottest lines
            if accepted is None:
                kept = 1
            elif request in undrafted:  # back from a preemption with no drafts: its one token, and the drafter's
                undrafted.discard(request)
                kept = 1
            else:
                kept = accepted.take(request, outputs[request] - generated[request])
            computed[request] += kept
            generated[request] += kept
            gap = now - last[request]
            gaps[gap] = gaps.get(gap, 0) + 1
            last[request] = now
            if generated[request] >= outputs[request]:
                ended.append(request)
        for request, tokens in chunks:
            state.computed[request] += tokens
            state.cache_prefix(state.computed[request], request)
            if state.computed[request] >= state.known(request):
                undrafted.discard(request)  # it samples, and the drafter proposes after it
                if self.emit(request):
                    ended.append(request)
        return ended

    def decode_run(self, decodes: list[int]) -> list[int]:
        """Repeat the step of ``decodes`` alone until the next event: a request ends, the client sends one, one sent
        reaches the engine on a turn that receives it (``core.serve.recv_interval``), or the pool would run out
        (``_horizon``, ``_windowed_horizon``). Only the first step's gaps differ per request; the others are the step's
        time for every row. The trace gets one point a run. The requests it ended."""
        # vLLM's windowed groups: each step exact to the bit (priced by ``StepCost.seconds``, not the interpolated
        # grid; each gap the clock's own difference) and each request's blocks as its allocations at whole blocks
        # leave them (``EngineState.advance_windowed_decodes``), while every one fits whatever the order
        windowed = self.windowed and self.limits.engine == "vllm"
        state, rows = self.state, len(decodes)
        if windowed:
            steps = min(self.outputs[r] - state.generated[r] for r in decodes)  # until the first ends
            grows = [state.windowed_decode_grows(r, steps) for r in decodes]
            horizon = _windowed_horizon(state, decodes, grows, steps)
        else:
            horizon = _horizon(state, decodes, self.outputs, grows=self.limits.engine != "trtllm")
        price = self.cost.exact_decode_seconds if windowed else self.cost.decode_seconds
        # a request sent stops the run at once (the client counts it in flight); one on its way, at a receiving turn
        send, entry = self.client.next_send(), self.client.next_entry()
        accepted, outputs, generated = state.accepted, self.outputs, state.generated
        computed_sum = sum(state.computed[r] for r in decodes)
        context = computed_sum // rows
        residues = [] if accepted is None else accepted.residues(decodes)
        first_end = 0.0
        taken = 0
        while taken < horizon:
            before = self.now
            if accepted is not None:  # each row's context grows by the tokens it kept (``one_step``'s mean)
                context = (computed_sum + accepted.kept_together(residues, taken)) // rows - taken
            seconds = price(rows, context + taken)
            self.now += seconds
            taken += 1
            if taken == 1:
                first_end = self.now
            else:
                gap = self.now - before if windowed else seconds
                self.gaps[gap] = self.gaps.get(gap, 0) + rows
            self.recv.step(prompt=False)
            if (send is not None and self.now >= send) or (entry is not None and self.now >= entry and self.recv.due):
                break
        self.steps += taken
        state.decay_ratio(taken - 1)
        ended = []
        for i, request in enumerate(decodes):
            if windowed:
                state.advance_windowed_decodes(request, grows[i], taken)
                kept = taken
            elif accepted is None:
                state.grow(request, state.computed[request] + taken)
                kept = taken
            else:  # the last step's blocks (``_horizon``), then its tokens kept
                left = outputs[request] - generated[request]
                earlier = accepted.after(request, taken - 1, left)
                state.grow(request, state.computed[request] + earlier + 1, state.decode_slots(request, taken - 1))
                kept = accepted.after(request, taken, left)
                accepted.steps[request] += taken
            state.computed[request] += kept
            state.generated[request] += kept
            gap = first_end - self.last[request]
            self.gaps[gap] = self.gaps.get(gap, 0) + 1
            self.last[request] = self.now
            if state.generated[request] >= self.outputs[request]:
                ended.append(request)
        return ended

    def aggregate_step(self) -> list[int] | None:
        """One vLLM step with the decoding requests advanced as a cohort (``core.serve.cohort``): the loose running
        requests (prefilling, or decoding outside the cohort) one by one, then waiting ones as ``_vllm`` admits
        them. None, having changed nothing, when the step is one where the order of the running requests matters
        (their tokens exceed the budget, or the pool cannot hold them: a preemption): ``run`` then takes the exact
        path. The requests it ended."""
        state, cohort = self.state, self.cohort
        computed, prompts = state.computed, state.prompts
        needs = schedule_together(state, cohort, self.loose)
        if needs is None:
            return None
        if not needs and not len(cohort):
            return None  # nothing runs: the exact path says why
        decodes = [(r, t) for r, t in needs if t == 1 and computed[r] >= prompts[r]]
        chunks = [(t, computed[r]) for r, t in needs if not (t == 1 and computed[r] >= prompts[r])]
        rows = len(cohort) + len(decodes)
        context = (cohort.context_sum() + sum(computed[r] for r, _ in decodes)) // rows if rows else 0
        seconds = self.cost.seconds(rows, context, chunks) if chunks else self.cost.decode_seconds(rows, context)
        seconds += state.take_load()
        self.now += seconds
        self.steps += 1
        if len(cohort):
            self.gaps[seconds] = self.gaps.get(seconds, 0) + len(cohort)
        ended = cohort.advance()
        for request in ended:
            self.last[request] = self.now
        loose = []
        for request, tokens in needs:
            decode = tokens == 1 and computed[request] >= prompts[request]
            computed[request] += tokens
            if not decode:  # computed, a chunk's prefix blocks are cached, as ``one_step`` caches them
                state.cache_prefix(computed[request], request)
            if computed[request] < state.known(request):
                loose.append(request)  # a prompt still in chunks
            elif self.emit(request):
                ended.append(request)
            else:
                cohort.join(request)
        self.loose = loose
        return ended

    def leave_cohort(self) -> None:
        """Back to the exact scheduler: every member's progress written back (its last token came at the end of the
        step just run)."""
        for request in self.cohort.joined:
            self.last[request] = self.now
        self.cohort.materialise_all()

    def idle_until_next_event(self, why: str) -> None:
        event = self.client.next_event()
        if event is None or event <= self.now:
            raise BadInputError(why)
        self.now = event
        self.client.send(self.now)

    def run(self, keep_trace: bool, skip_repeated_steps: bool) -> None:
        if self.cost.pp > 1:  # up to pp batches in flight (core.serve.pipelined)
            from mha_cli.core.serve.pipelined import run_pipelined

            run_pipelined(self, keep_trace, skip_repeated_steps)
            return
        state, engine = self.state, self.limits.engine
        # a cohort counts full blocks, a token a step (not speculative decoding's)
        by_cohort = skip_repeated_steps and engine == "vllm" and not self.windowed and state.accepted is None
        self.client.send(self.now)
        while self.finished < len(self.prompts):
            self.admit()
            if not state.running and not state.waiting:
                self.idle_until_next_event("the client has nothing left to send")  # pragma: no cover
                continue
            if by_cohort:
                ended = self.aggregate_step()
                if ended is not None:
                    self.after_step(ended, keep_trace)
                    continue
                self.leave_cohort()
            preemptions = state.preemptions
            decodes, chunks = schedule(engine, state)
            if not decodes and not chunks:
                self.idle_until_next_event(
                    f"{engine} admits none of the waiting requests into an empty pool: give it more KV memory"
                )
                continue
            # windows free blocks as they move: a request waiting could be admitted part-way through a run; under
            # speculative decoding a request preempted now comes back needing fewer blocks than it freed (its slots:
            # review 328 #1), and one back without drafts keeps one token
            repeats = (
                skip_repeated_steps and not by_cohort and not chunks and len(decodes) == len(state.running)
                and (engine != "sglang" or not state.waiting)
                and not (self.windowed and (state.waiting or engine != "vllm" or state.accepted is not None))
                and not (state.accepted is not None and (
                    state.preemptions != preemptions or not state.undrafted.isdisjoint(decodes)
                ))
            )  # fmt: skip
            ended = self.decode_run(decodes) if repeats else self.one_step(decodes, chunks)
            self.after_step(ended, keep_trace)
            self.loose = list(state.running)  # the cohort starts again from the exact step's state

    def after_step(self, ended: list[int], keep_trace: bool) -> None:
        state = self.state
        self.max_running = max(self.max_running, len(state.running))
        self.max_waiting = max(self.max_waiting, len(state.waiting))
        if keep_trace:
            used = 1 - state.free_blocks / state.total_blocks
            self.trace.append(TracePoint(self.now, len(state.running), len(state.waiting), used))
        for request in ended:
            self.finish(request)
        self.client.send(self.now)


def _horizon(state: EngineState, decodes: list[int], outputs: list[int], *, grows: bool) -> int:
    """Decode steps the same rows can repeat: until the first of them ends, and (``grows``: blocks are taken as
    tokens arrive) while the pool holds every row's next tokens (the first step's blocks are already held; under
    speculative decoding, the tokens each keeps and its step's slots: ``EngineState.decode_slots``)."""
    accepted, generated = state.accepted, state.generated
    if accepted is None:
        steps = min(outputs[r] - generated[r] for r in decodes)
    else:
        steps = min(accepted.steps_to(r, outputs[r] - generated[r]) for r in decodes)
    if not grows:
        return steps

    computed, held, size = state.computed, state.held, state.block_size

    def fits(k: int) -> bool:
        more = 0
        for r in decodes:
            if accepted is None:
                reach = computed[r] + k
            else:  # the k-th step's: the tokens kept before it, its own one and its slots
                earlier = accepted.after(r, k - 1, outputs[r] - generated[r])
                reach = computed[r] + earlier + 1 + state.decode_slots(r, k - 1)
            more += max(0, -(-reach // size) - held[r])
        return more <= state.free_blocks

    if fits(steps):
        return steps
    low, high = 1, steps  # fits(low), not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _windowed_horizon(state: EngineState, decodes: list[int], grows: list[list[tuple[int, int]]], steps: int) -> int:
    """``_horizon`` over vLLM's windowed groups: of the ``steps`` decode steps the same rows repeat until the first of
    them ends (``grows``: each request's allocations over them, ``EngineState.windowed_decode_grows``), those while
    the most blocks each holds beyond its own now (``EngineState.windowed_decode_excess``), summed, fit the free ones:
    no allocation of the run can fail, whichever request's comes first."""
    excess = [state.windowed_decode_excess(r, made) for r, made in zip(decodes, grows, strict=True)]

    def fits(k: int) -> bool:
        held = 0
        for at, most in excess:
            rises = bisect_right(at, k)
            if rises:
                held += most[rises - 1]
        return held <= state.free_blocks

    if fits(steps):
        return steps
    low, high = 1, steps  # fits(low): the first step's blocks are held; not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


SATURATION_GROWTH = 8
"""Queued requests the second half of an open loop's arrivals must add (and 2% of them) to call it saturated."""


def simulate(
    workload: Workload,
    limits: EngineLimits,
    cost: StepCost,
    *,
    request_overhead_s: float = 0.0,
    trace: bool = False,
    skip_repeated_steps: bool = True,
) -> tuple[Simulation, RequestTimes]:
    """Run ``workload`` through one replica (see the module docstring). ``request_overhead_s``: the time from a
    client's send to the engine's queue (HTTP, tokenising), which every TTFT includes. ``skip_repeated_steps=False``
    visits every step (the tests' check of the shortcut)."""
    longest = max(p + o for p, o in workload.lengths)
    pool = limits.kv_blocks * limits.block_size
    if windowed(workload, limits):
        ask = admission_blocks(limits.window_groups, longest, limits.block_size, capped=True)
        if ask > limits.group_blocks:
            raise BadInputError(
                f"a request of {longest:,} tokens takes {ask:,} blocks over vLLM's {len(limits.window_groups)} KV"
                f" cache groups, more than the replica's pool of {limits.group_blocks:,}: shorten it or give the"
                " engine more memory"
            )
        prompt = max(p for p, _ in workload.lengths)
        whole = admission_blocks(limits.window_groups, prompt, limits.block_size, capped=False)
        if limits.whole_prompt_admission and not limits.caps_window_admission and whole > limits.group_blocks:
            raise BadInputError(
                f"vLLM 0.19-0.20 admits a request only when its pool holds every block of its prompt in each of its"
                f" {len(limits.window_groups)} KV cache groups, sliding-window ones too: a prompt of {prompt:,} tokens"
                f" asks {whole:,} blocks of a pool of {limits.group_blocks:,}, so it is never admitted"
                " (vllm-project/vllm#39734): price vllm@0.21 or later, or shorten it"
            )
    elif pool < longest:
        raise BadInputError(
            f"a request of {longest:,} tokens does not fit the replica's KV pool of {pool:,} tokens: shorten it or"
            " give the engine more memory"
        )
    longest_prompt = max(p for p, _ in workload.lengths)
    if limits.engine == "trtllm" and longest_prompt > limits.max_num_batched_tokens:
        raise BadInputError(  # the way out named: trial 318 #2
            "TensorRT-LLM runs a prompt whole (context chunking is off by default): every prompt must fit"
            f" max_num_tokens ({limits.max_num_batched_tokens:,}): give --max-num-batched-tokens {longest_prompt}"
            " (trtllm-serve's --max_num_tokens)"
        )
    if limits.recv_interval > 1 and limits.engine != "sglang":
        raise ValueError(f"a receive interval is SGLang's scheduler's, not {limits.engine}'s")
    run = _Run(workload, limits, cost, request_overhead_s)
    run.run(trace, skip_repeated_steps)
    sent, outputs = run.client.sent, run.outputs
    times = RequestTimes(
        ttft=[f - s for f, s in zip(run.first, sent, strict=True)],
        tpot=[(d - f) / (o - 1) if o > 1 else 0.0 for d, f, o in zip(run.done, run.first, outputs, strict=True)],
        e2e=[d - s for d, s in zip(run.done, sent, strict=True)],
    )
    duration = max(run.done)
    saturated = False
    if workload.rate is not None and run.queue_at_arrival:
        queue = run.queue_at_arrival
        growth = queue[-1] - queue[len(queue) // 2]
        saturated = growth > max(SATURATION_GROWTH, 0.02 * len(queue))
    points = run.trace
    if len(points) > MAX_TRACE_POINTS:
        points = points[:: -(-len(points) // MAX_TRACE_POINTS)]
    output_tokens = sum(outputs)
    queried = run.state.queried_tokens or sum(run.prompts)  # lookups as the engine counts them (<= 100% hits)
    return Simulation(
        engine=limits.engine, requests=len(outputs), duration_s=duration,
        ttft_ms=summarise(times.ttft), tpot_ms=summarise([t for t, o in zip(times.tpot, outputs, strict=True) if o > 1]),
        itl_ms=summarise_weighted(list(run.gaps.items())), e2e_ms=summarise(times.e2e),
        request_throughput=len(outputs) / duration, output_tokens_per_s=output_tokens / duration,
        total_tokens_per_s=(output_tokens + sum(run.prompts)) / duration, steps=run.steps,
        preemptions=run.state.preemptions, max_running=run.max_running, max_waiting=run.max_waiting,
        saturated=saturated, trace=points, prefix_cache_hit_rate=run.state.hit_tokens / queried,
        host_hit_rate=0.0 if run.state.tiers is None else run.state.tiers.host_hit_tokens / queried,
        looked_up=bool(run.state.prefix_len),
    ), times  # fmt: skip
