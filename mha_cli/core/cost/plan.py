"""``mha plan`` for one deployment: the engine's memory plan (what it admits) and the served latency on a profile.

The target's devices split into ``replicas`` = devices / (tp x pp) copies of the model. The engine's memory plan
(``core.memory``, ``core.engine``) on one device of a replica says how many requests of isl + osl tokens it runs at
once and how large its prefill chunks are; the cost model (``core.cost.serving``) turns that into TTFT, ITL and
throughput on the profile (a shipped prior for the target, or ``mha calibrate``'s measurement). Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from mha_cli.core.cost.nodes import NodePlacement, NodeSpan, node_notes, node_placement, node_span
from mha_cli.core.cost.offload_plan import OffloadPlan, priced_offload
from mha_cli.core.cost.prefix_pool import own_blocks, prefix_blocks, shared_admitted
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.serving import (
    ServingCase,
    ServingPrediction,
    micro_batch_steps,
    predict_serving,
    sustainable,
)
from mha_cli.core.cost.speculative import SpeculativeComparison
from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.dp_attention import dispatch_note, dp_attention_problem, dp_attention_stages_problem, lockstep_note
from mha_cli.core.engine.async_pipeline import async_pipeline_refusal
from mha_cli.core.engine.auto_fit import auto_fits
from mha_cli.core.engine.longer_context import engine_admitting, engine_context, serves_the_requests
from mha_cli.core.engine.mamba_cache_mode import unserved_reason
from mha_cli.core.engine.pipeline_stages import pipeline_refusal
from mha_cli.core.engine.plan import EnginePlan, deployment_kv_format_note
from mha_cli.core.engine.quant_capability import deployment_step_refusal
from mha_cli.core.engine.sglang_state_pool import engine_state_model
from mha_cli.core.engine.vllm_words import auto_fit_line
from mha_cli.core.errors import BadInputError, EngineRefusedError, MhaError
from mha_cli.core.fit import with_layout_ways
from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import LayoutError, MemoryPlan, at_load, expert_layout, plan_memory, shared_experts_problem
from mha_cli.core.pipeline import DEFAULT_SPLIT, StageLayout, StageMemory, stage_layout, stage_model, stage_sides
from mha_cli.core.record import empty_list
from mha_cli.core.schemas import DeploymentSpec, EngineName, ModelSpec
from mha_cli.core.serve.replica import ClientSpec, SimulatedServing, simulate_deployment
from mha_cli.core.serve.workload import LengthsReplayed
from mha_cli.core.speculative import drafter_memory_note, drafter_weight_bytes, memory_model, shares_pool
from mha_cli.core.targets import ResolvedTarget, resolve_target_like
from mha_cli.core.tensor_parallel import ExpertLayout, tp_shard_problem
from mha_cli.core.ways import accepted, flag_updates
from mha_cli.core.weight_bytes import deployment_model_bytes, deployment_rank_bytes, stored_scheme


class ServingPlan(ServingPrediction):
    """A deployment's predicted serving figures (top level, as scripts read them: docs/commands/plan.md lists the
    keys), with the engine's memory plan on one device."""

    model_name: str
    target_id: str
    engine: str
    memory: MemoryPlan
    """One device of one replica (one pipeline stage's layers when pp > 1)."""
    sweep: list[ServingPrediction] = Field(default_factory=empty_list)
    """The same deployment at other concurrencies (``--plot``): powers of two up to twice what the engine admits."""
    rate_rps: float | None = None
    """``--rate``: the arrival rate asked (requests/s); ``concurrency`` is then the requests in flight it makes."""
    engine_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """The engine release typed (``--engine vllm@0.10.1``: ``0.10.1``), whose flags the launch lines take; absent when
    none was typed (the generation's latest)."""
    priced_as_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """The newest release of the engine mha read, when the release typed (``--engine vllm@0.99``) is later: the one
    whose flags the launch lines take (``core.engine.releases_read.NEWEST_READ``); absent otherwise."""
    priced_rules_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """With ``priced_as_release``: the release whose memory and step rules priced it (vLLM's rules were read to an
    earlier release than its flags); absent otherwise."""
    launch: Annotated[dict[str, str], Field(default_factory=dict, exclude_if=lambda value: not value)]
    """A plan pinned by ``--tp`` / ``--pp``: its launch command per engine, as a search gives its pick's (absent
    elsewhere: a search's candidates leave it out, the search carries its pick's)."""
    launch_note: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """What to check in the launch lines: null where there is nothing to say, absent without lines (a search's
    candidates), as a search's pick has it (``_launch_note_beside_lines``)."""
    lengths_file: Annotated[LengthsReplayed | None, Field(exclude_if=lambda value: value is None)] = None
    """``--lengths-file``, the pairs the simulated loop replays summed up; absent without one."""
    saturated: bool = False
    """``--rate`` beyond what the deployment serves at its largest load: requests pile up without bound, so a
    request's TTFT and end to end grow with its place in the queue (``ttft_ms`` and ``e2e_ms`` are a request's once
    admitted; the table prints them as "grows")."""
    simulated: SimulatedServing | None = None
    """The serving loop simulated (``core.serve``): percentiles, the burst, preemptions. The top-level figures are
    the closed-form model's quick estimate."""
    simulated_sweep: list[SimulatedServing] = Field(default_factory=empty_list)
    """``--plot`` with the simulation: the same sweep's concurrencies simulated (3 requests a user)."""
    speculative: SpeculativeComparison | None = None
    """Speculative decoding asked for: its figures beside plain decoding's (``core.cost.speculative_plan``)."""
    offload: OffloadPlan | None = None
    """KV offload asked for (``--kv-offload-gib``) or several shared prefixes (``--shared-prefixes``): the host pool
    and the regime the workload is in (``core.cost.offload_plan``)."""
    nodes: NodeSpan | None = None
    """Over several nodes: how many, the GPUs of each and the link between them (None: one node)."""
    stages: list[StageMemory] = Field(default_factory=empty_list)
    """Under pipeline parallelism, each stage's weights and KV pool on one of its devices; ``memory`` is the one
    that admits the fewest requests."""

    @model_serializer(mode="wrap")
    def _launch_note_beside_lines(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``launch_note`` null, not absent, beside a pinned plan's launch lines: scripts read it (trial 251)."""
        data = handler(self)
        if self.launch and "launch_note" not in data:
            data["launch_note"] = None
        return data


def resolve_layout(target: ResolvedTarget, tp: int | None, pp: int) -> tuple[int, int]:
    """(tp, replicas): tp defaults to the devices pp leaves (on several nodes, at most a node's: ``math.gcd`` of the
    two); tp x pp must divide the target's devices."""
    devices = target.n_devices
    if pp < 1 or devices % pp:
        raise BadInputError(f"pp ({pp}) must divide the {devices} device(s) of {target.spec!r}")
    if tp is None:  # on several nodes, kept inside one: its largest divisor that also divides the stage's devices
        tp = devices // pp if target.n_nodes == 1 else math.gcd(devices // pp, target.devices_per_node)
    if tp < 1:
        raise BadInputError(f"--tp {tp}: give 1 or more")
    if devices % (tp * pp):
        raise LayoutError(f"tp x pp ({tp} x {pp}) must divide the {devices} device(s) of {target.spec!r}")
    return tp, devices // (tp * pp)


def serving_case(
    model: ModelSpec, deployment: DeploymentSpec, memory: MemoryPlan, *, isl: int, osl: int, concurrency: int,
    pp: int, replicas: int, experts: ExpertLayout | None, cached: int | None = None,
    nodes: NodePlacement | None = None, prefixes: int = 1,
) -> ServingCase:  # fmt: skip
    """What the cost model prices: ``model`` in ``deployment``'s formats on ``memory``'s tp and engine (and the MXFP4
    MoE kernel its engine, release and GPU run the experts in, ``MemoryPlan.expert_kernel``); ``cached``:
    the prompt tokens a cache tier serves when ``core.cost.offload_plan`` has settled it (else the shared prefix's
    whole blocks); ``nodes``: over several nodes; ``prefixes``: the different shared prefixes (``--shared-prefixes``),
    each held once in the pool while served from it."""
    engine = memory.engine
    served = min(prefix_served(model, deployment, engine), isl)
    shared = served
    if deployment.kv_offload_bytes and engine.name == "vllm" and model.recurrent is None:
        shared = min(deployment.shared_prefix or 0, isl)  # vLLM's host tier holds prefixes with the GPU cache off
    model = engine_state_model(model, engine.name)  # its recurrent state's dtype, read by every step
    hit = cached_prefix(shared, isl, engine.block_size) if cached is None else cached
    # the GPU prefix cache's blocks are held once (core.cost.prefix_pool); without it each request has its own
    admitted = shared_admitted(engine, context=isl + osl, cached_tokens=hit if served else 0, prefixes=prefixes)
    return ServingCase(
        model=model, isl=isl, osl=osl, concurrency=concurrency, tp=memory.tp, pp=pp, replicas=replicas,
        admitted_per_replica=admitted, chunk_tokens=engine.max_num_batched_tokens,
        weight_dtype=deployment.weight_dtype, weight_scheme=stored_scheme(deployment, deployment.weight_dtype),
        kv_dtype=deployment.kv_dtype, mla_cache=deployment.mla_cache, experts=experts, shared_prefix=shared,
        cached_prefix=hit,
        speculative=deployment.speculative, nodes=nodes, host_kv_cache=bool(deployment.kv_offload_bytes),
        pp_split=engine.name, expert_kernel=memory.expert_kernel,
        recv_interval=deployment.recv_interval, whole_prompts=engine.name == "trtllm",
        separate_servers=bool(deployment.separate_servers and experts and experts.ranks == memory.tp and replicas > 1),
    )  # fmt: skip


PREFIX_CACHING_OFF_BY_DEFAULT = ("vllm-v0", "trtllm-cpp")
"""Generations whose prefix cache is off unless asked: vLLM V0 (``enable_prefix_caching`` False; V1 turned it on)
and TensorRT-LLM's C++ engine (``KvCacheConfig.enable_block_reuse`` False; its PyTorch backend turned it on)."""


def prefix_caching_on(deployment: DeploymentSpec, generation: str) -> bool:
    """Whether the engine caches prefixes: as asked, else its generation's default."""
    if deployment.prefix_caching is not None:
        return deployment.prefix_caching
    return generation not in PREFIX_CACHING_OFF_BY_DEFAULT


def gpu_prefix_cache(model: ModelSpec, deployment: DeploymentSpec, engine: EnginePlan) -> bool:
    """Whether the GPU prefix cache serves this model's prompts: the cache is on; for a model with fixed-state layers,
    only vLLM 0.24+'s Mamba ``align`` mode (``EnginePlan.serves_hybrid_prefixes``: its states kept at block
    boundaries and at a shared prefix's end, where a hit resumes), SGLang's MambaRadixCache and TensorRT-LLM's
    not being modelled."""
    if model.recurrent is not None:
        return engine.serves_hybrid_prefixes
    return prefix_caching_on(deployment, engine.generation)


def prefix_served(model: ModelSpec, deployment: DeploymentSpec, engine: EnginePlan) -> int:
    """The shared prefix the engine's cache serves: 0 without one, or without the GPU prefix cache
    (``gpu_prefix_cache``)."""
    if not gpu_prefix_cache(model, deployment, engine):
        return 0
    return deployment.shared_prefix or 0


def hybrid_prefix_note(model: ModelSpec, deployment: DeploymentSpec, engine: EnginePlan) -> str | None:
    """Why a hybrid's ``--shared-prefix`` is computed in full, in one line; None where it is served, or there is
    none."""
    if model.recurrent is None or not deployment.shared_prefix or gpu_prefix_cache(model, deployment, engine):
        return None
    why = unserved_reason(engine.name, engine.mamba_cache_mode)
    return (
        f"prefix cache: the --shared-prefix of a model with fixed-state layers is not served here ({why}): every"
        " prompt is computed in full"
    )


def shared_pool_note(case: ServingCase, engine: EnginePlan, prefixes: int = 1) -> str:
    """How many requests the pool holds with the prefix's whole blocks held once (``core.cost.prefix_pool``), once for
    each of ``prefixes`` different prefixes (trial 394 #6: the note said one copy where the figure held 64)."""
    size = engine.block_size
    shared = prefix_blocks(case.cached_prefix, size)
    own = own_blocks(case.isl + case.osl, case.cached_prefix, size)
    unit, how = (
        ("page", "SGLang's radix cache, lock refs")
        if engine.name == "sglang"
        else ("block", "vLLM's block pool, ref counts")
    )
    held = (
        f"shared prefix held once: its {shared:,} whole {unit}s of {size} are one copy in the pool that every request"
        if prefixes == 1
        else f"{prefixes:,} shared prefixes held once each: each one's {shared:,} whole {unit}s of {size} are one copy"
        " in the pool that every request carrying it"
    )
    return (
        f"{held} references ({how}), each request {own:,} {unit}s of its own ({own * size:,} tokens):"
        f" {case.admitted_per_replica} request(s) at once per replica, where {engine.admitted_per_replica} hold a"
        " copy each"
    )


def running_cap_note(engine: EnginePlan, users: int) -> str | None:
    """Where ``users`` on a replica wait for the engine's running cap, not its pool: the cap and the flag that lifts
    it (trial 302 #3: SGLang's 48 under speculative decoding read as what 1.2M KV tokens hold). None: they do not."""
    cap = engine.max_num_seqs
    if not engine.starts or users <= cap or engine.admitted_per_replica != cap or int(engine.max_concurrency) <= cap:
        return None
    named = (
        "max_running_requests"
        if engine.name == "sglang"
        else "max_batch_size"
        if engine.name == "trtllm"
        else "max_num_seqs"
    )
    return (
        f"the {cap:,} request(s) run at once are {engine.name}'s running cap ({named}), not its pool, which holds"
        f" {int(engine.max_concurrency):,} requests of {engine.max_model_len:,} tokens: --max-num-seqs lifts it"
    )


def cached_prefix(shared_prefix: int, prompt: int, block_size: int) -> int:
    """Tokens of a ``prompt`` the prefix cache supplies once warm: the shared prefix's whole blocks, at most the
    prompt's first ``prompt - 1`` tokens in whole blocks (vLLM ``get_computed_blocks``; one token is computed)."""
    whole = min(shared_prefix, prompt - 1)
    return whole // block_size * block_size


def plan_serving(
    model: ModelSpec,
    target: ResolvedTarget,
    deployment: DeploymentSpec,
    profile: DeviceProfile,
    ceiling: DeviceProfile,
    *,
    isl: int,
    osl: int,
    concurrency: int,
    tp: int | None = None,
    pp: int = 1,
    sweep: bool = False,
    ways: bool = False,
) -> ServingPlan:
    """Serve ``model`` on ``target`` under ``deployment``'s engine settings and formats (see the module docstring);
    ``sweep``: also at concurrency 1, 2, 4, ... up to twice what the replicas admit (``ServingPlan.sweep``);
    ``ways``: an engine that would not start on the ``tp`` given is answered with the --target / --tp on which it
    does (``mha plan``'s pinned layout; each tried is planned again, without ways of its own)."""
    if isl < 1 or osl < 1 or concurrency < 1:
        raise BadInputError("--isl, --osl and --concurrency must be at least 1")
    common = {"isl": isl, "osl": osl, "concurrency": concurrency}
    try:  # checked here too: a --tp that does not divide the devices is answered with the ways that do
        resolve_layout(target, tp, pp)
    except LayoutError as exc:
        assert tp is not None  # the default tp always divides
        raise _with_ways(exc, model, target, deployment, profile, ceiling, tp=tp, pp=pp, **common) from None
    try:
        layout = LayoutPlans(model, target, deployment, profile, ceiling, isl=isl, osl=osl, tp=tp, pp=pp)
        return layout.at(concurrency, sweep=sweep)
    except EngineRefusedError as exc:  # the engine's own words, then mha's ways out of the layout pinned
        if not ways or tp is None:
            raise
        raise _with_ways(exc, model, target, deployment, profile, ceiling, tp=tp, pp=pp, **common) from None


class LayoutPlans:
    """``plan_serving`` of one layout (tp x pp x replicas) at any number of users: the layout's checks, its heaviest
    stage and its steps' operations are worked out once, however many loads it is planned at (a search plans each
    layout at a dozen, ``plan_at_rate`` until its load settles)."""

    def __init__(
        self, model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, profile: DeviceProfile,
        ceiling: DeviceProfile | None, *, isl: int, osl: int, tp: int | None = None, pp: int = 1,
    ) -> None:  # fmt: skip
        if isl < 1 or osl < 1:
            raise BadInputError("--isl, --osl and --concurrency must be at least 1")
        tp, replicas = resolve_layout(target, tp, pp)
        if deployment.dp and (
            problem := dp_attention_problem(
                model,
                deployment.engine,
                tp,
                deployment.dp,
                replicas,
                deployment.engine_generation,
                deployment.engine_version,
            )
        ):
            raise BadInputError(problem)
        if deployment.expert_parallel and model.block.moe is None:
            raise BadInputError(f"--expert-parallel spreads routed experts and {model.name} has none: leave it out")
        if deployment.expert_parallel and (problem := shared_experts_problem(model, tp, replicas, True)) is not None:
            raise BadInputError(problem)  # asked for: not quietly priced as copies
        experts = expert_layout(model, tp, replicas, deployment)
        if experts is not None and (problem := tp_shard_problem(model, tp, experts)) is not None:
            raise BadInputError(problem)
        if deployment.speculative is not None and pp > 1:
            raise BadInputError(  # a search's layout too, where no --pp was typed (trial 302 #7)
                f"speculative decoding is priced at pp 1 only here, not pp {pp}: give --pp 1, or leave out the drafter"
            )
        refusal = async_pipeline_refusal(
            deployment.engine, deployment.engine_generation, deployment.engine_version, deployment.async_scheduling, pp
        )  # fmt: skip
        if refusal is not None:  # vLLM 0.10.0-0.14.x would not start: refused, or left out of a search
            raise BadInputError(refusal)
        emulated = deployment_step_refusal(deployment, target.target)  # a pinned layout's too (the search's: once)
        if emulated is not None:
            raise BadInputError(emulated)
        refusal = pipeline_refusal(deployment.engine, deployment.engine_generation, deployment.engine_version, pp)
        if refusal is not None:  # SGLang before 0.4.6.post2, vLLM before 0.5.3: no stages from the line
            raise BadInputError(refusal)
        shared = experts is not None and experts.ranks > tp  # the replicas are one server's DP-attention ranks
        if (deployment.dp or shared) and (
            problem := dp_attention_stages_problem(
                deployment.engine, deployment.engine_generation, deployment.engine_version, pp
            )
        ):
            raise BadInputError(problem)  # its line would not serve: refused, never priced
        self.model, self.target, self.deployment = model, target, deployment
        self.profile, self.ceiling = profile, ceiling
        self.isl, self.osl, self.tp, self.pp, self.replicas, self.experts = isl, osl, tp, pp, replicas, experts
        self.nodes = node_placement(target)
        self.one_replica = target.model_copy(update={"n_devices": tp, "node_size": None, "node_note": None})
        self.context = engine_context(deployment, isl + osl)
        """The engine's max_model_len: the requests' --isl + --osl, or a longer ``deployment.max_model_len``."""
        positions = model.embeddings.positions
        if positions and isl + osl <= positions < self.context:  # the requests' own length is refused in ``at``
            raise BadInputError(
                f"--max-model-len {self.context:,} exceeds the {positions:,} learned positions of {model.name}: no"
                f" engine serves past them; give at most {positions}"
            )
        self.engine_deployment = deployment.model_copy(update={"seq_len": self.context, "tp": tp})
        self._stepper: Stepper | None = None
        """The steps' operations, counted at the first load and kept for the others (they do not depend on it)."""
        self._memory: MemoryPlan | None = None
        """The memory plan at the first load (under pp, the limiting stage's), which every load's is made from
        (``core.memory.at_load``)."""
        self.split: EngineName = deployment.engine or DEFAULT_SPLIT
        """Whose split of the layers into pipeline stages (``core.pipeline.stage_sizes``): the engine's."""
        self.stage = model
        """The layers whose rank's memory sets what a replica admits: the model, or its limiting pipeline stage."""
        self.stages: list[StageMemory] = []
        """Under pipeline parallelism, every stage's memory (``stage_memories``); the limiting one is ``stage``."""
        self.limiting: StageMemory | None = None
        self.stage_layout: StageLayout | None = None
        """The limiting stage's layout (None: no pipeline parallelism)."""
        if pp > 1:
            plans = self.stage_memories()
            fitted = self._stages_fitted(plans)
            if fitted is not None:  # vLLM fits auto over every stage's worker: the shortest any needs (review 386 #3)
                derived, limiting_bytes = self.context, fitted[1]
                self._start_at(fitted[0])
                plans = self.stage_memories()
            self.stages = [stage for stage, _ in plans]
            limiting, self._memory = min(plans, key=lambda found: found[0].limiting_key())
            if fitted is not None:
                self._say_auto_fitted(self._memory.engine, derived, limiting_bytes)
            self.stage_layout = stage_layout(model, pp, limiting.stage, self.split)
            self.stage = stage_model(model, self.stage_layout)
            self.limiting = limiting

    def _engine_memory(self, layers: ModelSpec, weights: int | None, stage: StageLayout | None) -> MemoryPlan:
        """The memory plan of a rank holding ``layers`` (``weights``: its bytes where not the plan's own count) at one
        request: the engine sized, checked and launched at ``self.context`` tokens a request, admitting requests of
        --isl + --osl. An engine started longer than its requests (``--max-model-len``) holds the same pool, but more
        of them: vLLM gives a request blocks as its tokens arrive, SGLang tokens (``engine_admitting``)."""
        deployment, requests = self.deployment, self.isl + self.osl

        def planned(seq_len: int) -> MemoryPlan:
            kv = kv_footprint(layers, seq_len=seq_len, batch=1, kv_dtype=deployment.kv_dtype, tp=self.tp,
                              block_size=deployment.block_size, mla_cache=deployment.mla_cache)  # fmt: skip
            return plan_memory(
                self.one_replica, model=layers, kv=kv, weight_dtype=deployment.weight_dtype,
                deployment=self.engine_deployment.model_copy(update={"seq_len": seq_len}), experts=self.experts,
                weights_bytes_per_rank=weights, stage=stage,
            )  # fmt: skip

        memory = planned(self.context)
        fitted = memory.engine.fitting_max_model_len
        if stage is None and fitted is not None and fitted >= requests and auto_fits(deployment):
            memory = self._auto_fitted(planned, fitted)
        if self.context == requests or not serves_the_requests(memory.engine, self.isl):
            return memory
        at_requests = planned(requests).engine
        if not at_requests.starts:  # not even requests of their own length: the engine's words at its context
            return memory
        engine = engine_admitting(memory.engine, at_requests)
        return memory.model_copy(
            update={"engine": engine, "max_sequences": engine.admitted_per_replica * memory.replicas}
        )

    def _auto_fitted(self, planned: Callable[[int], MemoryPlan], fitted: int) -> MemoryPlan:
        """The memory plan of vLLM 0.14+ started with ``--max-model-len auto`` whose derived length does not fit: at
        ``fitted``, the longest that does, which becomes the engine's context (``core.engine.auto_fit``; trial 381
        #1: it was refused, as vLLM refuses that length typed)."""
        derived = self.context
        self._start_at(fitted)
        memory = planned(fitted)
        self._say_auto_fitted(memory.engine, derived, memory.engine.available_kv_bytes)
        return memory

    def _stages_fitted(self, plans: list[tuple[StageMemory, MemoryPlan]]) -> tuple[int, int] | None:
        """Under pp with vLLM 0.14+'s ``--max-model-len auto``, where a stage's pool does not hold one request of the
        derived length: (the shortest length any stage's worker fits, the KV bytes of the worker that sets it), as
        ``_auto_fit_max_model_len`` takes the least over the workers (``v1/core/kv_cache_planning.py``, 0.33.0; in
        0.14-0.16 the whole model's request against the least pool, which each stage's plan prices then).
        None: every stage fits, auto was not asked for, a stage is refused for another reason, or the length is
        shorter than the requests."""
        if not auto_fits(self.deployment):
            return None
        engines = [memory.engine for _, memory in plans]
        if all(engine.starts for engine in engines):
            return None
        if any(not engine.starts and engine.fitting_max_model_len is None for engine in engines):
            return None  # no length fits that stage (or something else stops it): the refusal stands
        fitted = min(
            (engine.fitting_max_model_len, engine.available_kv_bytes)
            for engine in engines
            if engine.fitting_max_model_len is not None
        )
        return fitted if fitted[0] >= self.isl + self.osl else None

    def _start_at(self, fitted: int) -> None:
        """Make ``fitted`` tokens the engine's context (its max_model_len), as auto-fit does."""
        self.context = fitted
        self.engine_deployment = self.engine_deployment.model_copy(update={"seq_len": fitted, "max_model_len": fitted})

    def _say_auto_fitted(self, engine: EnginePlan, derived: int, available_bytes: int) -> None:
        """Add vLLM's auto-fit log line and a note to ``engine``, lowered from ``derived`` to ``self.context``."""
        lines = engine.log_lines
        at = 1 if lines and lines[0].startswith("Available KV cache memory") else 0
        device = "CPU" if self.target.target.vendor == "CPU" else "GPU"
        lines.insert(at, auto_fit_line(derived, self.context, available_bytes, engine.log_release, device))
        engine.notes.append(
            f"--max-model-len auto: one request of the {derived:,} tokens vLLM derives from the config does not fit"
            f" the pool, so vLLM (0.14 and later) lowers max_model_len to {self.context:,}, the longest that does, and"
            " starts (core.engine.auto_fit); requests longer than that are refused"
        )

    def stage_memories(self) -> list[tuple[StageMemory, MemoryPlan]]:
        """Each pipeline stage's memory plan on one of its devices (at one request; ``at_load`` gives it at others),
        and its summary: its own layers (as the engine splits them, ``core.pipeline.stage_sizes``) with their weights
        (the plan's, an MXFP4 kernel's padding included) and cache, the embedding on the first, the final norm and LM
        head on the last (``core.pipeline``), at the plan's context. The replica admits what its fewest-token stage
        admits: vLLM V1 profiles each worker's own stage and gives every worker the fewest blocks any reports
        (``vllm/v1/core/kv_cache_utils.py``, ``get_kv_cache_configs``)."""
        model, deployment, tp = self.model, self.deployment, self.tp
        found: list[tuple[StageMemory, MemoryPlan]] = []
        seen: list[tuple[tuple[bool, bool, ModelSpec], tuple[StageMemory, MemoryPlan]]] = []
        for s in range(self.pp):
            layout = stage_layout(model, self.pp, s, self.split)
            layers = stage_model(model, layout)
            key = (layout.embedding, layout.head, layers)
            same = next((planned for other, planned in seen if other == key), None)
            if same is None:
                weights = deployment_rank_bytes(
                    layers, tp, deployment.weight_dtype, self.engine_deployment, experts=self.experts,
                    sides=stage_sides(model, layout),
                )  # fmt: skip
                memory = self._engine_memory(layers, weights, layout)
                summary = StageMemory(
                    stage=s, first_layer=layout.first_layer, n_layers=layout.n_layers, embedding=layout.embedding,
                    head=layout.head, weight_bytes_per_device=memory.weight_bytes_per_device,
                    kv_tokens_per_device=memory.engine.kv_tokens,
                    admitted_per_replica=memory.engine.admitted_per_replica,
                )  # fmt: skip
                same = (summary, memory)
                seen.append((key, same))
            found.append((same[0].model_copy(update={"stage": s, "first_layer": layout.first_layer}), same[1]))
        return found

    def at(self, concurrency: int, *, sweep: bool = False) -> ServingPlan:
        """The plan at ``concurrency`` users (``plan_serving``)."""
        if concurrency < 1:
            raise BadInputError("--isl, --osl and --concurrency must be at least 1")
        model, deployment, tp, replicas = self.model, self.deployment, self.tp, self.replicas
        context = self.isl + self.osl
        held = self.stage  # the layers whose cache the pool holds: the drafter's too (core.speculative)
        spec = deployment.speculative
        drafter_note = None
        weights = None  # the rank's weights at the checkpoint's shapes when not the plan's own count (it pads them)
        if spec is not None and shares_pool(deployment.engine):
            held = memory_model(self.stage, spec, tp, deployment.kv_dtype)
            if self._memory is None:
                weights = deployment_rank_bytes(
                    self.stage, tp, deployment.weight_dtype, self.engine_deployment, experts=self.experts
                ) + drafter_weight_bytes(spec, tp, deployment.weight_dtype, self.experts)
        kv = kv_footprint(
            held, seq_len=context, batch=-(-concurrency // replicas), kv_dtype=deployment.kv_dtype, tp=tp,
            block_size=deployment.block_size, mla_cache=deployment.mla_cache,
        )  # fmt: skip
        if self._memory is None:
            self._memory = self._engine_memory(held, weights, self.stage_layout)
        memory = at_load(self._memory, kv)  # a copy at this load, its notes its own
        if spec is not None:
            drafter_note = drafter_memory_note(spec, self.stage, tp, deployment.weight_dtype, deployment.kv_dtype,
                                               self.experts, memory.engine)  # fmt: skip
            memory.engine.notes.append(drafter_note)
        engine = memory.engine
        if not engine.starts:
            approximate = "" if model.recurrent is None else " (its weights are approximate: `mha kv` says by how much)"
            raise EngineRefusedError(
                f"{engine.name} {engine.refused_as}: {engine.refusal}{approximate}",
                reason=f"{engine.name} {engine.refused_as}: {engine.refusal_reason or engine.refusal}{approximate}",
                fitting_max_model_len=engine.fitting_max_model_len,
            )
        offload = self._offload(engine, concurrency)
        case = serving_case(model, deployment, memory, isl=self.isl, osl=self.osl, concurrency=concurrency,
                            pp=self.pp, replicas=replicas, experts=self.experts, nodes=self.nodes,
                            cached=None if offload is None else offload.served_tokens,
                            prefixes=1 if offload is None else offload.shared_prefixes)  # fmt: skip
        if self._stepper is None:
            self._stepper = Stepper(case, self.profile)
        prediction = predict_serving(case, self.profile, self.ceiling, stepper=self._stepper)
        if offload is not None:
            offload = priced_offload(offload, prediction, case, self.profile, self.ceiling, self._stepper)
        if case.admitted_per_replica is not None and case.admitted_per_replica > engine.admitted_per_replica:
            prediction.notes.append(shared_pool_note(case, engine, 1 if offload is None else offload.shared_prefixes))
        capped = running_cap_note(engine, -(-concurrency // replicas))
        if capped is not None:
            prediction.notes.append(capped)
        unserved = hybrid_prefix_note(model, self.deployment, engine) if offload is None else None
        if unserved is not None:  # a hybrid's shared prefix, recomputed: said where the TTFT is
            prediction.notes.append(unserved)
        format_note = deployment_kv_format_note(self.deployment, model)
        if format_note is not None:  # the pool priced is one the engine cannot allocate: said where the figures are
            prediction.notes.append(format_note)
        if model.embeddings.positions and context > model.embeddings.positions:
            raise BadInputError(
                f"--isl + --osl ({context:,}) exceed the {model.embeddings.positions:,} learned positions of"
                f" {model.name}: no engine serves past them"
            )
        past = trained_context_note(model, context)
        if past is not None:
            prediction.notes.append(past)
        if self.experts is not None and self.experts.dp_attention:
            prediction.notes.append(
                f"DP attention: each of the {replicas} data-parallel ranks holds the attention weights whole and caches"
                f" only its own requests (ceil({concurrency} / {replicas}) = {-(-concurrency // replicas)}); the"
                f" routed experts spread whole over all {self.experts.ranks} GPUs, {dispatch_note(self.experts)}"
            )
            prediction.notes.append(lockstep_note(replicas, concurrency, self.osl))
        if self.experts is not None and replicas > 1 and self.experts.ranks == tp:
            prediction.notes.append(
                f"the {replicas} replicas each hold their own copy of the experts (separate servers behind a load"
                " balancer, one per replica)"
            )
        if drafter_note is not None:
            prediction.notes.append(drafter_note)
        if self.nodes is not None and self._stepper.spans is not None:
            prediction.notes += node_notes(self.nodes, self._stepper.spans, tp, self.pp, self.target.n_devices)
        if self.limiting is not None:
            prediction.notes.append(
                f"pp {self.pp}: the memory plan is that of {self.limiting.describe()}, the stage whose KV pool admits"
                f" the fewest requests ({self.limiting.admitted_per_replica}; `stages` lists each stage's weights and"
                " pool): the first stage holds the embedding, the last the final norm and LM head"
            )
        swept = []
        if sweep:
            top = max(concurrency, 2 * (case.admitted_per_replica or 1) * replicas, 2)
            points = sorted({concurrency, *(2**k for k in range(top.bit_length()) if 2**k <= top)})
            swept = [self._point(case, engine, users) for users in points]
        return ServingPlan(
            **dict(prediction), model_name=model.name, target_id=self.target.target.id, engine=engine.name,
            memory=memory, sweep=swept, offload=offload, stages=self.stages,
            nodes=node_span(self.nodes, self.target.n_devices),
        )  # fmt: skip

    def warm_hit(self, engine: EnginePlan) -> int:
        """Prompt tokens the GPU prefix cache serves each request once warm: the shared prefix's whole blocks."""
        shared = min(prefix_served(self.model, self.deployment, engine), self.isl)
        return cached_prefix(shared, self.isl, engine.block_size)

    def admitted(self, engine: EnginePlan) -> int:
        """Requests one replica of this layout holds at once: ``engine``'s figure, more when its pool holds each of
        the ``--shared-prefixes`` prefixes' cached blocks once (``prefix_pool.shared_admitted``). The search's grid
        and ``plan_at_rate``'s full load read it."""
        prefixes = self.deployment.shared_prefixes or 1
        return shared_admitted(engine, context=self.isl + self.osl, cached_tokens=self.warm_hit(engine),
                               prefixes=prefixes)  # fmt: skip

    def _point(self, case: ServingCase, engine: EnginePlan, users: int) -> ServingPrediction:
        """The closed form at ``users`` for the ``--plot`` sweep, the prefix tiers settled at that load."""
        offload = self._offload(engine, users)
        if offload is not None:
            caching = gpu_prefix_cache(self.model, self.deployment, engine)
            admitted = shared_admitted(engine, context=self.isl + self.osl,
                                       cached_tokens=offload.served_tokens if caching else 0,
                                       prefixes=offload.shared_prefixes)  # fmt: skip
            case = case._replace(cached_prefix=offload.served_tokens, admitted_per_replica=admitted)
        case = case._replace(concurrency=users)
        point = predict_serving(case, self.profile, self.ceiling, stepper=self._stepper)
        if offload is not None:
            priced_offload(offload, point, case, self.profile, self.ceiling, self._stepper)
        return point

    def _offload(self, engine: EnginePlan, concurrency: int) -> OffloadPlan | None:
        """The prefix tiers at ``concurrency`` users (None without ``--kv-offload-gib`` or ``--shared-prefixes``)."""
        deployment = self.deployment
        if not deployment.kv_offload_bytes and (deployment.shared_prefixes or 1) == 1:
            return None
        from mha_cli.core.cost.offload_plan import offload_tiers

        caching = gpu_prefix_cache(self.model, deployment, engine)
        shared = min(deployment.shared_prefix or 0, self.isl)
        return offload_tiers(
            self.model, deployment, engine, users=-(-concurrency // self.replicas), isl=self.isl, osl=self.osl,
            workers=self.tp * self.pp, target_id=self.target.target.id, caching=caching,
            prefix_tokens=cached_prefix(shared, self.isl, engine.block_size) if shared else 0,
            replicated=self.model.attention.mla is not None and 1 < self.tp <= self.target.devices_per_node and self.pp == 1
            and engine.generation == "vllm-0.21",  # one copy in one host's memory: the tp group inside a node
        )  # fmt: skip


def _fitting_length_change(exc: MhaError, requests: int) -> tuple[str, ...]:
    """``--max-model-len N``, vLLM's "estimated maximum model length" where one request of the engine's context does
    not fit its pool and N still holds the requests (``requests``: --isl + --osl): the length vLLM 0.14+ starts at
    with ``--max-model-len auto`` (trial 381 #1); () otherwise."""
    fitting = getattr(exc, "fitting_max_model_len", None)
    return (f"--max-model-len {fitting}",) if fitting is not None and fitting >= requests else ()


def _with_ways(
    exc: MhaError, model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, profile: DeviceProfile,
    ceiling: DeviceProfile, *, tp: int, pp: int, **common: int,
) -> BadInputError:  # fmt: skip
    """``exc`` naming the --target / --tp with which ``plan_serving``, run again, accepts the layout. Under DP
    attention (``--dp``) each is tried, and named, without it and what goes with it (expert parallelism, the
    dispatch): a tp of the GPUs alone (trial 275 #3, review 277 #6)."""

    def pasted(words: list[str]) -> ServingPlan:
        updates = flag_updates(words)
        changed = resolve_target_like(str(updates.get("target", target.spec)), target)
        alone = {"dp": None, "expert_parallel": None, "moe_a2a_backend": None} if deployment.dp else {}
        kept = {field: updates[field] for field in ("max_num_seqs", "max_model_len") if field in updates}
        trial = deployment.model_copy(update={"target": changed.spec, **alone, **kept})
        return plan_serving(
            model, changed, trial, profile, ceiling, tp=int(str(updates.get("tp", tp))), pp=pp, **common
        )

    if not deployment.dp:
        first = _fitting_length_change(exc, common["isl"] + common["osl"])
        first += _state_slots_change(model, target, deployment, tp, pp, common["concurrency"])
        first += weights_sized_layout(model, target, deployment, tp, pp)
        return with_layout_ways(exc, target, tp, accepted(pasted), pp, first=first)
    length = _fitting_length_change(exc, common["isl"] + common["osl"])
    if length:  # review 386 #9, 388 #4: the length vLLM names, planned again with --dp kept, and said alone

        def with_dp(words: list[str]) -> ServingPlan:
            kept = deployment.model_copy(update={"max_model_len": int(words[1])})
            return plan_serving(model, target, kept, profile, ceiling, tp=tp, pp=pp, **common)

        if accepted(with_dp)(length[0].split()).passes:
            return BadInputError(f"{exc.message.rstrip('.')}: use e.g. {length[0]}")
    server = tp * deployment.dp  # the GPUs of one server of DP attention, as one tensor-parallel group first
    return with_layout_ways(
        exc,
        target,
        server,
        accepted(pasted),
        pp,
        first=(f"--tp {server}",),
        without=" (leaving out --dp, with --expert-parallel and --moe-a2a-backend)",
    )


STATE_SLOT_TRIALS = (256, 64, 16)
"""The request caps a search with no users asked tries where the cap sizes a state pool (``state_slot_changes``)."""


WEIGHTS_SHARE = 0.8
"""The share of a device the weights may take in ``weights_sized_layout`` (the engines keep the rest for the pool)."""
MAX_SIZED_DEVICES = 64


def weights_sized_layout(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, tp: int, pp: int
) -> tuple[str, ...]:
    """``--target Nx<device> --tp N/pp``: the fewest devices, a power of two, whose share of the weights each takes at
    most ``WEIGHTS_SHARE`` of a device, where that is more than the layouts ``memory.layout_changes`` tries (the next
    power of two above tp); none past ``MAX_SIZED_DEVICES``. DeepSeek-V3 (627 GiB) on one H100: 16, not 2 (trial 294
    #4)."""
    devices = weights_sized_devices(model, target, deployment)
    tried = max(tp * pp, (1 << tp.bit_length()) * pp, target.n_devices)
    if devices <= tried or devices > MAX_SIZED_DEVICES or devices % pp:
        return ()
    return (f"--target {devices}x{target.target.id} --tp {devices // pp}",)


def weights_sized_devices(model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec) -> int:
    """The fewest devices of ``target``'s kind, a power of two, whose share of the weights each takes at most
    ``WEIGHTS_SHARE`` of a device."""
    weights = deployment_model_bytes(model, deployment.weight_dtype, deployment)
    ratio = weights / (WEIGHTS_SHARE * target.target.device_memory_bytes)
    return 1 << max(0, math.ceil(ratio) - 1).bit_length()  # the power of two at or above the ratio


def _state_slots_change(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, tp: int, pp: int, concurrency: int
) -> tuple[str, ...]:
    """``--max-num-seqs N`` (a replica's share of the users) first among a pinned layout's ways out where the cap sizes
    a state pool (``state_slot_changes``)."""
    replicas = max(1, target.n_devices // (tp * pp))
    return tuple(state_slot_changes(model, deployment, [-(-concurrency // replicas)]))


def state_slot_changes(model: ModelSpec, deployment: DeploymentSpec, caps: list[int]) -> list[str]:
    """``--max-num-seqs N`` for each of ``caps`` where the engine sizes a hybrid's state pool by its request cap and
    none is given: TensorRT-LLM's ``--max_batch_size``, SGLang's ``--max-running-requests`` with its radix cache off
    (``core.engine.trtllm_state_pool``, ``core.engine.sglang_state_pool``); the judge keeps those that make the
    engine start."""
    from mha_cli.core.engine.settings import deployment_generation
    from mha_cli.core.engine.sglang_state_pool import priced_here, sized_by_request
    from mha_cli.core.engine.trtllm_state_pool import priced_here as trtllm_priced

    generation = deployment_generation(deployment).id
    if deployment.max_num_seqs is not None:
        return []
    sglang = generation == "sglang-0.5" and priced_here(model)
    if sglang and not sized_by_request(model, deployment.engine_version, deployment.prefix_caching is not False):
        return []
    if not (sglang or (generation == "trtllm-pytorch" and trtllm_priced(model))):
        return []
    return [f"--max-num-seqs {cap}" for cap in caps]


MAX_RATE_STEPS = 60
"""Fixed-point steps of ``plan_at_rate`` at most (it settles in a handful)."""
MAX_RATE = 1e9
"""The most requests per second ``--rate`` takes (exclusive)."""
MIN_RATE = 1e-3
"""The fewest requests per second ``--rate`` takes: one every 1,000 s (1e-9 was priced, a simulated run of 185 billion
seconds: trial 289 #10)."""


def check_rate(rate: float, minimum: float = 0.0) -> None:
    """Refuse a rate (requests per second) outside (0, MAX_RATE), or below ``minimum`` where one is given (the user's
    ``--rate``: ``check_user_rate``), NaN included, naming both bounds. A search prices loads below MIN_RATE on the
    way (an aggregated replica's goodput bisected down to nothing within the targets)."""
    if not (rate > 0 and rate >= minimum) or not rate < MAX_RATE:
        low = f"from {minimum:g} (one every {1 / minimum:,.0f} s)" if minimum else "above 0"
        raise BadInputError(f"--rate {rate:g}: give requests per second {low} to below {MAX_RATE:g}")


def check_user_rate(rate: float) -> None:
    """The user's ``--rate``: at least MIN_RATE (``check_rate``)."""
    check_rate(rate, MIN_RATE)


def plan_at_rate(
    model: ModelSpec,
    target: ResolvedTarget,
    deployment: DeploymentSpec,
    profile: DeviceProfile,
    ceiling: DeviceProfile | None,
    *,
    isl: int,
    osl: int,
    rate: float,
    tp: int | None = None,
    pp: int = 1,
) -> ServingPlan:
    """Requests arriving at ``rate`` per second (open loop): the requests in flight follow Little's law,
    users = rate x e2e(users), found as a fixed point from one user. The deployment serves at most
    (its output tokens/s at its largest load) / osl requests per second; at or beyond that rate the result is that
    largest load, marked ``saturated`` (the queue would grow without bound)."""
    check_rate(rate)
    plans = LayoutPlans(model, target, deployment, profile, ceiling, isl=isl, osl=osl, tp=tp, pp=pp)
    first = plans.at(1)
    engine = first.memory.engine
    budget = engine.max_num_batched_tokens * micro_batch_steps(pp)
    keeps_up = sustainable(isl - plans.warm_hit(engine), osl, budget)
    full_load = first.deployment.replicas * min(plans.admitted(engine), keeps_up)
    busiest = plans.at(full_load)
    capacity = busiest.output_tokens_per_s / osl
    if rate >= capacity:
        note = (
            f"--rate {rate:g} req/s exceeds what it serves at its largest load ({capacity:.3g} req/s): requests pile up"
        )
        busiest.notes.append(note)
        return busiest.model_copy(update={"rate_rps": rate, "saturated": True})
    users, plan = 1, first
    for _ in range(MAX_RATE_STEPS):
        needed = min(full_load, max(1, math.ceil(rate * plan.e2e_ms / 1e3)))
        if needed == users:
            break
        users = needed
        plan = plans.at(users)
    plan.notes.append(f"--rate {rate:g} req/s: {users} request(s) in flight (Little's law: rate x e2e)")
    # in flight is a whole number of requests, rounded up: the load they stand for serves rate x osl tokens/s, not
    # users / e2e x osl (up to 20% more at 2 req/s)
    served = min(plan.output_tokens_per_s, rate * osl)
    bounds = plan.bounds  # the roofline serves no more than arrives either
    if bounds is not None:
        bounds = bounds.model_copy(update={"output_tokens_per_s": min(bounds.output_tokens_per_s, rate * osl)})
    return plan.model_copy(update={
        "rate_rps": rate, "output_tokens_per_s": served,
        "output_tokens_per_s_per_gpu": served / plan.deployment.gpus, "bounds": bounds,
    })  # fmt: skip


def simulate_plan(
    plan: ServingPlan,
    model: ModelSpec,
    deployment: DeploymentSpec,
    profile: DeviceProfile,
    client: ClientSpec,
    *,
    ttft_ms: float | None = None,
    itl_ms: float | None = None,
    slo_percentile: float = 99.0,
    trace: bool = False,
) -> ServingPlan:
    """``plan`` with its serving loop simulated under ``client``'s load (its ``rate_rps`` when it has one)."""
    d = plan.deployment
    variant = deployment.model_copy(
        update={
            "expert_parallel": d.expert_parallel,
            "dp": d.replicas if d.dp_attention else None,
            "separate_servers": d.separate_servers or None,
        }
    )
    experts = expert_layout(model, d.tp, d.replicas, variant)
    case = serving_case(model, variant, plan.memory, isl=plan.isl, osl=plan.osl, concurrency=plan.concurrency,
                        pp=d.pp, replicas=d.replicas, experts=experts,
                        nodes=None if plan.nodes is None else plan.nodes.placement,
                        prefixes=1 if plan.offload is None else plan.offload.shared_prefixes)  # fmt: skip
    caching = gpu_prefix_cache(model, variant, plan.memory.engine)
    simulated = simulate_deployment(
        case, profile, plan.memory.engine, client, rate=plan.rate_rps, ttft_ms=ttft_ms, itl_ms=itl_ms,
        slo_percentile=slo_percentile, trace=trace, offload=plan.offload, prefix_caching=caching,
    )  # fmt: skip
    if plan.saturated and plan.rate_rps is not None and not simulated.saturated:  # a transient too short to show it
        # (trial 330 #5: the steady state's queue grows, said in the notes, yet the run's misses left it out)
        served = plan.output_tokens_per_s / plan.osl
        rate_miss = f"rate {plan.rate_rps:g} req/s > what it serves ({served:.3g} req/s at its largest load)"
        simulated = simulated.model_copy(update={"misses": [rate_miss, *simulated.misses]})
    swept = []
    if plan.sweep and plan.rate_rps is None:  # the plot's points, each a short run of 3 requests a user
        for point in plan.sweep:
            share = client._replace(num_prompts=None, prompts_per_user=SWEEP_PROMPTS_PER_USER,
                                    min_prompts=SWEEP_MIN_PROMPTS, prefix_visits=0)  # fmt: skip
            point_case = case._replace(concurrency=point.concurrency)
            run = simulate_deployment(point_case, profile, plan.memory.engine, share, slo_percentile=slo_percentile,
                                      offload=plan.offload, prefix_caching=caching)  # fmt: skip
            swept.append(run)
    notes = plan.notes
    groups = 1 if plan.offload is None else plan.offload.shared_prefixes
    cold = min(simulated.requests, groups)  # request i carries prefix i mod K: the first K meet theirs cold
    warm = (simulated.requests - cold) / simulated.requests
    if groups > 1 and plan.offload is not None and plan.offload.regime != "recomputed" and warm < WARM_ENOUGH:
        more = WARM_PROMPTS_PER_PREFIX * groups  # a replica's requests that leave 95% of them warm
        replicas = simulated.replicas  # --num-prompts counts every replica's (review 265 #4)
        way = f"; --num-prompts {more * replicas} raises that to 95%" if simulated.requests < more else ""
        whose = f" (the busiest of {replicas} replicas')" if replicas > 1 else ""
        notes = [*notes, (
            f"the simulated run's {simulated.requests:,} requests{whose} cycle through {groups:,} prefixes: the first"
            f" {cold:,} find theirs in no cache (cold), so at most {warm:.0%} of them hit where the closed form prices"
            f" every one warm{way}"
        )]  # fmt: skip
    transient = transient_note(simulated, plan.memory.engine, case, client, plan.running_per_replica)
    if transient is not None:
        notes = [*notes, transient]
    return plan.model_copy(update={"simulated": simulated, "simulated_sweep": swept, "notes": notes})


FILLS_FOR_STEADY_STATE = 5
"""Times an open loop's requests should fill what the engine runs at once for its latencies to be a steady state's:
the count ``transient_note`` offers."""


def transient_note(
    simulated: SimulatedServing, engine: EnginePlan, case: ServingCase, client: ClientSpec, runs: int
) -> str | None:
    """Why the simulated run's latencies are a transient's, not the steady state the closed form prices, where they are
    (trial 289 #3, #4): an open loop over its capacity whose requests never filled the engine (200 by default, where it
    runs 378 at once), or a closed loop whose users sent one request each (the default count stops at 10,000); with
    a count that reaches it where the simulator's step budget and ``--num-prompts`` allow one. ``runs``: what the
    closed form runs at once on a replica at this load (the pool, max_num_seqs and the token budget's bound). None
    otherwise."""
    from mha_cli.core.serve.replica import MAX_PROMPTS, MAX_SIMULATED_STEPS, steps_per_request

    users = simulated.users_per_replica
    whose = f" (the busiest of {simulated.replicas} replicas')" if simulated.replicas > 1 else ""
    short = simulated.saturated or simulated.requests <= runs  # fewer requests than the closed form runs at once:
    if users is None and short and simulated.max_running < runs:  # never a steady state, saturated or not (302 #2)
        wanted = FILLS_FOR_STEADY_STATE * runs
        fits = wanted * steps_per_request(case, engine, None) <= MAX_SIMULATED_STEPS
        fits = fits and wanted * simulated.replicas <= MAX_PROMPTS  # what --num-prompts takes
        way = f"; --num-prompts {wanted * simulated.replicas} for it" if fits else "; the closed form prices it"
        return (
            f"the simulated run's {simulated.requests:,} requests{whose} never filled the engine (at most"
            f" {simulated.max_running:,} running where the closed form runs {runs:,}): its latencies are a transient's,"
            f" short of the steady state its queue grows to{way}"
        )
    if users is not None and simulated.requests <= users:
        default = " (the default count stops there)" if client.num_prompts is None else ""
        return (
            f"each of the {users:,} users{whose} sent one request{default}: the run is one burst, its TTFT and end to"
            " end a burst's, not the steady state's the closed form prices (its roofline bound is a steady state's too)"
        )
    return None


WARM_ENOUGH = 0.99
"""The share of a run's requests that may meet their prefix warm above which the cold ones go unsaid."""
WARM_PROMPTS_PER_PREFIX = 20
"""Requests per shared prefix that leave 95% of them warm (the first of each is cold)."""
SWEEP_PROMPTS_PER_USER = 3
SWEEP_MIN_PROMPTS = 32


def trained_context_note(model: ModelSpec, context: int) -> str | None:
    """That a request's ``context`` (isl + osl) is past what ``model`` was trained for, where it is: said by a
    pinned plan and a search alike (trial 313 #11: the search said nothing); None otherwise."""
    if not model.context_length or context <= model.context_length:
        return None
    return f"isl + osl ({context:,}) exceed the {model.context_length:,} tokens {model.name} was trained for"
