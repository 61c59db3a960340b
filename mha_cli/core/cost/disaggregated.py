"""``mha plan --disaggregated``: prefill workers and decode workers on separate GPUs, searched and priced against the
best aggregated plan on the same GPUs.

The pipeline, one stage a function:

1. **workers** (``price_workers``): for each tensor-parallel degree whose engine starts on ``tp`` devices, one
   worker's memory plan (``core.cost.plan.LayoutPlans``: its KV pool, chunk budget, what it admits) and its steps on
   the device profile (``core.cost.stepper``). A *prefill worker* runs prompts only: one prompt alone takes its
   chunked prefill; its capacity is the prompts one step holds (budget // prompt, at most ``max_num_seqs``) over
   that step's time. A *decode worker* holds the cache and runs decode steps at its batch b (at most what its pool
   admits) at the mean context isl + osl / 2, no prefill chunks among them: ITL = step(b), and it serves
   b / (osl x step(b)) requests/s.
2. **transfer** (``core.cost.kv_transfer``): each request's cache, as the decode ranks hold it, over the link.
3. **goodput** per worker, the most requests/s it serves within the targets: a decode worker at the largest batch
   whose step is within ``--itl-ms``; a prefill worker at the load whose TTFT = queue + prefill + transfer + the
   decode worker's first step (vLLM's decode worker computes the first token again, in one step) is within
   ``--ttft-ms``, its queue an M/D/1 queue (wait = rho / (2 (1 - rho)) / capacity). Every pool is loaded to at most
   ``MAX_LOAD`` of its capacity (without targets: that load), as a queue at full load never drains.
4. **splits** (``split_rates``): every (prefill workers x prefill tp) + (decode workers x decode tp) within the
   GPUs; a split serves min(prefill pool, decode pool) requests/s. The balance: prefill : decode workers =
   decode worker rate : prefill worker rate.
5. **pick**: the most output tokens/s per GPU (load x osl / GPUs) that meets the targets, at ``--rate`` when given
   (the fewest GPUs that serve it), else at each split's goodput.
6. **aggregated** on the same footing: each tp's replica at the most requests/s its closed-form plan
   (``plan_at_rate``, prefill chunks stalling decodes) serves within the targets; replicas on the same GPUs.

Closed form throughout (no simulated loop). Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal, NamedTuple

from pydantic import Field

from mha_cli.core.cost.kv_transfer import KvTransfer, kv_link, kv_transfer
from mha_cli.core.cost.plan import LayoutPlans, ServingPlan, plan_at_rate, serving_case
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.stepper import Stepper, chunked_prefill
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.errors import BadInputError, MhaError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.targets import ResolvedTarget
from mha_cli.core.tensor_parallel import tp_shard_problem

MAX_LOAD = 0.9
"""The share of a pool's (or a replica's) capacity it is loaded to at most: an M/D/1 queue at 0.9 waits 4.5 services."""
TIE = 0.01
"""Tokens/s per GPU this close (relative) are a tie: at one --rate, splits and replicas often use the same GPUs."""
BISECTIONS = 30
"""Halvings of the aggregated goodput search (2^-30 of the capacity)."""


class PrefillWorker(Record):
    """One prefill worker of ``tp`` GPUs."""

    tp: int
    prompt_ms: float
    """One prompt alone: its chunked prefill."""
    prompts_per_step: int
    """Prompts one step runs at full load: the chunk budget // the prompt, at most max_num_seqs (1 if it is chunked)."""
    capacity_rps: float
    """Prompts/s at full load: prompts_per_step / that step's time."""
    chunk_tokens: int


class DecodeWorker(Record):
    """One decode worker of ``tp`` GPUs: it holds the cache."""

    tp: int
    admitted: int
    """Requests of isl + osl tokens its KV pool (and max_num_seqs) admits at once."""
    capacity_rps: float
    """At ``admitted`` running: admitted / (osl x step)."""
    goodput_batch: int
    """The largest batch whose step is within --itl-ms (0: not even one), at most the MAX_LOAD share of capacity."""
    goodput_rps: float
    step_ms: float
    """The decode step at ``goodput_batch`` (the ITL it serves at)."""


