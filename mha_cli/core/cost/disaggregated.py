"""``mha plan --disaggregated``: prefill workers and decode workers on separate GPUs, searched and priced against the
best aggregated plan on the same GPUs.

The pipeline, one stage a function:

1. **workers** (``core.cost.disaggregated_workers``): for each tensor-parallel degree whose engine starts on ``tp``
   devices, a prefill worker's capacity and one prompt's prefill, a decode worker's steps at its batch (no prefill
   chunks among them: ITL = step(b)) and what its pool admits.
2. **transfer** (``core.cost.kv_transfer``): each request's cache, as the decode ranks hold it, over the link.
3. **goodput** per worker, the most requests/s it serves within the targets: a decode worker at the largest batch
   whose step is within ``--itl-ms``; a prefill worker at the load whose TTFT = queue + prefill + transfer + the
   decode worker's first step (vLLM's decode worker computes the first token again, in one step) is within
   ``--ttft-ms``, its queue an M/D/1 queue (``core.cost.goodput``). Every pool is loaded to at most ``MAX_LOAD`` of
   its capacity (without targets: that load), as a queue at full load never drains.
4. **splits** (``split_rates``): every (prefill workers x prefill tp) + (decode workers x decode tp) within the
   GPUs; a split serves min(prefill pool, decode pool) requests/s. The balance: prefill : decode workers =
   decode worker rate : prefill worker rate.
5. **pick**: the most output tokens/s per GPU (load x osl / GPUs) that meets the targets, at ``--rate`` when given
   (the fewest GPUs that serve it), else at each split's goodput.
6. **aggregated** on the same footing (``core.cost.goodput.aggregated_layout``): each tp's replica at the most
   requests/s its closed-form plan (``plan_at_rate``, prefill chunks stalling decodes) serves within the targets.

7. **simulated**: the pick's loop at its load (``core.serve.disaggregated``), for its percentiles.

The search is closed form. Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal, NamedTuple

from pydantic import Field

from mha_cli.core.cost.disaggregated_workers import DecodeWorker, PrefillWorker, WorkerSteps, worker_tps
from mha_cli.core.cost.goodput import MAX_LOAD, AggregatedLayout, aggregated_layout, mdl_wait, prefill_goodput
from mha_cli.core.cost.kv_transfer import KvTransfer, kv_link, kv_transfer
from mha_cli.core.cost.plan import LayoutPlans
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.errors import BadInputError, MhaError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.serve.disaggregated import PoolTimes, SimulatedSplit, simulate_split
from mha_cli.core.targets import ResolvedTarget

TIE = 0.01
"""Tokens/s per GPU this close (relative) are a tie: at one --rate, splits and replicas often use the same GPUs."""


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
    devices_per_node: int
    """GPUs a node holds: a worker never straddles two (the launch lines place them)."""
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
    simulated: SimulatedSplit | None = None
    """The pick at its load in the simulated loop (``core.serve.disaggregated``): TTFT and TPOT percentiles."""
    launch: dict[str, str] = Field(default_factory=dict)
    """The pick's launch lines: ``vllm`` (every worker and the proxy) and ``sglang`` (every worker and the router)."""
    launch_note: str | None = None
    notes: list[str] = Field(default_factory=empty_list)


def placements(tps: list[int], devices_per_node: int) -> list[tuple[int, int]]:
    """(node, first GPU in that node) of workers of ``tps`` GPUs laid out in order, none straddling two nodes."""
    found, node, used = [], 0, 0
    for tp in tps:
        if used + tp > devices_per_node:
            node, used = node + 1, 0
        found.append((node, used))
        used += tp
    return found


NIXL_MATRIX = "https://docs.vllm.ai/en/latest/features/nixl_connector_compatibility.html"
HYBRID_SAME_TP = (
    "a model with fixed-state (Mamba / linear-attention) layers pairs prefill and decode workers of the same tp only:"
    f" vLLM's NixlConnector does not yet transfer their state between different tps ({NIXL_MATRIX})"
)


SIMULATED_REQUESTS = 1000
"""Requests the pick's simulated run sends (Poisson at its load)."""


def worker_steps(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, profiles: tuple[DeviceProfile, DeviceProfile],
    tp: int, *, isl: int, osl: int,
) -> WorkerSteps:  # fmt: skip
    """One worker of ``tp`` of ``target``'s devices: its engine plan (refused in one line when it would not start)."""
    one = target.model_copy(update={"n_devices": tp, "spec": f"{tp}x{target.target.id}"})
    plans = LayoutPlans(model, one, deployment, *profiles, isl=isl, osl=osl, tp=tp)
    return WorkerSteps(plans, deployment, profiles[0], isl, osl)


