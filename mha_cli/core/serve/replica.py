"""A deployment simulated: its busiest replica runs the benchmark client's share of the load through its engine's
scheduler (``core.serve.simulate``), on the engine's memory plan (pool, token budget, sequence cap).

Users spread evenly over the replicas, as a load balancer spreads them: a closed loop of N users gives the busiest
replica ceil(N / replicas) of them; an open loop at a rate gives each replica rate / replicas. The replica's
throughput times the replicas is the deployment's. Pure Python.
"""

from typing import TYPE_CHECKING, Annotated, NamedTuple

from pydantic import Field

from mha_cli.core.errors import BadInputError
from mha_cli.core.quantities import format_ms
from mha_cli.core.record import empty_list
from mha_cli.core.serve.simulate import EngineLimits, RequestTimes, Simulation, engine_limits, simulate
from mha_cli.core.serve.workload import Workload, drawn_lengths

if TYPE_CHECKING:
    from mha_cli.core.cost.offload_plan import OffloadPlan
    from mha_cli.core.cost.profile import DeviceProfile
    from mha_cli.core.cost.stepper import ServingCase
    from mha_cli.core.engine.plan import EnginePlan

DEFAULT_PROMPTS_PER_USER = 10
MIN_DEFAULT_PROMPTS = 200
MAX_DEFAULT_PROMPTS = 10_000
PREFIX_VISITS = 5
"""A default run sends each of several shared prefixes this many requests at least: only its first finds no cache."""
MAX_PROMPTS = 100_000
"""``plan --num-prompts`` at most: a simulated run of that many takes seconds."""
SLO_PERCENTILES = (0.0, 50.0, 90.0, 99.0)
"""What ``--slo-percentile`` takes: 0 (the mean), 50, 90 or 99."""
DEFAULT_SLO_PERCENTILE = 99.0


class ClientSpec(NamedTuple):
    """The benchmark client's options (``vllm bench serve``'s names in the CLI)."""

    num_prompts: int | None = None
    """Requests in the run (None: ``prompts_per_user`` a user, ``min_prompts`` to 10,000, as the step budget
    allows; an open loop ``min_prompts``)."""
    range_ratio: float = 0.0
    burstiness: float = 1.0
    lengths: list[tuple[int, int]] | None = None
    """(input, output) pairs from a file, replayed in order (cycled to ``num_prompts``); None: isl and osl."""
    seed: int = 0
    prompts_per_user: int = DEFAULT_PROMPTS_PER_USER
    min_prompts: int = MIN_DEFAULT_PROMPTS
    prefix_visits: int = PREFIX_VISITS
    """Several shared prefixes: the default count sends each this many requests at least (0: no such floor; the
    search's and the sweep's short runs)."""


class SimulatedServing(Simulation):
    """The busiest replica's simulated run, with the deployment's throughput and the targets judged on it."""

    replicas: int
    users_per_replica: int | None
    """Closed loop: the busiest replica's users; None for an open loop."""
    rate_per_replica: float | None
    deployment_output_tokens_per_s: float
    """The replicas' output tokens/s: the busiest replica's x the replicas that busy, plus, where a closed loop's users
    do not divide over the replicas, the others' at one user fewer (simulated; DP attention's ranks step together, so
    the busiest's rate x their share of rows); a closed loop of fewer users than replicas leaves the rest idle."""
    slo_percentile: float
    """Where targets are read: 0 the mean, else the percentile."""
    goodput_rps: float | None = None
    """Requests per second within --ttft-ms and --itl-ms each (``vllm bench serve --goodput``; ITL read as TPOT)."""
    misses: list[str] = Field(default_factory=empty_list)
    """Targets its percentile misses, each with its figure."""
    itl_read_as_tpot: Annotated[bool, Field(exclude_if=lambda value: not value)] = False
    """Under speculative decoding --itl-ms is judged on TPOT (a step streams several tokens at once): what a summary
    of the run shows beside its TTFT."""


MAX_SIMULATED_STEPS = 200_000
"""Engine steps a simulation may take, counted in decode steps (a few seconds): a longer run is shortened (default
count) or refused."""
PREFILL_STEP_WEIGHT = 10
"""A step with a prefill chunk costs the simulator about ten decode-only steps (priced afresh, not memoised)."""


PIPELINED_ROWS_PER_STEP = 16
"""Under pipeline parallelism the loop visits every decode of every batch (``core.serve.pipelined``, no cohort):
about this many of them cost the simulator one decode step of the serial loop (measured on this machine: 10,000
requests of 1,024 + 256 tokens from 256 users on llama-3-8b, 3.1 s at pp 2, 0.4 s at pp 1)."""


def steps_per_request(case: "ServingCase", engine: "EnginePlan", users: int | None) -> float:
    """The simulator's work one request adds to a run, in decode steps: its output over the rows a step runs (at
    most ``PIPELINED_ROWS_PER_STEP`` under pipeline parallelism), and its prompt's chunk steps
    (``PREFILL_STEP_WEIGHT`` each)."""
    rows = max(1, min(users or engine.max_num_seqs, engine.max_num_seqs))
    if case.pp > 1:
        rows = min(rows, PIPELINED_ROWS_PER_STEP)
    return case.osl / rows + PREFILL_STEP_WEIGHT * case.isl / engine.max_num_batched_tokens


