"""``mha plan --disaggregated``: prefill workers and decode workers on separate GPUs, searched and priced against the
best aggregated plan on the same GPUs.

The pipeline, one stage a function:

1. **workers** (``core.cost.disaggregated_workers``): for each layout (``core.cost.disaggregated_layouts``: tp
   GPUs, or DP attention over dp ranks with the experts spread over them; inside a node or over whole nodes) whose
   engine starts, a prefill worker's capacity and one prompt's prefill, a decode worker's steps at its batch (no
   prefill chunks among them: ITL = step(b)) and what its pool admits.
2. **transfer** (``core.cost.kv_transfer``): each request's cache, as the decode ranks hold it, over the link
   (under DP attention a request lives on one data-parallel rank: its tp GPUs send and receive it).
3. **goodput** per worker, the most requests/s it serves within the targets: a decode worker at the largest batch
   whose step is within ``--itl-ms``; a prefill worker at the load whose TTFT = queue + prefill + transfer + the
   decode worker's first step (vLLM's decode worker computes the first token again, in one step) is within
   ``--ttft-ms``, its queue an M/D/1 queue (``core.cost.goodput``; under DP attention one queue per rank). Every
   pool is loaded to at most ``MAX_LOAD`` of its capacity (without targets: that load), as a queue at full load
   never drains.
4. **splits** (``split_rates``): every (prefill workers x their GPUs) + (decode workers x theirs) within the
   GPUs, placed in the nodes (``placements``); a split serves min(prefill pool, decode pool) requests/s. The
   balance: prefill : decode workers = decode worker rate : prefill worker rate.
5. **pick**: the most output tokens/s per GPU (load x osl / GPUs) that meets the targets, at ``--rate`` when given
   (the fewest GPUs that serve it), else at each split's goodput.
6. **aggregated** on the same footing (``core.cost.goodput.aggregated_layout``): each tp's replica at the most
   requests/s its closed-form plan (``plan_at_rate``, prefill chunks stalling decodes) serves within the targets.

7. **simulated**: the pick's loop at its load (``core.serve.disaggregated``), for its percentiles, confirming it
   (``core.cost.disaggregated_confirm``): where the loop misses a target, the split's load is lowered to the most the
   loop meets them at, and the next split run while it could beat it.

The search is closed form, its pick confirmed in the simulated loop; the aggregated plans stay closed form. Pure
Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal, NamedTuple

from pydantic import Field

from mha_cli.core.cost.disaggregated_confirm import confirm_splits
from mha_cli.core.cost.disaggregated_layouts import (
    WorkerLayout,
    as_layout,
    devices_reached,
    worker_layouts,
    worker_sizes,
)
from mha_cli.core.cost.disaggregated_workers import DecodeWorker, PrefillWorker, WorkerSteps
from mha_cli.core.cost.goodput import MAX_LOAD, AggregatedLayout, aggregated_layout, mdl_wait, prefill_goodput
from mha_cli.core.cost.kv_transfer import KvTransfer, kv_link, kv_transfer
from mha_cli.core.cost.plan import LayoutPlans, check_user_rate
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.dp_attention import a2a_backend_on
from mha_cli.core.engine.context_limit import past_derived_length
from mha_cli.core.engine.settings import check_deployment_runs_on, deployment_generation, release_in_force
from mha_cli.core.engine.vllm_rule_releases import HYBRID_OFF_ERROR, connector_turns_off_hybrid
from mha_cli.core.errors import BadInputError, EngineRefusedError, MhaError, NotPricedError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.links import host_devices
from mha_cli.core.quantities import format_ms, format_past
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.serve.disaggregated import PoolTimes, SimulatedSplit, simulate_split
from mha_cli.core.targets import ResolvedTarget

TIE = 0.01
"""Tokens/s per GPU this close (relative) are a tie: at one --rate, splits and replicas often use the same GPUs."""


class Pairing(Record):
    """A prefill worker of ``prefill_tp`` x ``prefill_dp`` GPUs feeding decode workers of ``decode_tp`` x
    ``decode_dp``."""

    prefill_tp: int
    decode_tp: int
    prefill_dp: int
    """DP attention ranks of the prefill worker (1: tensor-parallel)."""
    decode_dp: int
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
    prefill_dp: int = 1
    decode_dp: int = 1

    @property
    def prefill(self) -> WorkerLayout:
        return WorkerLayout(self.prefill_tp, self.prefill_dp)

    @property
    def decode(self) -> WorkerLayout:
        return WorkerLayout(self.decode_tp, self.decode_dp)


class Split(Record):
    """One disaggregated deployment, priced at a load."""

    prefill_tp: int
    """GPUs of each data-parallel rank of a prefill worker (the whole worker when ``prefill_dp`` is 1)."""
    prefill_workers: int
    decode_tp: int
    decode_workers: int
    prefill_dp: int
    """DP attention ranks of each prefill worker (1: tensor-parallel)."""
    decode_dp: int
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
    """Of the requests it serves (``served_rps``), not the load offered."""
    meets_targets: bool
    misses: list[str] = Field(default_factory=empty_list)
    served_rps: float | None = None
    """Requests/s it serves at this load: the load, or, where the load is more than its pools serve
    (``saturated``), what they serve; None only in records written before it was kept."""
    saturated: bool = False
    """The load is more than its prefill or decode pool serves: its queue grows without bound (TTFT has no steady
    value; ``ttft_ms`` is the queue's at ``MAX_LOAD``)."""
    served_by: Literal["prefill", "decode"] | None = None
    """Where ``saturated``: the pool that sets ``served_rps`` at this load (the fewer requests/s at capacity), which
    the table's limit column shows; ``bottleneck`` stays the goodput's (trial 289 #7)."""

    @property
    def prefill(self) -> WorkerLayout:
        return WorkerLayout(self.prefill_tp, self.prefill_dp)

    @property
    def decode(self) -> WorkerLayout:
        return WorkerLayout(self.decode_tp, self.decode_dp)


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
    """GPUs a node holds: a worker that fits one never straddles two, a larger one takes whole nodes (the launch
    lines place them)."""
    devices_per_host: int | None = None
    """GPUs one host drives where fewer than a node (an NVL72 rack's compute tray: 4; ``core.links.HOST_DEVICES``):
    the launch lines place workers host by host; None: a host is a node."""
    gpu_memory_utilization: float
    """The engine's memory fraction at the first layout priced; each worker's own, which its line writes, is on the
    worker (SGLang's default is lower for a DP-attention worker)."""
    prefill: list[PrefillWorker]
    decode: list[DecodeWorker]
    pairings: list[Pairing]
    """One per (prefill layout, decode layout) searched: the KV transfer between them and a prefill worker's
    goodput."""
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
    p99_past_targets: list[str] = Field(default_factory=empty_list)
    """The pick's simulated p99s past --ttft-ms / --itl-ms (``p99 TTFT 812 ms > --ttft-ms 500``, TPOT to 0.1 ms):
    the split is judged on its means, so it meets the targets on its means only (trial 394 #4), whichever side wins;
    empty when none is, or no loop ran."""
    launch: dict[str, str] = Field(default_factory=dict)
    """The pick's launch lines: ``vllm`` (every worker and the proxy) and ``sglang`` (every worker and the router)."""
    launch_note: str | None = None
    engine_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """The engine release typed (``--engine vllm@0.10.2``), whose flags the launch lines take, as a plan's; absent
    when none was typed (trial 347 #4)."""
    priced_as_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """As a plan's: the newest release read where the one typed is later (review 349 #4)."""
    priced_rules_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """As a plan's: the release whose memory and step rules priced it, beside ``priced_as_release``."""
    target_alias_note: str | None = None
    """As a search's: how an alias named the target (``h100 -> h100-sxm (NVIDIA H100 SXM5 80GB)``), also said on
    stderr (trial 406 #8: --disaggregated said neither)."""
    notes: list[str] = Field(default_factory=empty_list)


NIXL_MATRIX = "https://docs.vllm.ai/en/latest/features/nixl_connector_compatibility.html"
NIXL_FROM = (0, 9)
"""The first vLLM (major, minor) with NixlConnector (``core.engine.flags``: 0.9.0)."""
HYBRID_SAME_TP = (
    "a model with fixed-state (Mamba / linear-attention) layers pairs prefill and decode workers of the same tp only:"
    f" vLLM's NixlConnector does not yet transfer their state between different tps ({NIXL_MATRIX})"
)


SIMULATED_REQUESTS = 1000
"""Requests the pick's simulated run sends (Poisson at its load)."""


def worker_steps(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, profiles: tuple[DeviceProfile, DeviceProfile],
    worker: int | WorkerLayout, *, isl: int, osl: int,
) -> WorkerSteps:  # fmt: skip
    """One worker of ``worker``'s layout (an int: tp GPUs) on ``target``'s devices, in its nodes: its engine plan
    (refused in one line when it would not start). A vLLM worker runs NixlConnector (``kv_connector``) from 0.9, which
    sets how vLLM groups its layers (``core.engine.vllm_rule_releases.connector_turns_off_hybrid``)."""
    layout = as_layout(worker)
    if deployment_generation(deployment).engine == "vllm":
        release = release_in_force(deployment)
        if release is None or release >= NIXL_FROM:  # before it vLLM has no NixlConnector: no vllm line is written
            deployment = deployment.model_copy(update={"kv_connector": "nixl"})
    one = target.model_copy(update={"n_devices": layout.gpus, "spec": f"{layout.gpus}x{target.target.id}"})
    if layout.dp > 1:  # DP attention: whole experts over every GPU, reached by DeepEP as the launch lines say
        update = {"dp": layout.dp, "expert_parallel": True, "moe_a2a_backend": a2a_backend_on(target.target.vendor)}
        deployment = deployment.model_copy(update=update)
    plans = LayoutPlans(model, one, deployment, *profiles, isl=isl, osl=osl, tp=layout.tp)
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
    prefill_rps: Mapping[tuple[int | WorkerLayout, int | WorkerLayout], float],
    decode_rps: Mapping[int | WorkerLayout, float],
    n_devices: int,
    devices_per_node: int | None = None,
) -> list[SplitRates]:
    """Every split within ``n_devices`` (its workers placed in nodes of ``devices_per_node``, default one node, by
    ``placements``): ``prefill_rps[(prefill layout, decode layout)]`` is one prefill worker's requests/s (its TTFT
    holds the transfer to that decode layout), ``decode_rps[decode layout]`` one decode worker's; a bare int is a
    tensor-parallel worker of that many GPUs."""
    per_node = devices_per_node or n_devices
    found = []
    for (prefill_key, decode_key), per_prefill in prefill_rps.items():
        per_decode = decode_rps.get(decode_key)
        if per_decode is None:
            continue
        prefill, decode = as_layout(prefill_key), as_layout(decode_key)
        for n_prefill in range(1, (n_devices - decode.gpus) // prefill.gpus + 1):
            for n_decode in range(1, (n_devices - n_prefill * prefill.gpus) // decode.gpus + 1):
                if devices_reached([prefill.gpus] * n_prefill + [decode.gpus] * n_decode, per_node) > n_devices:
                    continue  # the workers do not fit in the nodes (a part-filled last node holds fewer)
                pool_prefill, pool_decode = n_prefill * per_prefill, n_decode * per_decode
                found.append(SplitRates(
                    prefill.tp, n_prefill, decode.tp, n_decode, n_prefill * prefill.gpus + n_decode * decode.gpus,
                    min(pool_prefill, pool_decode), "prefill" if pool_prefill < pool_decode else "decode",
                    pool_prefill, pool_decode, prefill.dp, decode.dp,
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
    if rate is not None:
        check_user_rate(rate)
    if deployment.speculative is not None:
        raise BadInputError("--disaggregated prices plain decoding: leave out speculative decoding")
    if deployment.dp or deployment.expert_parallel:
        raise BadInputError(
            "--disaggregated searches its workers' layouts (tensor-parallel, and DP attention with expert parallelism"
            " for an MoE model): leave out --dp and --expert-parallel"
        )
    generation = deployment_generation(deployment)
    check_deployment_runs_on(deployment, target.target)  # the engine and its release, before any worker (review 353)
    from mha_cli.core.engine.quant_capability import deployment_step_refusal

    emulated = deployment_step_refusal(deployment, target.target)
    if emulated is not None:  # once, before the workers (review 398 #2: "give more nodes" followed it)
        raise BadInputError(emulated)
    if generation.id == "vllm-v0":  # its launch lines would name a connector V0 does not have
        raise BadInputError(
            "--disaggregated launches vLLM's NixlConnector, a V1 KV connector that vLLM V0 lacks: use --engine vllm"
            " (or sglang)"
        )
    connector_note = None
    if generation.engine == "vllm":  # every worker runs NixlConnector (worker_steps), which sets how vLLM groups layers
        release = release_in_force(deployment)
        connector_off = connector_turns_off_hybrid("nixl", release, deployment.engine_version)
        if connector_off and any(kind in ("local", "chunked") for kind in model.token_layer_kinds()):
            connector_note = (
                f"NixlConnector turns vLLM {'.'.join(map(str, release or ()))}'s hybrid KV cache manager off (every"
                " release before 0.22): its sliding-window and chunked layers are held, and moved, as full attention"
            )
        if has_fixed_state(model) and not model.attention_free and connector_off:
            raise BadInputError(
                f"--disaggregated runs every vLLM worker with NixlConnector, which turns vLLM"
                f" {'.'.join(map(str, release or ()))}'s hybrid KV cache manager off (every release before 0.22), and"
                f" vLLM then refuses a Mamba/linear-attention hybrid such as {model.name} ('{HYBRID_OFF_ERROR}'): use"
                " --engine vllm@0.22 or later, or --engine sglang"
            )
    ttft_s = None if ttft_ms is None else ttft_ms / 1e3
    itl_s = None if itl_ms is None else itl_ms / 1e3
    workers: dict[WorkerLayout, WorkerSteps] = {}
    refused: dict[str, list[str]] = {}  # why a layout's engine would not start -> those layouts
    per_node = target.devices_per_node  # 2x8xh100: 8; a worker of more GPUs takes whole nodes
    for layout in worker_layouts(model, deployment, target.n_devices, per_node):
        try:
            workers[layout] = worker_steps(model, target, deployment, profiles, layout, isl=isl, osl=osl)
        except EngineRefusedError as exc:  # its reason leaves out the layout's own figures: one line for all it stops
            refused.setdefault(exc.reason, []).append(layout.label)
        except NotPricedError:  # no layout changes it
            raise
        except MhaError as exc:
            refused.setdefault(exc.message, []).append(layout.label)
    notes = [f"{', '.join(labels)}: no worker ({why})" for why, labels in refused.items()]
    if connector_note is not None:
        notes.append(connector_note)
    vllm_release = release_in_force(deployment) if (deployment.engine or "vllm") == "vllm" else None
    past = past_derived_length(model, isl + osl, ("vllm", "sglang"), vllm_release)  # both engines' lines are printed
    if past:
        notes.append(past)
    if not workers:
        nodes = f"NODESx{per_node}x{target.target.id}"
        more = f"more nodes ({nodes})" if target.n_nodes > 1 else f"more GPUs, or several nodes ({nodes})"
        raise BadInputError(
            f"no worker of {model.name} starts on {target.spec} (workers of up to {_largest_worker(target)} GPUs,"
            f" the other pool beside them): {'; '.join(notes)}; give {more}: a worker may span whole nodes"
        )
    engine = next(iter(workers.values())).engine
    prefill = {layout: w.prefill() for layout, w in workers.items()}
    decode = {layout: w.decode(itl_s) for layout, w in workers.items()}
    transfers: dict[tuple[WorkerLayout, WorkerLayout], KvTransfer] = {}
    prefill_rps: dict[tuple[WorkerLayout, WorkerLayout], float] = {}
    same_tp = has_fixed_state(model)
    if same_tp:
        notes.append(HYBRID_SAME_TP)
    pairs = [
        (p, d) for p in workers for d in workers if p.gpus + d.gpus <= target.n_devices and (p == d or not same_tp)
    ]
    for p, d in pairs:
        transfers[p, d] = request_transfer(
            model, deployment, target, p, d, isl=isl, link_id=link_id, windows_full=workers[d].engine.windows_full
        )
        first_step = workers[d].decode_step(max(1, decode[d].goodput_batch))
        fixed = prefill[p].prompt_ms / 1e3 + transfers[p, d].seconds + first_step
        # under DP attention each rank queues its own prompts: dp M/D/1 queues of a rank's capacity each
        prefill_rps[p, d] = p.dp * prefill_goodput(prefill[p].capacity_rps / p.dp, fixed, ttft_s)
    rates = split_rates(prefill_rps, {layout: d.goodput_rps for layout, d in decode.items()}, target.n_devices,
                        per_node)  # fmt: skip
    if not rates:  # every pairing needs more GPUs than the target has (or its nodes hold)
        smallest = min(layout.gpus for layout in workers)
        notes.append(
            f"no split fits: the smallest worker that starts takes {smallest} GPUs, so a prefill and a decode worker"
            f" need {2 * smallest} GPUs in nodes of {per_node}; {target.spec} has {target.n_devices}"
        )
    targets = (ttft_ms, itl_ms)
    splits = [_priced(s, prefill, workers, transfers, rate, targets, osl) for s in rates]
    splits.sort(key=lambda s: (-s.meets_targets, -s.output_tokens_per_s_per_gpu, -s.goodput_rps, s.ttft_ms))
    chosen = 0 if splits and splits[0].meets_targets else None
    simulated, confirmed_notes, confirming = None, [], chosen is not None and bool(simulate)
    if confirming:  # the pick confirmed in the simulated loop, its load lowered where it misses

        def run(split: Split, load: float) -> SimulatedSplit:
            times = pool_times(
                workers[split.prefill], workers[split.decode], transfers[split.prefill, split.decode].seconds
            )
            # each DP attention rank runs its own requests: the loop takes every rank as a worker of its own
            return simulate_split(times, prefill_workers=split.prefill_workers * split.prefill_dp,
                                  decode_workers=split.decode_workers * split.decode_dp, rate=load, osl=osl,
                                  requests=simulate)  # fmt: skip

        def at_load(split: Split, load: float) -> Split:
            return _priced(_rates_of(split), prefill, workers, transfers, load, targets, osl)

        confirmed = confirm_splits(splits, run, at_load, ttft_ms=ttft_ms, itl_ms=itl_ms, fixed_rate=rate is not None)
        splits, chosen, simulated = confirmed.splits, confirmed.chosen, confirmed.simulated
        confirmed_notes = confirmed.notes
    alone = deployment.model_copy(update={"kv_connector": None})  # an aggregated server runs no connector
    aggregated = [
        aggregated_layout(
            model, target, alone, profiles, layout.tp, isl=isl, osl=osl, rate=rate, targets=targets, dp=layout.dp
        )
        for layout in workers
    ]
    aggregated = [layout for layout in aggregated if layout is not None]
    meeting = [i for i, layout in enumerate(aggregated) if layout.meets_targets]
    aggregated_chosen = (  # the most tokens/s per GPU; of a tie (one --rate served), the shortest ITL
        max(meeting, key=lambda i: (aggregated[i].output_tokens_per_s_per_gpu, -aggregated[i].itl_ms))
        if meeting
        else None
    )
    pick = None if chosen is None else splits[chosen]
    best = None if aggregated_chosen is None else aggregated[aggregated_chosen]
    past = p99_past_targets(simulated, ttft_ms=ttft_ms, itl_ms=itl_ms)
    winner, verdict = _verdict(pick, best, transfers, fits=bool(rates), total_gpus=target.n_devices, p99_past=past)
    notes += _notes(transfers, pick, profiles[0], link_id, simulated=confirming)
    if pick is not None:
        notes += _layout_notes(pick, workers)
    notes += confirmed_notes
    return DisaggregatedPlan(
        model_name=model.name, target=target.spec, isl=isl, osl=osl, ttft_ms=ttft_ms, itl_ms=itl_ms, rate_rps=rate,
        engine=engine.name, devices_per_node=per_node, gpu_memory_utilization=engine.gpu_memory_utilization,
        devices_per_host=host if (host := host_devices(target.target.id)) < per_node else None,
        prefill=list(prefill.values()), decode=list(decode.values()),
        pairings=[Pairing(prefill_tp=p.tp, decode_tp=d.tp, prefill_dp=p.dp, decode_dp=d.dp, transfer=t,
                          prefill_goodput_rps=prefill_rps[p, d]) for (p, d), t in transfers.items()],
        splits=splits, chosen=chosen, balance=None if pick is None else _balance(pick, prefill_rps, decode, rate),
        aggregated=aggregated, aggregated_chosen=aggregated_chosen, winner=winner, verdict=verdict, notes=notes,
        simulated=simulated, p99_past_targets=past,
    )  # fmt: skip


def p99_past_targets(simulated: SimulatedSplit | None, *, ttft_ms: float | None, itl_ms: float | None) -> list[str]:
    """The simulated pick's p99 TTFT and TPOT past the targets, as ``p99 TTFT 812 ms > --ttft-ms 500``, each as the
    simulated line prints it (TPOT to 0.1 ms: review 401 #2, "p99 TPOT 28 ms > --itl-ms 28.4" for a p99 of 28.5)."""
    if simulated is None:
        return []
    measured = (
        ("TTFT", simulated.ttft_ms.p99, "--ttft-ms", ttft_ms, 0),
        ("TPOT", simulated.tpot_ms.p99, "--itl-ms", itl_ms, 1),
    )
    return [f"p99 {name} {format_past(p99, target, digits)} ms > {flag} {format_ms(target)}"
            for name, p99, flag, target, digits in measured if target is not None and p99 > target]  # fmt: skip


def _priced(
    s: SplitRates, prefill: Mapping[WorkerLayout, PrefillWorker], workers: Mapping[WorkerLayout, WorkerSteps],
    transfers: Mapping[tuple[WorkerLayout, WorkerLayout], KvTransfer], rate: float | None,
    targets: tuple[float | None, float | None], osl: int,
) -> Split:  # fmt: skip
    """``s`` at ``rate`` (its goodput without one): TTFT and ITL from its pools, whether it meets the targets."""
    load = s.rate_rps if rate is None else rate
    worker, decoder = prefill[s.prefill], workers[s.decode]
    misses = []
    prefill_most = s.prefill_workers * worker.capacity_rps
    rho = load / prefill_most
    # the decode pool receives what the prefill pool finishes: past its capacity, that, not the rate offered (trial
    # 330 #2: the decode batch, and its ITL, grew with a rate the prefill pool never passed on)
    per_decoder = min(load, prefill_most) / s.decode_workers
    decode_most = decoder.decode_rps(decoder.engine.admitted_per_replica)  # one decode worker's most, requests/s
    saturated = rho >= 1 or per_decoder > decode_most
    decode_pool_most = s.decode_workers * decode_most
    served = min(load, prefill_most, decode_pool_most) if saturated else load
    served_by = None if not saturated else "prefill" if prefill_most <= decode_pool_most else "decode"
    if saturated:
        misses.append(f"rate {load:g} req/s > what it serves ({served:.3g} req/s: the queue grows)")
    queue = mdl_wait(min(rho, MAX_LOAD), worker.capacity_rps / s.prefill_dp)  # each rank's own queue
    batch = decoder.batch_at(per_decoder)
    step = decoder.decode_step(batch)
    transfer = transfers[s.prefill, s.decode].seconds
    ttft = queue + worker.prompt_ms / 1e3 + transfer + step
    ttft_ms, itl_ms = targets
    if ttft_ms is not None and ttft * 1e3 > ttft_ms * (1 + 1e-9):
        misses.append(f"ttft {ttft * 1e3:,.0f} ms > {format_ms(ttft_ms)} ms")
    if itl_ms is not None and step * 1e3 > itl_ms * (1 + 1e-9):
        misses.append(f"itl {step * 1e3:,.1f} ms > {format_ms(itl_ms)} ms")
    if rate is not None and rate > s.rate_rps * (1 + 1e-9) and not misses:
        misses.append(f"rate {rate:g} req/s > its goodput {s.rate_rps:.3g} req/s")
    return Split(
        prefill_tp=s.prefill_tp, prefill_workers=s.prefill_workers, decode_tp=s.decode_tp,
        decode_workers=s.decode_workers, prefill_dp=s.prefill_dp, decode_dp=s.decode_dp, gpus=s.gpus,
        goodput_rps=s.rate_rps, bottleneck=s.bottleneck,
        prefill_pool_rps=s.prefill_pool_rps, decode_pool_rps=s.decode_pool_rps, rate_rps=load,
        ttft_ms=ttft * 1e3, queue_ms=queue * 1e3, prefill_ms=worker.prompt_ms, transfer_ms=transfer * 1e3,
        itl_ms=step * 1e3, decode_batch=batch, output_tokens_per_s_per_gpu=served * osl / s.gpus,
        meets_targets=not misses and load > 0, misses=misses if load > 0 else ["serves nothing within the targets"],
        served_rps=served, saturated=saturated, served_by=served_by,
    )  # fmt: skip


def _rates_of(split: Split) -> SplitRates:
    """The pools and goodput ``split`` was priced from (``split_rates``)."""
    return SplitRates(
        split.prefill_tp, split.prefill_workers, split.decode_tp, split.decode_workers, split.gpus, split.goodput_rps,
        split.bottleneck, split.prefill_pool_rps, split.decode_pool_rps, split.prefill_dp, split.decode_dp,
    )  # fmt: skip


def request_transfer(
    model: ModelSpec, deployment: DeploymentSpec, target: ResolvedTarget, prefill: WorkerLayout, decode: WorkerLayout,
    *, isl: int, link_id: str | None, windows_full: bool = False,
) -> KvTransfer:  # fmt: skip
    """One request's cache from a ``prefill`` worker to a ``decode`` worker: as the decode worker's ranks hold it (its
    tp, within the one data-parallel rank that runs the request under DP attention; ``windows_full``: its engine keeps
    every token of a sliding-window or chunked layer, ``EnginePlan.windows_full``), over ``link_id`` (default: by
    placement)."""
    kv = kv_footprint(model, seq_len=isl, kv_dtype=deployment.kv_dtype, tp=decode.tp, mla_cache=deployment.mla_cache)
    per_rank = kv.bytes_per_sequence_per_rank
    if windows_full:  # every caching layer holds all isl tokens, the fixed state beside them
        per_rank = isl * kv.bytes_per_token_per_rank + kv.state_bytes_per_seq_per_rank
    return kv_transfer(per_rank, prefill_tp=prefill.tp, decode_tp=decode.tp, over=kv_link(target, link_id))


def _largest_worker(target: ResolvedTarget) -> int:
    return max(worker_sizes(target.n_devices, target.devices_per_node))


def _described(layout: WorkerLayout) -> str:
    """``tp 8`` or ``DP attention over 16 ranks of tp 1, experts over 16 GPUs``."""
    if layout.dp == 1:
        return f"tp {layout.tp}"
    return f"DP attention over {layout.dp} ranks of tp {layout.tp}, experts over {layout.gpus} GPUs"


def _layout_notes(pick: Split, workers: Mapping[WorkerLayout, WorkerSteps]) -> list[str]:
    """What the pick's workers' layouts priced: DP attention, and collectives between nodes."""
    notes = []
    for role, layout in (("prefill", pick.prefill), ("decode", pick.decode)):
        if layout.dp > 1:
            experts = workers[layout].case.experts
            reached = "all-to-all (DeepEP" if experts is not None and experts.deepep else "all-gather and scatter ("
            notes.append(
                f"each {role} worker runs DP attention over {layout.dp} ranks of tp {layout.tp}: the attention weights"
                f" whole on each rank, each rank caching and queueing only its own requests (the worker serves"
                f" {layout.dp} x one rank), the routed experts spread whole over its {layout.gpus} GPUs and reached by"
                f" {reached}; core.dp_attention); the simulated loop runs each rank as a worker of its own"
            )
        notes += [f"{role} worker: {note}" for note in workers[layout].node_notes]
    return notes


def _balance(
    pick: Split, prefill_rps: Mapping[tuple[WorkerLayout, WorkerLayout], float],
    decode: Mapping[WorkerLayout, DecodeWorker], rate: float | None,
) -> str:  # fmt: skip
    per_prefill = prefill_rps[pick.prefill, pick.decode]
    per_decode = decode[pick.decode].goodput_rps
    offered = (
        f"; at {rate:g} req/s: ceil({rate:g} / {per_prefill:.3g}) = {math.ceil(rate / per_prefill)} prefill and"
        f" ceil({rate:g} / {per_decode:.3g}) = {math.ceil(rate / per_decode)} decode worker(s)"
        if rate is not None
        else ""
    )
    return (
        f"one prefill worker ({_described(pick.prefill)}) serves {per_prefill:.3g} req/s within the targets, one"
        f" decode worker ({_described(pick.decode)}) {per_decode:.3g}: {per_decode / per_prefill:.2f} prefill"
        f" worker(s) per decode worker balance them; the pick runs {pick.prefill_workers} : {pick.decode_workers},"
        f" its {pick.bottleneck} pool the limit ({pick.goodput_rps:.3g} req/s){offered}"
    )


def _verdict(
    pick: Split | None,
    aggregated: AggregatedLayout | None,
    transfers: Mapping[tuple[WorkerLayout, WorkerLayout], KvTransfer],
    *,
    fits: bool = True,
    total_gpus: int | None = None,
    p99_past: Sequence[str] = (),
) -> tuple[Literal["disaggregated", "aggregated", "tie", "neither"], str]:
    """Which wins and why; ``fits``: some split fits on the GPUs at all (else the text says none does);
    ``total_gpus``: the target's, said where the split leaves some idle (its tokens/s per GPU are over those it
    runs on). Both sides are judged on their means (the closed form's, the pick's loop where it ran); ``p99_past``:
    the pick's simulated p99s past the targets, said where the split is the one that meets them or wins."""
    means_only = f" (on its means only: {'; '.join(p99_past)} in the simulated loop)" if p99_past else ""
    if pick is None and aggregated is None:
        return "neither", "neither a disaggregated split nor an aggregated replica meets the targets here"
    if pick is None:
        assert aggregated is not None
        return "aggregated", (
            f"aggregated ({aggregated.layout} x {aggregated.replicas}) meets the targets and no disaggregated split"
            + (" does" if fits else " fits on these GPUs")
        )
    if aggregated is None:
        return "disaggregated", (
            f"only disaggregated meets the targets{means_only} ({pick.output_tokens_per_s_per_gpu:,.0f} tokens/s per"
            " GPU); no aggregated replica does: its prefill chunks stall the decodes"
        )
    disagg, agg = pick.output_tokens_per_s_per_gpu, aggregated.output_tokens_per_s_per_gpu
    transfer = transfers[pick.prefill, pick.decode].seconds * 1e3
    in_all = agg * aggregated.gpus * aggregated.replicas  # aggregated's output tokens/s on all its replicas
    unused = (  # a per-GPU win on fewer GPUs can be less in all (trial 264 #7): the totals said beside it
        f"; the split's figure is over the {pick.gpus} GPUs it uses, of {total_gpus}: {disagg * pick.gpus:,.0f} output"
        f" tokens/s in all against aggregated's {in_all:,.0f}"
        if total_gpus and pick.gpus < total_gpus
        else ""
    )
    figures = (
        f"disaggregated {disagg:,.0f} against aggregated {agg:,.0f} output tokens/s per GPU within the targets on"
        f" their means ({disagg / agg:.2f}x{unused}); ITL {pick.itl_ms:.1f} ms against {aggregated.itl_ms:.1f} ms, TTFT"
        f" {pick.ttft_ms:,.0f} ms (KV transfer {transfer:.2f} ms of it) against {aggregated.ttft_ms:,.0f} ms"
    )
    if abs(disagg - agg) <= TIE * agg:  # a split past its p99 is the riskier side of a tie (review 401 #6)
        return "tie", f"{figures}{means_only}: the same GPUs serve the load either way (within {TIE:.0%})"
    less_in_all = (  # trial 372 #2: the headline read as a win for a target whose GPUs would then serve less
        f"; per GPU only: on all {total_gpus} GPUs aggregated serves more tokens/s in all"
        if unused and disagg * pick.gpus < in_all
        else ""
    )
    if disagg > agg:
        return "disaggregated", (
            f"{figures}{less_in_all}{means_only}: the decode pool's steps carry no prefill chunks"
            + (
                " (its ITL is the higher here: the gain is tokens/s per GPU, not ITL)"
                if pick.itl_ms > aggregated.itl_ms
                else ""
            )
            + ", and each pool runs its own layout"
            f" (prefill {_described(pick.prefill)}, decode {_described(pick.decode)})"
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
    transfers: Mapping[tuple[WorkerLayout, WorkerLayout], KvTransfer],
    pick: Split | None,
    profile: DeviceProfile,
    link_id: str | None,
    *,
    simulated: bool,
) -> list[str]:
    confirmed = (
        "; the pick is confirmed in the simulated loop, its load lowered where the loop's means miss a target (meets:"
        " the loop's verdict where it ran, else the closed form's; the aggregated plans are the closed form's)"
        if simulated
        else ""
    )
    notes = [
        f"times on profile {profile.name} ({profile.kind}); the search is closed form: queues as M/D/1, each pool"
        f" loaded to at most {MAX_LOAD:.0%} of its capacity; --ttft-ms and --itl-ms are read against its means (the"
        f" pick's simulated percentiles are shown beside them){confirmed}",
        "TTFT = prefill queue + the prompt's prefill + the KV transfer + one decode step on the decode worker (vLLM's"
        " NixlConnector decode worker computes the first token again); ITL = the decode worker's step, no prefill"
        " chunks among its decodes",
    ]
    if pick is not None:
        notes.append(f"KV transfer: {transfers[pick.prefill, pick.decode].how}")
    if link_id is None:
        notes.append("the link: the scale-up link on one node; on several, the scale-out link for every transfer (a"
                     " split whose pools share a node is priced as if they did not); --kv-link names another")  # fmt: skip
    return notes