class AggregatedLayout(Record):
    """One aggregated replica of ``tp`` GPUs (prefill and decode together, chunked prefill), on the same footing."""

    tp: int
    replicas: int
    """Replicas priced: all the target's GPUs, or as many as --rate needs."""
    capacity_rps: float
    goodput_rps: float
    """Per replica: the most requests/s it serves within the targets (at most MAX_LOAD x capacity)."""
    rate_rps: float
    """Per replica, the load priced."""
    ttft_ms: float
    itl_ms: float
    output_tokens_per_s_per_gpu: float
    meets_targets: bool


class Pairing(Record):
    """A prefill worker of ``prefill_tp`` feeding decode workers of ``decode_tp``."""

    prefill_tp: int
    decode_tp: int
    transfer: KvTransfer
    prefill_goodput_rps: float
    """One prefill worker's requests/s within --ttft-ms, its TTFT holding this transfer and the first decode step."""


class SplitRates(NamedTuple):
    """A split's workers and the requests/s it serves: min(prefill pool, decode pool)."""

    prefill_tp: int
    prefill_workers: int
    decode_tp: int
    decode_workers: int
    gpus: int
    rate_rps: float
    bottleneck: Literal["prefill", "decode"]
    prefill_pool_rps: float
    decode_pool_rps: float


class Split(Record):
    """One disaggregated deployment, priced at a load."""

    prefill_tp: int
    prefill_workers: int
    decode_tp: int
    decode_workers: int
    gpus: int
    goodput_rps: float
    """The most requests/s it serves within the targets: min(prefill pool, decode pool)."""
    bottleneck: Literal["prefill", "decode"]
    prefill_pool_rps: float
    """All its prefill workers' goodput together (requests/s)."""
    decode_pool_rps: float
    rate_rps: float
    """The load priced: --rate, else its goodput."""
    ttft_ms: float
    """Queue + prefill + KV transfer + the decode worker's first step."""
    queue_ms: float
    prefill_ms: float
    transfer_ms: float
    itl_ms: float
    decode_batch: int
    """Requests running on each decode worker at this load."""
    output_tokens_per_s_per_gpu: float
    meets_targets: bool
    misses: list[str] = Field(default_factory=empty_list)


class DisaggregatedPlan(Record):
    """The search, its pick, the aggregated plan beside it and which wins (docs/commands/plan.md lists the keys)."""

    model_name: str
    target: str
    isl: int
    osl: int
    ttft_ms: float | None
    itl_ms: float | None
    rate_rps: float | None
    """--rate asked (requests/s); None: each split at its goodput."""
    engine: str
    gpu_memory_utilization: float
    """The memory fraction the workers' KV pools were sized with (their launch lines')."""
    prefill: list[PrefillWorker]
    decode: list[DecodeWorker]
    pairings: list[Pairing]
    """One per (prefill tp, decode tp) searched: the KV transfer between them and a prefill worker's goodput."""
    splits: list[Split]
    """Every split, by output tokens/s per GPU, best first."""
    chosen: int | None
    balance: str | None
    """The pick's balance of prefill to decode workers, in words."""
    aggregated: list[AggregatedLayout]
    aggregated_chosen: int | None
    winner: Literal["disaggregated", "aggregated", "tie", "neither"]
    verdict: str
    """Which wins, by how much, and why."""
    launch: dict[str, str] = Field(default_factory=dict)
    """The pick's launch lines: ``vllm`` (every worker and the proxy) and ``sglang`` (every worker and the router)."""
    launch_note: str | None = None
    notes: list[str] = Field(default_factory=empty_list)