def client_workload(
    case: "ServingCase", client: ClientSpec, rate: float | None, engine: "EnginePlan", prefix_groups: int = 1
) -> tuple[Workload, int | None]:
    """The busiest replica's share of the client's load: (its workload, its users or None in an open loop). The
    default count of requests (``ClientSpec.prefix_visits`` for each of ``prefix_groups`` shared prefixes at least, so
    most find theirs cached) is cut to what ``MAX_SIMULATED_STEPS`` allows (one wave of users at least); a count asked for beyond
    it is refused."""
    users = None if rate is not None else -(-case.concurrency // case.replicas)
    steps = steps_per_request(case, engine, users)
    count = client.num_prompts
    if count is None:
        count = client.min_prompts if users is None else client.prompts_per_user * users
        floor = max(client.min_prompts, client.prefix_visits * prefix_groups if prefix_groups > 1 else 0)
        count = min(MAX_DEFAULT_PROMPTS, max(floor, count), int(MAX_SIMULATED_STEPS / steps))
        count = max(count, users or 1)
    else:  # the client's whole count, split over the replicas (closed loop or --rate alike)
        if users is not None and count < case.concurrency:  # its run never holds the users asked: no confirmation
            raise BadInputError(
                f"--num-prompts {count:,} sends fewer requests than the {case.concurrency:,} users: at most {count:,}"
                f" would run at once; give at least {case.concurrency}, or leave --num-prompts out"
            )
        count = max(1, -(-count // case.replicas))
    if count * steps > MAX_SIMULATED_STEPS:
        # the users bound the count from below (one each): fewer prompts cannot help them (trial 377 #1)
        fewer = "fewer users (--concurrency)" if users is not None and count <= users else "fewer (--num-prompts)"
        raise BadInputError(
            f"simulating {count:,} requests of {case.isl:,} + {case.osl:,} tokens takes over"
            f" {MAX_SIMULATED_STEPS:,} engine steps: give {fewer} or --closed-form"
        )
    lengths = prompt_lengths(case, client, count)
    if not 0 < client.burstiness <= 1e3:
        raise BadInputError(f"--burstiness {client.burstiness:g}: give a gamma shape greater than 0 (1: Poisson)")
    workload = Workload(
        lengths=lengths, rate=None if rate is None else rate / case.replicas, burstiness=client.burstiness,
        max_concurrency=users, seed=client.seed, prefix_len=case.shared_prefix, prefix_groups=prefix_groups,
    )  # fmt: skip
    return workload, users


def prompt_lengths(case: "ServingCase", client: ClientSpec, count: int) -> list[tuple[int, int]]:
    """``count`` (prompt, output) lengths: the client's file in turn, or drawn as vLLM's random dataset draws them;
    with a shared prefix the range applies to the rest of the prompt, the prefix before it (``vllm bench serve
    --random-prefix-len P --random-input-len (isl - P)``), so that no prompt is shorter than its prefix (trial 323 #7:
    ``--isl 1024 --shared-prefix 1000 --random-range-ratio 0.9`` drew prompts from 103 tokens)."""
    if client.lengths is not None:
        return [client.lengths[i % len(client.lengths)] for i in range(count)]
    prefix = case.shared_prefix
    rest = case.isl - prefix  # none: every prompt is the prefix (review 324 #5), the outputs still drawn
    drawn = drawn_lengths(max(1, rest), case.osl, count, range_ratio=client.range_ratio, seed=client.seed)
    return [(prefix + (prompt if rest else 0), output) for prompt, output in drawn]


def _lighter_replicas(case: "ServingCase", users: int | None) -> tuple[int, "ServingCase"] | None:
    """A closed loop whose users do not divide over the replicas: (the replicas with one user fewer than the busiest,
    a case that gives each replica that many users); None when every replica is as busy (or idle: fewer users than
    replicas, or an open loop)."""
    if users is None or users < 2 or case.replicas < 2 or users * case.replicas == case.concurrency:
        return None
    lighter = users * case.replicas - case.concurrency  # replicas running users - 1
    return lighter, case._replace(concurrency=(users - 1) * case.replicas)


def simulate_deployment(
    case: "ServingCase",
    profile: "DeviceProfile",
    engine: "EnginePlan",
    client: ClientSpec,
    *,
    rate: float | None = None,
    ttft_ms: float | None = None,
    itl_ms: float | None = None,
    slo_percentile: float = DEFAULT_SLO_PERCENTILE,
    trace: bool = False,
    offload: "OffloadPlan | None" = None,
    prefix_caching: bool = True,
) -> SimulatedServing:
    """``case`` served on ``profile`` by ``engine``'s scheduler and pool, under ``client``'s load (see the module
    docstring); targets read at ``slo_percentile``. ``offload``: several shared prefixes and the host tier
    (``core.serve.offload``), with the GPU's prefix cache on or not (``prefix_caching``)."""
    from mha_cli.core.cost.stepper import Stepper
    from mha_cli.core.serve.step_cost import StepCost

    if slo_percentile not in SLO_PERCENTILES:
        raise BadInputError(f"--slo-percentile {slo_percentile:g}: give 50, 90 or 99 (or 0 for the mean)")

    def replica_run(served: "ServingCase", *, traced: bool) -> tuple[Simulation, RequestTimes, Workload, int | None]:
        """One replica of ``served`` under its share of the client's load: (its run, per request times, workload,
        users or None in an open loop)."""
        workload, users = client_workload(
            served, client, rate, engine, 1 if offload is None else offload.shared_prefixes
        )
        limits = engine_limits(engine, recv_interval=served.recv_interval)
        if not prefix_caching:  # no cache to keep a preempted request's blocks in (core.serve.schedulers.OwnBlocks)
            limits = limits._replace(caches_preempted_blocks=False)
        if offload is not None:
            limits = offload_limits(limits, offload, prefix_caching)
        spec = served.speculative
        if spec is not None:  # each decode keeps T tokens a step (core.serve.speculative)
            lookahead = spec.num_speculative_tokens if engine.name == "vllm" else 0
            limits = limits._replace(acceptance_length=spec.acceptance_length, lookahead_tokens=lookahead)
        run, times = simulate(
            workload, limits, StepCost(Stepper(served, profile)),
            request_overhead_s=profile.request_overhead_s, trace=traced,
        )  # fmt: skip
        return run, times, workload, users

    run, times, workload, users = replica_run(case, traced=trace)
    # replicas at work: every one under an open loop; a closed loop of fewer users than replicas leaves some idle
    busy = case.replicas if users is None else min(case.replicas, case.concurrency)
    output_tokens_per_s = run.output_tokens_per_s * busy
    lighter = _lighter_replicas(case, users)
    light_runs: list[tuple[Simulation, RequestTimes, float]] = []
    """The lighter replicas' runs, each with the replicas it stands for (ranks sharing the experts: scaled by their
    share of rows)."""
    if lighter is not None and users is not None:  # users that do not divide: the others run one user fewer
        count, light_case = lighter
        busy = case.replicas - count
        shared = case.experts is not None and (case.experts.dp_attention or case.experts.ranks > case.tp)
        if shared:  # ranks of one server sharing the experts step together: the busiest's steps, fewer rows
            light_runs.append((run, times, count * (users - 1) / users))
        else:  # separate replicas: their own lighter steps
            light_run, light_times, _, _ = replica_run(light_case, traced=False)
            light_runs.append((light_run, light_times, count))
        output_tokens_per_s = run.output_tokens_per_s * busy + sum(r.output_tokens_per_s * n for r, _, n in light_runs)
    misses = [f"rate {rate:g} req/s > what it serves (the queue grows)"] if run.saturated else []
    label = "mean" if slo_percentile == 0 else f"p{slo_percentile:g}"
    if ttft_ms is not None and run.ttft_ms.at(slo_percentile) > ttft_ms:
        misses.append(f"{label} ttft {run.ttft_ms.at(slo_percentile):,.0f} ms > {format_ms(ttft_ms)} ms")
    # speculative decoding: the gap between chunks of T tokens is not the time per token; read the target as TPOT
    per_token, read_as = (run.itl_ms, "itl") if case.speculative is None else (run.tpot_ms, "tpot (--itl-ms)")
    if itl_ms is not None and per_token.at(slo_percentile) > itl_ms:
        misses.append(f"{label} {read_as} {per_token.at(slo_percentile):,.1f} ms > {format_ms(itl_ms)} ms")
    goodput = None
    if ttft_ms is not None or itl_ms is not None:
        goodput = run.good_requests(times, ttft_ms, itl_ms) / run.duration_s * busy
        goodput += sum(r.good_requests(t, ttft_ms, itl_ms) / r.duration_s * n for r, t, n in light_runs)
    return SimulatedServing(
        **dict(run), replicas=case.replicas, users_per_replica=users,
        rate_per_replica=workload.rate, deployment_output_tokens_per_s=output_tokens_per_s,
        slo_percentile=slo_percentile, goodput_rps=goodput, misses=misses, itl_read_as_tpot=read_as != "itl",
    )  # fmt: skip


def offload_limits(limits: EngineLimits, offload: "OffloadPlan", prefix_caching: bool) -> EngineLimits:
    """``limits`` with the GPU's prefix cache as the engine has it and the host tier, where it holds anything (an
    engine whose host tier keeps what its prefix cache would gets none with the cache off)."""
    host = offload.host
    active = host is not None and (prefix_caching or not host.needs_prefix_cache)
    if not active:
        return limits._replace(prefix_caching=prefix_caching)
    assert host is not None
    return limits._replace(
        prefix_caching=prefix_caching, host_blocks=host.host_tokens // limits.block_size,
        load_s_per_token=host.bytes_per_token / (host.load_gbs * 1e9),
    )  # fmt: skip