def pool_times(prefill: WorkerSteps, decode: WorkerSteps, transfer_s: float) -> PoolTimes:
    """A split's step times as the simulated loop takes them."""
    return PoolTimes(prefill_seconds=prefill.prefill_seconds, prompts_per_step=prefill.prompts_per_step,
                     decode_seconds=decode.decode_step, admitted=decode.engine.admitted_per_replica,
                     transfer_s=transfer_s)  # fmt: skip


def has_fixed_state(model: ModelSpec) -> bool:
    """Whether ``model`` keeps a fixed state per sequence in some layer (Mamba, linear attention, xLSTM...)."""
    return model.recurrent is not None or model.n_state_layers > 0


def split_rates(
    prefill_rps: Mapping[tuple[int, int], float],
    decode_rps: Mapping[int, float],
    n_devices: int,
    devices_per_node: int | None = None,
) -> list[SplitRates]:
    """Every split within ``n_devices`` (its workers placed whole in nodes of ``devices_per_node``, default one
    node): ``prefill_rps[(prefill tp, decode tp)]`` is one prefill worker's requests/s (its TTFT holds the transfer
    to that decode tp), ``decode_rps[decode tp]`` one decode worker's."""
    per_node = devices_per_node or n_devices
    found = []
    for (prefill_tp, decode_tp), per_prefill in prefill_rps.items():
        per_decode = decode_rps.get(decode_tp)
        if per_decode is None:
            continue
        for n_prefill in range(1, (n_devices - decode_tp) // prefill_tp + 1):
            for n_decode in range(1, (n_devices - n_prefill * prefill_tp) // decode_tp + 1):
                tps = [prefill_tp] * n_prefill + [decode_tp] * n_decode
                if placements(tps, per_node)[-1][0] >= n_devices // per_node:
                    continue  # the workers do not fit whole in the nodes
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
    simulate: int | None = SIMULATED_REQUESTS,
) -> DisaggregatedPlan:
    """Search the disaggregated deployments of ``model`` on ``target`` and compare the best with aggregated serving
    (see the module docstring). ``link_id``: the ``core.links`` id to move KV over (default: by placement);
    ``simulate``: requests to run the pick's simulated loop with at its load (None: none)."""
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
    workers: dict[int, WorkerSteps] = {}
    per_node = target.devices_per_node  # no worker spans nodes (2x8xh100: 8)
    for tp in worker_tps(model, per_node):
        try:
            workers[tp] = worker_steps(model, target, deployment, profiles, tp, isl=isl, osl=osl)
        except MhaError as exc:
            notes.append(f"tp {tp}: no worker ({exc.message})")
    if not workers:
        raise BadInputError(f"no worker of {model.name} starts on {target.spec}: {'; '.join(notes)}")
    engine = next(iter(workers.values())).engine
    prefill = {tp: w.prefill() for tp, w in workers.items()}
    decode = {tp: w.decode(itl_s) for tp, w in workers.items()}
    transfers: dict[tuple[int, int], KvTransfer] = {}
    prefill_rps: dict[tuple[int, int], float] = {}
    same_tp = has_fixed_state(model)
    if same_tp:
        notes.append(HYBRID_SAME_TP)
    pairs = [(p, d) for p in workers for d in workers if p + d <= target.n_devices and (p == d or not same_tp)]
    for tp_p, tp_d in pairs:
        per_rank = kv_footprint(model, seq_len=isl, kv_dtype=deployment.kv_dtype, tp=tp_d,
                                mla_cache=deployment.mla_cache).bytes_per_sequence_per_rank  # fmt: skip
        over = kv_link(target, link_id)
        transfers[tp_p, tp_d] = kv_transfer(per_rank, prefill_tp=tp_p, decode_tp=tp_d, over=over)
        first_step = workers[tp_d].decode_step(max(1, decode[tp_d].goodput_batch))
        fixed = prefill[tp_p].prompt_ms / 1e3 + transfers[tp_p, tp_d].seconds + first_step
        prefill_rps[tp_p, tp_d] = prefill_goodput(prefill[tp_p].capacity_rps, fixed, ttft_s)
    rates = split_rates(prefill_rps, {tp: d.goodput_rps for tp, d in decode.items()}, target.n_devices, per_node)
    targets = (ttft_ms, itl_ms)
    splits = [_priced(s, prefill, workers, transfers, rate, targets, osl) for s in rates]
    splits.sort(key=lambda s: (-s.meets_targets, -s.output_tokens_per_s_per_gpu, -s.goodput_rps, s.ttft_ms))
    chosen = 0 if splits and splits[0].meets_targets else None
    aggregated = [
        aggregated_layout(model, target, deployment, profiles, tp, isl=isl, osl=osl, rate=rate, targets=targets)
        for tp in workers
    ]
    aggregated = [layout for layout in aggregated if layout is not None]
    meeting = [i for i, layout in enumerate(aggregated) if layout.meets_targets]
    aggregated_chosen = max(meeting, key=lambda i: aggregated[i].output_tokens_per_s_per_gpu) if meeting else None
    pick = None if chosen is None else splits[chosen]
    simulated = None
    if pick is not None and simulate:
        times = pool_times(workers[pick.prefill_tp], workers[pick.decode_tp],
                           transfers[pick.prefill_tp, pick.decode_tp].seconds)  # fmt: skip
        simulated = simulate_split(times, prefill_workers=pick.prefill_workers, decode_workers=pick.decode_workers,
                                   rate=pick.rate_rps, osl=osl, requests=simulate)  # fmt: skip
    winner, verdict = _verdict(pick, None if aggregated_chosen is None else aggregated[aggregated_chosen], transfers)
    notes += _notes(transfers, pick, profiles[0], link_id)
    return DisaggregatedPlan(
        model_name=model.name, target=target.spec, isl=isl, osl=osl, ttft_ms=ttft_ms, itl_ms=itl_ms, rate_rps=rate,
        engine=engine.name, devices_per_node=per_node, gpu_memory_utilization=engine.gpu_memory_utilization,
        prefill=list(prefill.values()), decode=list(decode.values()),
        pairings=[Pairing(prefill_tp=p, decode_tp=d, transfer=t, prefill_goodput_rps=prefill_rps[p, d])
                  for (p, d), t in transfers.items()],
        splits=splits, chosen=chosen, balance=None if pick is None else _balance(pick, prefill_rps, decode, rate),
        aggregated=aggregated, aggregated_chosen=aggregated_chosen, winner=winner, verdict=verdict, notes=notes,
        simulated=simulated,
    )  # fmt: skip


def _priced(
    s: SplitRates, prefill: Mapping[int, PrefillWorker], workers: Mapping[int, WorkerSteps],
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


def _balance(
    pick: Split, prefill_rps: Mapping[tuple[int, int], float], decode: Mapping[int, DecodeWorker], rate: float | None
) -> str:
    per_prefill = prefill_rps[pick.prefill_tp, pick.decode_tp]
    per_decode = decode[pick.decode_tp].goodput_rps
    offered = (
        f"; at {rate:g} req/s: ceil({rate:g} / {per_prefill:.3g}) = {math.ceil(rate / per_prefill)} prefill and"
        f" ceil({rate:g} / {per_decode:.3g}) = {math.ceil(rate / per_decode)} decode worker(s)"
        if rate is not None
        else ""
    )
    return (
        f"one prefill worker (tp {pick.prefill_tp}) serves {per_prefill:.3g} req/s within the targets, one decode"
        f" worker (tp {pick.decode_tp}) {per_decode:.3g}: {per_decode / per_prefill:.2f} prefill worker(s) per decode"
        f" worker balance them; the pick runs {pick.prefill_workers} : {pick.decode_workers}, its {pick.bottleneck}"
        f" pool the limit ({pick.goodput_rps:.3g} req/s){offered}"
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
        f"times on profile {profile.name} ({profile.kind}); the search is closed form: queues as M/D/1, each pool"
        f" loaded to at most {MAX_LOAD:.0%} of its capacity; --ttft-ms and --itl-ms are read against its means (the"
        " pick's simulated percentiles are shown beside them)",
        "TTFT = prefill queue + the prompt's prefill + the KV transfer + one decode step on the decode worker (vLLM's"
        " NixlConnector decode worker computes the first token again); ITL = the decode worker's step, no prefill"
        " chunks among its decodes",
    ]
    if pick is not None:
        notes.append(f"KV transfer: {transfers[pick.prefill_tp, pick.decode_tp].how}")
    if link_id is None:
        notes.append("the link: the scale-up link on one node; on several, the scale-out link for every transfer (a"
                     " split whose pools share a node is priced as if they did not); --kv-link names another")  # fmt: skip
    return notes