def split_rates(
    prefill_rps: Mapping[tuple[int, int], float], decode_rps: Mapping[int, float], n_devices: int
) -> list[SplitRates]:
    """Every split within ``n_devices``: ``prefill_rps[(prefill tp, decode tp)]`` is one prefill worker's requests/s
    (its TTFT holds the transfer to that decode tp), ``decode_rps[decode tp]`` one decode worker's."""
    found = []
    for (prefill_tp, decode_tp), per_prefill in prefill_rps.items():
        per_decode = decode_rps.get(decode_tp)
        if per_decode is None:
            continue
        for n_prefill in range(1, (n_devices - decode_tp) // prefill_tp + 1):
            for n_decode in range(1, (n_devices - n_prefill * prefill_tp) // decode_tp + 1):
                pool_prefill, pool_decode = n_prefill * per_prefill, n_decode * per_decode
                found.append(SplitRates(
                    prefill_tp, n_prefill, decode_tp, n_decode, n_prefill * prefill_tp + n_decode * decode_tp,
                    min(pool_prefill, pool_decode), "prefill" if pool_prefill < pool_decode else "decode",
                    pool_prefill, pool_decode,
                ))  # fmt: skip
    return found


def best_split(splits: list[SplitRates]) -> int | None:
    """The split with the most requests/s per GPU (then the most requests/s); None when none serves any."""
    serving = [i for i, s in enumerate(splits) if s.rate_rps > 0]
    if not serving:
        return None
    return max(serving, key=lambda i: (splits[i].rate_rps / splits[i].gpus, splits[i].rate_rps))


def mdl_wait(load: float, capacity_rps: float) -> float:
    """An M/D/1 queue's mean wait (s) at ``load`` (rho, < 1) with service 1 / ``capacity_rps``."""
    return load / (2 * (1 - load)) / capacity_rps


def prefill_goodput(capacity_rps: float, fixed_s: float, ttft_s: float | None) -> float:
    """One prefill worker's requests/s within ``ttft_s``, when a request's TTFT is its M/D/1 wait + ``fixed_s``
    (its prefill, transfer and first decode step): rho / (2 (1 - rho)) / c <= ttft - fixed gives
    rho <= 2 x c / (1 + 2 x c) with x = ttft - fixed; at most MAX_LOAD."""
    if ttft_s is None:
        return MAX_LOAD * capacity_rps
    slack = ttft_s - fixed_s
    if slack <= 0:
        return 0.0
    load = 2 * slack * capacity_rps / (1 + 2 * slack * capacity_rps)
    return min(load, MAX_LOAD) * capacity_rps


class _Worker:
    """One worker's engine plan and steps on ``tp`` devices (both roles share them: the same launch line but for
    the connector)."""

    def __init__(self, plans: LayoutPlans, deployment: DeploymentSpec, profile: DeviceProfile, isl: int, osl: int):
        first = plans.at(1)
        self.engine = first.memory.engine
        case = serving_case(plans.model, deployment, first.memory, isl=isl, osl=osl, concurrency=1, pp=1, replicas=1,
                            experts=plans.experts)  # fmt: skip
        self.case, self.tp, self.isl, self.osl = case, plans.tp, isl, osl
        self.stepper = Stepper(case, profile)
        self._steps: dict[int, float] = {}

    def decode_step(self, batch: int) -> float:
        """One decode step of ``batch`` sequences at the mean context (s)."""
        if batch not in self._steps:
            context = self.isl + self.osl // 2
            self._steps[batch] = self.stepper.step(decode_shape(batch, context)).seconds
        return self._steps[batch]

    def decode_rps(self, batch: int) -> float:
        return batch / (self.osl * self.decode_step(batch))

    def batch_at(self, rps: float) -> int:
        """The fewest running requests that serve ``rps`` (Little's law: b = rps x osl x step(b)), at most admitted."""
        low, high = 1, self.engine.admitted_per_replica
        if self.decode_rps(high) < rps:
            return high
        while low < high:
            middle = (low + high) // 2
            low, high = (middle + 1, high) if self.decode_rps(middle) < rps else (low, middle)
        return low

    def largest_batch_within(self, itl_s: float | None) -> int:
        """The largest batch whose step is within ``itl_s`` (all it admits without a target; 0 if not one)."""
        admitted = self.engine.admitted_per_replica
        if itl_s is None or self.decode_step(admitted) <= itl_s:
            return admitted
        if self.decode_step(1) > itl_s:
            return 0
        low, high = 1, admitted  # step(low) within, step(high) not
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self.decode_step(middle) <= itl_s else (low, middle)
        return low

    def prefill(self) -> PrefillWorker:
        case, engine = self.case, self.engine
        budget = engine.max_num_batched_tokens
        computed = case.isl - case.cached_prefix
        alone, _ = chunked_prefill(self.stepper, computed, budget, [], start=case.cached_prefix)
        per_step = max(1, min(budget // computed, engine.max_num_seqs)) if computed <= budget else 1
        full = alone
        if per_step > 1:
            full = self.stepper.step(prefill_shape(computed, sequences=per_step, context=case.cached_prefix)).seconds
        return PrefillWorker(tp=self.tp, prompt_ms=alone * 1e3, prompts_per_step=per_step,
                             capacity_rps=per_step / full, chunk_tokens=budget)  # fmt: skip

    def decode(self, itl_s: float | None) -> DecodeWorker:
        admitted = self.engine.admitted_per_replica
        capacity = self.decode_rps(admitted)
        batch = self.largest_batch_within(itl_s)
        if batch and self.decode_rps(batch) > MAX_LOAD * capacity:
            batch = self.batch_at(MAX_LOAD * capacity)
        goodput = min(self.decode_rps(batch), MAX_LOAD * capacity) if batch else 0.0
        return DecodeWorker(tp=self.tp, admitted=admitted, capacity_rps=capacity, goodput_batch=batch,
                            goodput_rps=goodput, step_ms=self.decode_step(max(batch, 1)) * 1e3)  # fmt: skip


def worker_tps(model: ModelSpec, n_devices: int) -> list[int]:
    """Tensor-parallel degrees a worker may take: those dividing the devices that shard the model."""
    return [tp for tp in range(1, n_devices) if n_devices % tp == 0 and tp_shard_problem(model, tp) is None] + (
        [n_devices] if tp_shard_problem(model, n_devices) is None else []
    )


def plan_disaggregated(
    model: ModelSpec,
    target: ResolvedTarget,
    deployment: DeploymentSpec,
    profiles: tuple[DeviceProfile, DeviceProfile],
    *,
    isl: int,
    osl: int,
    ttft_ms: float | None = None,
    itl_ms: float | None = None,
    rate: float | None = None,
    link_id: str | None = None,
) -> DisaggregatedPlan:
    """Search the disaggregated deployments of ``model`` on ``target`` and compare the best with aggregated serving
    (see the module docstring). ``link_id``: the ``core.links`` id to move KV over (default: by placement)."""
    if target.n_devices < 2:
        raise BadInputError(
            f"--disaggregated needs 2 or more GPUs (one prefill and one decode worker); {target.spec} has"
            f" {target.n_devices}: give e.g. --target 2x{target.target.id}"
        )
    if isl < 1 or osl < 1:
        raise BadInputError("--isl and --osl must be at least 1")
    if rate is not None and not 0 < rate < 1e9:
        raise BadInputError(f"--rate {rate:g}: give requests per second greater than 0")
    if deployment.speculative is not None:
        raise BadInputError("--disaggregated prices plain decoding: leave out speculative decoding")
    if deployment.dp or deployment.expert_parallel:
        raise BadInputError("--disaggregated prices tensor-parallel workers: leave out --dp and --expert-parallel")
    ttft_s = None if ttft_ms is None else ttft_ms / 1e3
    itl_s = None if itl_ms is None else itl_ms / 1e3
    notes: list[str] = []
    workers: dict[int, _Worker] = {}
    for tp in worker_tps(model, target.n_devices):
        one = target.model_copy(update={"n_devices": tp, "spec": f"{tp}x{target.target.id}"})
        try:
            plans = LayoutPlans(model, one, deployment, *profiles, isl=isl, osl=osl, tp=tp)
            workers[tp] = _Worker(plans, deployment, profiles[0], isl, osl)
        except MhaError as exc:
            notes.append(f"tp {tp}: no worker ({exc.message})")
    if not workers:
        raise BadInputError(f"no worker of {model.name} starts on {target.spec}: {'; '.join(notes)}")
    engine = next(iter(workers.values())).engine
    prefill = {tp: w.prefill() for tp, w in workers.items()}
    decode = {tp: w.decode(itl_s) for tp, w in workers.items()}
    transfers: dict[tuple[int, int], KvTransfer] = {}
    prefill_rps: dict[tuple[int, int], float] = {}
    for tp_p, tp_d in ((p, d) for p in workers for d in workers if p + d <= target.n_devices):
        per_rank = kv_footprint(model, seq_len=isl, kv_dtype=deployment.kv_dtype, tp=tp_d,
                                mla_cache=deployment.mla_cache).bytes_per_sequence_per_rank  # fmt: skip
        over = kv_link(target, tp_p + tp_d, link_id)
        transfers[tp_p, tp_d] = kv_transfer(per_rank, prefill_tp=tp_p, decode_tp=tp_d, over=over)
        first_step = workers[tp_d].decode_step(max(1, decode[tp_d].goodput_batch))
        fixed = prefill[tp_p].prompt_ms / 1e3 + transfers[tp_p, tp_d].seconds + first_step
        prefill_rps[tp_p, tp_d] = prefill_goodput(prefill[tp_p].capacity_rps, fixed, ttft_s)
    rates = split_rates(prefill_rps, {tp: d.goodput_rps for tp, d in decode.items()}, target.n_devices)
    targets = (ttft_ms, itl_ms)
    splits = [_priced(s, prefill, workers, transfers, rate, targets, osl) for s in rates]
    splits.sort(key=lambda s: (-s.meets_targets, -s.output_tokens_per_s_per_gpu, -s.goodput_rps, s.ttft_ms))
    chosen = 0 if splits and splits[0].meets_targets else None
    aggregated = [
        _aggregated(model, target, deployment, profiles, tp, isl=isl, osl=osl, rate=rate, targets=targets)
        for tp in workers
    ]
    aggregated = [layout for layout in aggregated if layout is not None]
    meeting = [i for i, layout in enumerate(aggregated) if layout.meets_targets]
    aggregated_chosen = max(meeting, key=lambda i: aggregated[i].output_tokens_per_s_per_gpu) if meeting else None
    pick = None if chosen is None else splits[chosen]
    winner, verdict = _verdict(pick, None if aggregated_chosen is None else aggregated[aggregated_chosen], transfers)
    notes += _notes(transfers, pick, profiles[0], link_id)
    return DisaggregatedPlan(
        model_name=model.name, target=target.spec, isl=isl, osl=osl, ttft_ms=ttft_ms, itl_ms=itl_ms, rate_rps=rate,
        engine=engine.name, gpu_memory_utilization=engine.gpu_memory_utilization,
        prefill=list(prefill.values()), decode=list(decode.values()),
        pairings=[Pairing(prefill_tp=p, decode_tp=d, transfer=t, prefill_goodput_rps=prefill_rps[p, d])
                  for (p, d), t in transfers.items()],
        splits=splits, chosen=chosen, balance=None if pick is None else _balance(pick, prefill_rps, decode),
        aggregated=aggregated, aggregated_chosen=aggregated_chosen, winner=winner, verdict=verdict, notes=notes,
    )  # fmt: skip


def _priced(
    s: SplitRates, prefill: Mapping[int, PrefillWorker], workers: Mapping[int, _Worker],
    transfers: Mapping[tuple[int, int], KvTransfer], rate: float | None, targets: tuple[float | None, float | None],
    osl: int,
) -> Split:  # fmt: skip
    """``s`` at ``rate`` (its goodput without one): TTFT and ITL from its pools, whether it meets the targets."""
    load = s.rate_rps if rate is None else rate
    worker, decoder = prefill[s.prefill_tp], workers[s.decode_tp]
    misses = []
    rho = load / (s.prefill_workers * worker.capacity_rps)
    per_decoder = load / s.decode_workers
    if rho >= 1 or per_decoder > decoder.decode_rps(decoder.engine.admitted_per_replica):
        misses.append(f"rate {load:g} req/s > what it serves")
    queue = mdl_wait(min(rho, MAX_LOAD), worker.capacity_rps)
    batch = decoder.batch_at(per_decoder)
    step = decoder.decode_step(batch)
    transfer = transfers[s.prefill_tp, s.decode_tp].seconds
    ttft = queue + worker.prompt_ms / 1e3 + transfer + step
    ttft_ms, itl_ms = targets
    if ttft_ms is not None and ttft * 1e3 > ttft_ms * (1 + 1e-9):
        misses.append(f"ttft {ttft * 1e3:,.0f} ms > {ttft_ms:g} ms")
    if itl_ms is not None and step * 1e3 > itl_ms * (1 + 1e-9):
        misses.append(f"itl {step * 1e3:,.1f} ms > {itl_ms:g} ms")
    if rate is not None and rate > s.rate_rps * (1 + 1e-9) and not misses:
        misses.append(f"rate {rate:g} req/s > its goodput {s.rate_rps:.3g} req/s")
    return Split(
        prefill_tp=s.prefill_tp, prefill_workers=s.prefill_workers, decode_tp=s.decode_tp,
        decode_workers=s.decode_workers, gpus=s.gpus, goodput_rps=s.rate_rps, bottleneck=s.bottleneck,
        prefill_pool_rps=s.prefill_pool_rps, decode_pool_rps=s.decode_pool_rps, rate_rps=load,
        ttft_ms=ttft * 1e3, queue_ms=queue * 1e3, prefill_ms=worker.prompt_ms, transfer_ms=transfer * 1e3,
        itl_ms=step * 1e3, decode_batch=batch, output_tokens_per_s_per_gpu=load * osl / s.gpus,
        meets_targets=not misses and load > 0, misses=misses if load > 0 else ["serves nothing within the targets"],
    )  # fmt: skip


def _aggregated(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, profiles: tuple[DeviceProfile, DeviceProfile],
    tp: int, *, isl: int, osl: int, rate: float | None, targets: tuple[float | None, float | None],
) -> AggregatedLayout | None:  # fmt: skip
    """One aggregated replica of ``tp`` GPUs at the most requests/s within the targets (bisection over
    ``plan_at_rate``), its replicas filling the target (or as many as ``rate`` needs)."""
    one = target.model_copy(update={"n_devices": tp, "spec": f"{tp}x{target.target.id}"})
    ttft_ms, itl_ms = targets

    def at(rps: float) -> ServingPlan:
        return plan_at_rate(model, one, deployment, *profiles, isl=isl, osl=osl, rate=rps, tp=tp)

    def meets(rps: float) -> bool:
        plan = at(rps)
        return (
            not plan.saturated
            and (ttft_ms is None or plan.ttft_ms <= ttft_ms)
            and (itl_ms is None or plan.itl_ms <= itl_ms)
        )

    try:
        capacity = at(1e8).output_tokens_per_s / osl
    except MhaError:
        return None
    top = MAX_LOAD * capacity
    if meets(top):
        goodput = top
    else:
        low, high = 0.0, top
        for _ in range(BISECTIONS):
            middle = (low + high) / 2
            low, high = (middle, high) if meets(middle) else (low, middle)
        goodput = low
    replicas = target.n_devices // tp
    if rate is not None and goodput > 0:
        replicas = max(1, min(replicas, math.ceil(rate / goodput * (1 - 1e-9))))
    per_replica = goodput if rate is None else rate / replicas
    plan = at(max(per_replica, 1e-9))
    ok = goodput > 0 and (rate is None or per_replica <= goodput * (1 + 1e-9))
    return AggregatedLayout(
        tp=tp, replicas=replicas, capacity_rps=capacity, goodput_rps=goodput, rate_rps=per_replica,
        ttft_ms=plan.ttft_ms, itl_ms=plan.itl_ms, output_tokens_per_s_per_gpu=per_replica * osl / tp if ok else 0.0,
        meets_targets=ok,
    )  # fmt: skip


def _balance(pick: Split, prefill_rps: Mapping[tuple[int, int], float], decode: Mapping[int, DecodeWorker]) -> str:
    per_prefill = prefill_rps[pick.prefill_tp, pick.decode_tp]
    per_decode = decode[pick.decode_tp].goodput_rps
    return (
        f"one prefill worker (tp {pick.prefill_tp}) serves {per_prefill:.3g} req/s within the targets, one decode"
        f" worker (tp {pick.decode_tp}) {per_decode:.3g}: {per_decode / per_prefill:.2f} prefill worker(s) per decode"
        f" worker balance them; the pick runs {pick.prefill_workers} : {pick.decode_workers}, its {pick.bottleneck}"
        f" pool the limit ({pick.goodput_rps:.3g} req/s)"
    )


def _verdict(
    pick: Split | None, aggregated: AggregatedLayout | None, transfers: Mapping[tuple[int, int], KvTransfer]
) -> tuple[Literal["disaggregated", "aggregated", "tie", "neither"], str]:
    if pick is None and aggregated is None:
        return "neither", "neither a disaggregated split nor an aggregated replica meets the targets here"
    if pick is None:
        assert aggregated is not None
        return "aggregated", (
            f"aggregated (tp {aggregated.tp} x {aggregated.replicas}) meets the targets and no disaggregated split does"
        )
    if aggregated is None:
        return "disaggregated", (
            f"only disaggregated meets the targets ({pick.output_tokens_per_s_per_gpu:,.0f} tokens/s per GPU); no"
            " aggregated replica does: its prefill chunks stall the decodes"
        )
    disagg, agg = pick.output_tokens_per_s_per_gpu, aggregated.output_tokens_per_s_per_gpu
    transfer = transfers[pick.prefill_tp, pick.decode_tp].seconds * 1e3
    figures = (
        f"disaggregated {disagg:,.0f} against aggregated {agg:,.0f} output tokens/s per GPU within the targets"
        f" ({disagg / agg:.2f}x); ITL {pick.itl_ms:.1f} ms against {aggregated.itl_ms:.1f} ms, TTFT"
        f" {pick.ttft_ms:,.0f} ms (KV transfer {transfer:.2f} ms of it) against {aggregated.ttft_ms:,.0f} ms"
    )
    if abs(disagg - agg) <= TIE * agg:
        return "tie", f"{figures}: the same GPUs serve the load either way (within {TIE:.0%})"
    if disagg > agg:
        return "disaggregated", (
            f"{figures}: the decode pool's steps carry no prefill chunks, and each pool runs its own tp"
            f" (prefill {pick.prefill_tp}, decode {pick.decode_tp})"
        )
    larger = max(pick.prefill_pool_rps, pick.decode_pool_rps)
    idle = 1 - pick.goodput_rps / larger
    return "aggregated", (
        f"{figures}: aggregated keeps every GPU on both phases, while the split's {_other(pick.bottleneck)} pool"
        f" idles {idle:.0%} of its goodput in whole workers"
        + (f" and each request waits {transfer:.1f} ms for its cache" if transfer >= 1 else "")
    )


def _other(pool: str) -> str:
    return "decode" if pool == "prefill" else "prefill"


def _notes(
    transfers: Mapping[tuple[int, int], KvTransfer], pick: Split | None, profile: DeviceProfile, link_id: str | None
) -> list[str]:
    notes = [
        f"times on profile {profile.name} ({profile.kind}); closed form, not simulated: queues as M/D/1, each pool"
        f" loaded to at most {MAX_LOAD:.0%} of its capacity",
        "TTFT = prefill queue + the prompt's prefill + the KV transfer + one decode step on the decode worker (vLLM's"
        " NixlConnector decode worker computes the first token again); ITL = the decode worker's step, no prefill"
        " chunks among its decodes",
    ]
    if pick is not None:
        notes.append(f"KV transfer: {transfers[pick.prefill_tp, pick.decode_tp].how}")
    if link_id is None:
        notes.append("the link: the scale-up link inside one node, the scale-out link across nodes (--kv-link names"
                     " another)")  # fmt: skip
    return notes
