"""Ways out of a plan that does not fit its target, as the flags that would make it fit.

Shared by ``mha recommend`` (MHA025/MHA026 in its trace) and ``mha check`` (the same rules as
findings), so both name the same concrete fixes: ``--target NxTARGET``, ``--weight-dtype fp8``,
``--batch N``, ``--kv-dtype fp8``, ``--seq N``. Flag values are written as the options parse them:
no thousands separators.
"""

import itertools
from typing import NamedTuple

from mha_cli.core.dp_attention import a2a_backend_of, dp_attention_runs_on
from mha_cli.core.dtypes import storage_format
from mha_cli.core.engine.encoder_profile import as_vllm_loads
from mha_cli.core.engine.settings import release_in_force
from mha_cli.core.errors import BadInputError, MhaError
from mha_cli.core.kv import KvFootprint, footprint_for
from mha_cli.core.memory import LayoutError, MemoryPlan, layout_changes, plan_memory, resolve_tp, rope_table_clause
from mha_cli.core.params import ParamBreakdown, count_params
from mha_cli.core.quantities import format_bytes
from mha_cli.core.rules.engine import Trace, counted
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.targets import ResolvedTarget, resolve_target
from mha_cli.core.tensor_parallel import ExpertLayout
from mha_cli.core.ways import FLAG_FIELDS, Judge, Verdict, accepted, flag_updates, settle
from mha_cli.core.weight_bytes import deployment_model_bytes, rank_weight_bytes
from mha_cli.core.weight_formats import weight_format

MAX_DEVICES_TRIED = 4096
SMALLER_WEIGHT_DTYPES = ("fp8", "int4")
LIGHTER_BY = 0.75
"""A smaller format is offered only where it is at least a quarter lighter a weight: int4 (4 bits) is no way out of
an MXFP4 (4.25) or NVFP4 (4.5) checkpoint (trial 390 #5: gpt-oss was offered int4, a checkpoint nobody publishes,
for what the engine's padding and its bf16 attention layers took)."""


def smaller_weight_dtypes(target: ResolvedTarget, deployment: DeploymentSpec) -> list[str]:
    """The formats of ``SMALLER_WEIGHT_DTYPES`` lighter than ``deployment``'s (``LIGHTER_BY``) that its engine serves on ``target``'s
    device: fp8 only where the device has it (``fp8_native``), and neither below the compute capability vLLM or
    TensorRT-LLM loads it on (``core.engine.quant_capability``: int4 is refused on a V100), so no way out names a
    format the engine refuses there."""
    from mha_cli.core.engine.quant_capability import trtllm_capability_refusal, vllm_capability_refusal

    device, engine = target.target, deployment.engine or "vllm"
    refusal = {"vllm": vllm_capability_refusal, "trtllm": trtllm_capability_refusal}.get(engine)
    current = bytes_per_weight(deployment.weight_dtype)
    return [
        dtype for dtype in SMALLER_WEIGHT_DTYPES
        if bytes_per_weight(dtype) <= LIGHTER_BY * current and (dtype != "fp8" or device.fp8_native)
        and (refusal is None or refusal(dtype, None, device.vendor, device.compute_capability) is None)
    ]  # fmt: skip


def bytes_per_weight(name: str) -> float:
    """Nominal bytes per covered weight of a weight format (orders formats: int4 < fp8 < bf16)."""
    return weight_format(name).nominal_bits / 8


def group_sizes(model: ModelSpec) -> list[int]:
    """Device counts a tensor-parallel group may have, from 2 to ``MAX_DEVICES_TRIED``: the powers of two and every
    divisor of the query heads (24 devices split 96 heads; only the powers of two would skip it). Which of these
    split the KV heads too is for ``footprint_for`` to say."""
    powers = {2**k for k in range(1, MAX_DEVICES_TRIED.bit_length())}
    divisors = {
        d for d in range(2, min(model.attention.n_heads, MAX_DEVICES_TRIED) + 1) if model.attention.n_heads % d == 0
    }
    return sorted(d for d in powers | divisors if d <= MAX_DEVICES_TRIED)


def one_machine(target: ResolvedTarget) -> bool:
    """Whether ``target`` is the cpu target, this machine, which ``resolve_target`` never groups (``2xcpu``)."""
    return target.target.vendor == "CPU"


def devices_that_fit(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, total_params: int
) -> int | None:
    """The smallest tensor-parallel group of ``target``'s device (``group_sizes``) that holds weights and cache."""
    for devices in group_sizes(model):
        group = resolve_target(f"{devices}x{target.target.id}")
        try:
            kv = footprint_for(model, deployment, devices)
            plan = plan_memory(group, model=model, weight_dtype=deployment.weight_dtype, kv=kv, deployment=deployment)
        except MhaError:  # this tp does not split the heads, or the engine refuses the weights split so
            continue
        if plan.fits:
            return devices
    return None


def replicas_that_fit(model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec) -> tuple[int, int] | None:
    """(devices, tp): the fewest devices of ``target``'s kind that hold the batch as replicas of one tensor-parallel
    group, each serving its share, where more than one replica is needed; None when none of up to
    ``MAX_DEVICES_TRIED`` does. Past the KV heads a wider group caches no less a rank (trial 343 #2: 70B at 128K x 32
    was offered tp 64 over 64 GPUs with the batch cut to 25, where 4 replicas of tp 8 hold all 32)."""
    best: tuple[int, int] | None = None
    for tp in [1, *group_sizes(model)]:
        if best is not None and tp >= best[0]:
            break
        one = _plan_with(model, resolve_target(f"{tp}x{target.target.id}"), deployment, tp)
        if one is None or not one.weights_fit or one.max_sequences < 1:
            continue
        replicas = -(-deployment.batch // one.max_sequences)
        devices = tp * replicas
        if replicas < 2 or devices > MAX_DEVICES_TRIED or (best is not None and devices >= best[0]):
            continue
        spread = _plan_with(model, resolve_target(f"{devices}x{target.target.id}"), deployment, tp)
        if spread is not None and spread.fits:
            best = (devices, tp)
    return best


def ways_out(
    model: ModelSpec,
    target: ResolvedTarget,
    deployment: DeploymentSpec,
    plan: MemoryPlan,
    kv: KvFootprint,
    total_params: int,
) -> list[str]:
    """What would make ``plan`` fit; empty when it fits. Weights that do not fit: more devices first, then lighter
    weights; a cache short: the changes on the devices at hand first, more devices after. Under DP attention
    (``--dp``) only the ways that keep its ranks: another target or tp would not match the --dp asked."""
    if plan.fits:
        return []
    if plan.engine.refused_outright:  # no memory freed makes it start: for a KV format it lacks, the formats it runs
        return _formats_it_runs(model, deployment, plan)
    # under --dp, or on the cpu target (this one machine: no group of it to spread over), the devices stay as they are
    keeps_ranks = deployment.dp is not None or one_machine(target)
    devices = None if keeps_ranks else devices_that_fit(model, target, deployment, total_params)
    ways = []
    more_devices = None
    if devices:
        # --tp too when the plan's tp was set apart from the device count, or the new target would not change it.
        tp_flag = f" --tp {devices}" if plan.tp != plan.n_devices else ""
        more_devices = f"--target {devices}x{target.target.id}{tp_flag} (tensor parallel over {devices} devices)"
    # replicas where the cache is what is short (review 346 #1: with the weights short, 168 x H200 as tp 24 replicas
    # hid the pairs of lighter formats on the 8 at hand)
    spread = None if keeps_ranks or not plan.weights_fit else replicas_that_fit(model, target, deployment)
    replicas = None
    if spread is not None and (devices is None or spread[0] < devices):
        replicas = _replicas_way(target, *spread)
        more_devices = None  # the replicas hold the batch on fewer devices than a wider group
    if not plan.weights_fit:
        ways += [more_devices] if more_devices else []
        knob = _engine_knob_that_fits(model, target, deployment, plan, kv)  # a share set low: raising it suffices
        ways += [knob] if knob else []
        for dtype in smaller_weight_dtypes(target, deployment):  # none the device lacks (fp8 on a T4, int4 on a V100)
            # fp8 and int4: no engine pads them, so their checkpoint bytes are the plan's (core.engine.mxfp4_moe)
            per_device = rank_weight_bytes(model, plan.tp, dtype, experts=_plan_experts(plan, deployment))
            if per_device < plan.usable_bytes:
                held = _sequences_with(model, target, deployment, kv, dtype)  # said as the other ways say it
                ways.append(f"--weight-dtype {dtype} (weights {format_bytes(per_device)} per device{held})")
                break
        seq = _longest_context_that_fits(model, target, deployment, plan)  # the RoPE table may be what overflows
        if 0 < seq < kv.seq_len:
            ways.append(f"--seq {seq} (the context this batch fits)")
        if not ways and not keeps_ranks:  # trial 406 #1: no group holds the batch, replicas of one may (70B at 128K
            ways += _replicas_words(model, target, deployment)  # x 4 on RTX 4090s: 2 x tp 16, not "--batch 3")
        return ways or [_last_way(model, target, deployment, plan, total_params)]
    capped = _seq_cap_that_fits(model, target, deployment, plan, kv)
    if capped:
        ways.append(capped)
    knob = (
        _set_pool_that_fits(model, target, deployment, plan, kv)
        or _engine_knob_that_fits(model, target, deployment, plan, kv)
        or _state_slots_that_fit(model, target, deployment, plan, kv)
    )
    if knob:
        ways.append(knob)
    lighter = _lighter_weights_that_fit(model, target, deployment, kv)
    if lighter:
        ways.append(lighter)
    if plan.max_sequences > 0:  # the batch is shared by the replicas, so the total is what fits
        ways.append(f"--batch {plan.max_sequences}")
    enough = False  # an fp8 cache alone holds the batch: no pair of changes is offered beside it
    if storage_format(deployment.kv_dtype).bits > 8:
        fp8 = footprint_for(model, deployment.model_copy(update={"kv_dtype": "fp8"}), plan.tp)
        share = fp8.bytes_per_sequence_per_rank / kv.bytes_per_sequence_per_rank
        with_fp8 = _plan_with(model, target, deployment, plan.tp, kv_dtype="fp8")  # the engine's own plan
        enough = with_fp8.fits if with_fp8 is not None else (
            plan.sequences_per_replica * fp8.bytes_per_sequence_per_rank
            <= plan.usable_bytes - plan.weight_bytes_per_device
        )  # fmt: skip
        ways.append(f"--kv-dtype fp8 ({share:.0%} of this cache{'' if enough else '; not enough on its own'})")
    split = None if keeps_ranks else _smaller_split_that_fits(model, target, deployment, plan)
    pair = None
    if not (split or keeps_ranks or lighter or knob or devices or enough):
        pair = _capacity_pair_that_fits(model, target, deployment, plan)
    for way in (split, pair):
        if way:
            ways.append(way.text)
    named = {way.ranks for way in (split, pair) if way and way.ranks}
    dp_attention = None if one_machine(target) else _dp_attention_that_fits(model, target, deployment, plan)
    if dp_attention and dp_attention.ranks not in named:  # the same ranks are named once
        ways.append(dp_attention.text)
    if more_devices:  # the cache short, the devices at hand first (trial 318 #12: 4x the GPUs came before --tp 4)
        ways.append(more_devices)
    seq = _longest_context_that_fits(model, target, deployment, plan)
    if 0 < seq < kv.seq_len:
        ways.append(f"--seq {seq} (the context this batch fits)")
    if replicas:  # the most devices, so last: after the changes on the devices at hand and a shorter context
        ways.append(replicas)
    return ways or [_last_way(model, target, deployment, plan, total_params)]


def _replicas_way(target: ResolvedTarget, n_devices: int, tp: int) -> str:
    """The way out of ``n_devices`` of ``target``'s kind as replicas of tensor parallel ``tp``."""
    return (
        f"--target {n_devices}x{target.target.id} --tp {tp} ({n_devices // tp} replicas of tensor parallel {tp}, each"
        " serving its share of the batch)"
    )


def _replicas_words(model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec) -> list[str]:
    """``[_replicas_way]`` of the fewest devices whose replicas hold the batch, or ``[]``."""
    spread = replicas_that_fit(model, target, deployment)
    return [] if spread is None else [_replicas_way(target, *spread)]


def _formats_it_runs(model: ModelSpec, deployment: DeploymentSpec, plan: MemoryPlan) -> list[str]:
    """The ways out of an engine that refuses ``deployment`` whatever its memory: for a KV format it lacks, an fp8 or
    bf16 cache (each checked by the command's judge, which keeps those that start and fit); else (or where it asked
    those) the refusal itself, which names its way out, as the ``none:`` line."""
    from mha_cli.core.engine.plan import deployment_kv_format_note

    formats = [dtype for dtype in ("fp8", "bf16") if dtype != deployment.kv_dtype]
    if deployment_kv_format_note(deployment, model) is None:  # not the format: a connector before vLLM 0.22
        formats = []
    ways = [f"--kv-dtype {dtype} (a KV format {plan.engine.name} runs)" for dtype in formats]
    return ways or [f"none: {plan.engine.refusal}"]


def _last_way(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan, total_params: int
) -> str:
    """``last_resort``, or under DP attention (whose ranks the other devices' layouts would not keep) why none is."""
    if deployment.dp is None and not one_machine(target):
        return last_resort(model, target, deployment, plan, total_params)
    if one_machine(target):
        what = (
            "the weights do not fit, in any smaller format,"
            if not plan.weights_fit
            else "not one sequence fits beside the weights"
        )
        return (
            f"none: {what} in this machine's {format_bytes(plan.usable_bytes)} usable (the cpu target is this one"
            " machine): plan a GPU target"
        )
    return f"none: nothing at --dp {deployment.dp} on {target.spec} fits; leave out --dp for the other layouts' ways"


def _plan_with(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, tp: int, **update: object
) -> MemoryPlan | None:
    """The memory plan with ``update`` set on the deployment at ``tp`` (None when tp does not shard the model)."""
    changed = deployment.model_copy(update={**update, "tp": tp})
    try:
        kv = footprint_for(model, changed, tp)
        return plan_memory(target, model=model, weight_dtype=changed.weight_dtype, kv=kv, deployment=changed)
    except MhaError:
        return None


def _smaller_tps(target: ResolvedTarget, plan: MemoryPlan) -> list[int]:
    """Tensor-parallel degrees below the plan's that divide the target's devices, largest first."""
    return [tp for tp in range(plan.tp - 1, 0, -1) if target.n_devices % tp == 0]


class RankedWay(NamedTuple):
    """A way out that changes the layout, and the DP-attention ranks it runs (None: separate replicas)."""

    text: str
    ranks: tuple[int, int, str] | None
    """(tp of a rank, ranks, cache format) when the data-parallel ranks share an MoE model's experts."""


def shared_ranks_words(plan: MemoryPlan, deployment: DeploymentSpec) -> str | None:
    """``4 DP-attention ranks of tp 2 sharing the experts in one server, run as vllm serve --tensor-parallel-size 2
    --data-parallel-size 4`` when ``plan``'s replicas share the experts (``MemoryPlan.dp_attention``), else None:
    not ``--tp 2`` alone, which a reader would run as one server of tp 2 holding every expert. The flags are the
    engine's own (vLLM: "expert layers form a tensor parallel group of size DP x TP",
    docs/serving/data_parallel_deployment.md; SGLang counts every rank in --tp-size, server_args.py
    ``enable_dp_attention``), in the form of the release priced, as the launch lines write them
    (``core.engine.launch_forms.fit_line``: SGLang's ``--dp-size 1 --attn-dp-size N`` from 0.5.22, ``--dp-size N
    --enable-dp-attention`` before)."""
    from mha_cli.core.cost.launch_settings import kv_cache_dtype_words, quantization_words
    from mha_cli.core.engine.flags import release_meant
    from mha_cli.core.engine.generations import BY_ID
    from mha_cli.core.engine.launch_forms import fit_line

    if not plan.dp_attention:
        return None
    ranks, tp, engine = plan.replicas, plan.tp, plan.engine.name
    if engine == "sglang":
        words = ["python", "-m", "sglang.launch_server", "--tp-size", str(tp * ranks), "--dp-size", "1",
                 "--attn-dp-size", str(ranks)]  # fmt: skip
    else:
        words = ["vllm", "serve", "--tensor-parallel-size", str(tp), "--data-parallel-size", str(ranks)]
    # the cache and on-the-fly weight formats the way depends on, as the launch lines write them (trial 326 #5)
    words += quantization_words(deployment)
    words += kv_cache_dtype_words(deployment, sglang=engine == "sglang")
    fitted = fit_line(engine, release_meant(BY_ID[plan.engine.generation], deployment.engine_version), words)
    run = f", run as {' '.join(fitted.words)}" if fitted.words is not None else f" ({fitted.note})"
    return f"{ranks} DP-attention ranks of tp {tp} sharing the experts in one server{run}"


def _smaller_split_that_fits(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan
) -> RankedWay | None:
    """``--tp T``: the largest smaller tp at which the batch fits, the other devices data-parallel replicas that
    each cache only their own sequences (where tp replicates the cache: MLA's latent, KV heads fewer than tp; an
    MoE model's replicas keep sharing the experts: DP-attention ranks of one server, ``shared_ranks_words``)."""
    for tp in _smaller_tps(target, plan):
        smaller = _plan_with(model, target, deployment, tp)
        if smaller is not None and smaller.fits:
            layout = shared_ranks_words(smaller, deployment) or f"{smaller.replicas} data-parallel replicas"
            return RankedWay(
                f"--tp {tp} ({layout}; each device caches only its"
                f" {'rank' if smaller.dp_attention else 'replica'}'s sequences;"
                f" {counted(smaller.max_sequences, 'sequence')} fit)",
                _ranks(smaller, deployment.kv_dtype),
            )
    return None


def _ranks(plan: MemoryPlan, kv_dtype: str) -> tuple[int, int, str] | None:
    """``RankedWay.ranks`` of ``plan`` with its cache in ``kv_dtype``."""
    return (plan.tp, plan.replicas, kv_dtype) if plan.dp_attention else None


def _dp_attention_that_fits(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan
) -> RankedWay | None:
    """``--tp T --dp N``: DP attention (``core.dp_attention``) over the fewest data-parallel ranks at which an MoE
    model's batch fits, where the engine runs it: each rank caches only its own requests, the experts whole over
    all devices; with ``--kv-dtype fp8`` when it takes that too (``mha kv`` takes ``--dp``; ``check`` and
    ``recommend`` leave this way out)."""
    runs = dp_attention_runs_on(deployment.engine, deployment.engine_generation, deployment.engine_version)
    if model.block.moe is None or not runs or deployment.dp is not None or deployment.separate_servers:
        return None  # separate servers were asked: not one server sharing the experts
    cache_changes: list[tuple[str, dict[str, object]]] = [("", {})]
    if storage_format(deployment.kv_dtype).bits > 8:
        cache_changes.append(("--kv-dtype fp8 ", {"kv_dtype": "fp8"}))
    for flag, update in cache_changes:
        for dp in range(2, target.n_devices + 1):
            if target.n_devices % dp:
                continue
            tp = target.n_devices // dp
            spread = _plan_with(model, target, deployment, tp, dp=dp, expert_parallel=True, **update)
            if spread is not None and spread.fits:
                together = "together: DP attention alone is not enough; " if flag else ""
                return RankedWay(
                    f"{flag}--tp {tp} --dp {dp} ({together}DP attention: {dp} ranks of tp {tp}, each caching only its"
                    f" own requests, the experts whole over all {target.n_devices} GPUs;"
                    f" {counted(spread.max_sequences, 'sequence')} fit)",
                    (tp, dp, str(update.get("kv_dtype", deployment.kv_dtype))),
                )
    return None


def _capacity_pair_that_fits(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan
) -> RankedWay | None:
    """Two changes of capacity together (an fp8 cache, fp8 weights where the device has fp8, a smaller tp) when
    none alone fits the batch: the first pair that does (a smaller tp of an MoE model named as the DP-attention
    ranks it runs, ``shared_ranks_words``)."""
    changes: list[tuple[str, dict[str, object]]] = []
    if storage_format(deployment.kv_dtype).bits > 8:
        changes.append(("--kv-dtype fp8", {"kv_dtype": "fp8"}))
    if "fp8" in smaller_weight_dtypes(target, deployment):
        changes.append(("--weight-dtype fp8", {"weight_dtype": "fp8"}))
    changes += [(f"--tp {tp}", {"tp": tp}) for tp in _smaller_tps(target, plan)]
    for (flag_a, a), (flag_b, b) in itertools.combinations(changes, 2):
        if "tp" in a and "tp" in b:
            continue
        update = {**a, **b}
        tp = int(update.pop("tp", plan.tp))  # type: ignore[call-overload]
        together = _plan_with(model, target, deployment, tp, **update)
        if together is not None and together.fits:
            layout = shared_ranks_words(together, deployment.model_copy(update=update))
            return RankedWay(
                f"{flag_a} {flag_b} (together: one alone is not enough;{f' {layout};' if layout else ''}"
                f" {counted(together.max_sequences, 'sequence')} fit)",
                _ranks(together, str(update.get("kv_dtype", deployment.kv_dtype))),
            )
    return None


ENGINE_KNOBS = (("gpu_memory_utilization", 0.95, "--gpu-memory-utilization"), ("max_num_seqs", 64, "--max-num-seqs"))
"""What a deployer turns first when the engine's own overheads are the problem: a larger share of the device (0.95,
what published vLLM deployments run), a smaller profiling run (its sampler's peak grows with max_num_seqs)."""


def capped_by_max_num_seqs(plan: MemoryPlan) -> bool:
    """The engine starts and its pool holds the replica's share of the batch, but its max_num_seqs admits fewer: the
    cap, not the cache, is what does not fit."""
    engine = plan.engine
    return (
        engine.starts and plan.weights_fit and engine.admitted_per_replica < plan.sequences_per_replica
        and engine.admitted_per_replica == engine.max_num_seqs and int(engine.max_concurrency) >= plan.sequences_per_replica
    )  # fmt: skip


def _seq_cap_that_fits(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan, kv: KvFootprint
) -> str | None:
    """``--max-num-seqs N`` (the replica's share of the batch) when the engine's cap alone keeps the batch from running
    at once (``capped_by_max_num_seqs``) and the plan at that cap fits (its profiling run grows with it)."""
    if not capped_by_max_num_seqs(plan):
        return None
    wanted = plan.sequences_per_replica
    if plan.engine.name == "vllm" and wanted > plan.engine.max_num_batched_tokens:  # vLLM refuses it (trial 311 #8:
        return None  # the probe's refusal was the command's, naming a --max-num-seqs never given)
    raised = deployment.model_copy(update={"max_num_seqs": wanted})
    tuned = plan_memory(target, model=model, weight_dtype=deployment.weight_dtype, kv=kv, deployment=raised)
    if not tuned.fits:
        return None
    return (
        f"--max-num-seqs {wanted} (the engine's cap of {plan.engine.max_num_seqs:,} sequences a replica, not its"
        f" cache: the pool holds {int(plan.engine.max_concurrency):,} of this length)"
    )


def _engine_knob_that_fits(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan, kv: KvFootprint
) -> str | None:
    """``--gpu-memory-utilization 0.95`` or ``--max-num-seqs 64`` when the engine's knob alone makes the plan fit;
    else ``--max-num-seqs 64 --seq N`` where the smaller profiling run leaves a pool and N tokens, the longest
    context it holds the batch at, is at least half the context asked (trial 390 #5: gpt-oss-120b on an H100 at 131,072 tokens, whose sampler's profiling
    peak of 1,024 rows x 201,088 logits left no pool, was offered only other devices or another checkpoint)."""
    if plan.engine.name != "vllm":
        return None
    current = {"gpu_memory_utilization": plan.utilisation, "max_num_seqs": plan.engine.max_num_seqs}
    shorter = None
    for field, value, flag in ENGINE_KNOBS:
        better = value > current[field] if field == "gpu_memory_utilization" else value < current[field]
        if not better or (field == "max_num_seqs" and deployment.batch > value):
            continue
        turned = deployment.model_copy(update={field: value})
        tuned = plan_memory(target, model=model, weight_dtype=deployment.weight_dtype, kv=kv, deployment=turned)
        if tuned.fits:
            return f"{flag} {value:g} ({counted(tuned.max_sequences, 'sequence')} fit)"
        if field == "max_num_seqs" and not plan.engine.available_kv_bytes and tuned.engine.available_kv_bytes:
            seq = _longest_context_that_fits(model, target, turned, tuned)  # half the context asked at least: less
            held = seq >= deployment.seq_len // 2  # is another workload (Llama-3.1-70B x 32 on 2 x H100: 416 of 128K)
            shorter = f"{flag} {value:g} --seq {seq} (the context the batch fits then)" if seq > 0 and held else None
    return shorter


def _state_slots_that_fit(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan, kv: KvFootprint
) -> str | None:
    """``--max-num-seqs N`` (the replica's share of the batch) where an engine's recurrent-state pool keeps it from
    starting and N slots of it fit: TensorRT-LLM keeps one per ``--max_batch_size``, SGLang with its radix cache off
    one per ``--max-running-requests`` (``core.engine.trtllm_state_pool``, ``core.engine.sglang_state_pool``); in an
    SGLang release that splits the memory instead, N changes nothing and no way is offered."""
    engine = plan.engine
    if not engine.state_pool_bytes or engine.starts:
        return None
    wanted = max(1, plan.sequences_per_replica)
    capped = deployment.model_copy(update={"max_num_seqs": wanted})
    tuned = plan_memory(target, model=model, weight_dtype=deployment.weight_dtype, kv=kv, deployment=capped)
    if not tuned.fits:
        return None
    slots = (
        "TensorRT-LLM gives its Mamba cache one slot per --max_batch_size"
        if engine.name == "trtllm"
        else "with its radix cache off, SGLang gives its Mamba cache one slot per running request allowed"
    )
    return f"--max-num-seqs {wanted} ({slots}: {format_bytes(engine.state_pool_bytes)} of state now)"


def _set_pool_that_fits(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan, kv: KvFootprint
) -> str | None:
    """``--kv-cache-gib X`` where the pool set outright does not fit beside the weights (the engine's out-of-memory
    refusal) and the largest that does, to 0.01 GiB, holds the batch; ``mha recommend --kv-cache-gib 1000`` said only
    that the batch's cache exceeds the target."""
    if deployment.kv_cache_memory_bytes is None or plan.engine.refusal is None:
        return None

    from mha_cli.core.ways import gib_as_bytes

    def plan_at(gib: float) -> MemoryPlan:
        pooled = deployment.model_copy(update={"kv_cache_memory_bytes": gib_as_bytes(gib)})
        return plan_memory(target, model=model, weight_dtype=deployment.weight_dtype, kv=kv, deployment=pooled)

    low, high = 0.0, deployment.kv_cache_memory_bytes / 2**30
    for _ in range(40):  # halvings: past 0.01 GiB
        middle = (low + high) / 2
        low, high = (middle, high) if plan_at(middle).engine.refusal is None else (low, middle)
    largest = int(low * 100) / 100
    tuned = plan_at(largest)
    if largest <= 0 or tuned.engine.refusal is not None or not tuned.fits:
        return None
    return f"--kv-cache-gib {largest:g} (the most beside the weights; {counted(tuned.max_sequences, 'sequence')} fit)"


def _lighter_weights_that_fit(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, kv: KvFootprint
) -> str | None:
    """``--weight-dtype X`` for the widest smaller weight format that leaves room for the batch's cache, if any:
    when the weights nearly fill the device (7B in bf16 on a 16 GB T4), quantising them is the cheapest fix. fp8 is
    offered only where the engine serves it on the device (``smaller_weight_dtypes``)."""
    for dtype in smaller_weight_dtypes(target, deployment):
        plan = _plan_in(model, target, deployment, kv, dtype)
        if plan is not None and plan.fits:
            return (
                f"--weight-dtype {dtype} (weights {format_bytes(plan.weight_bytes_per_device)} per device;"
                f" {counted(plan.max_sequences, 'sequence')} fit)"
            )
    return None


def _plan_in(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, kv: KvFootprint, dtype: str
) -> MemoryPlan | None:
    """The memory plan with every weight in format ``dtype``; None where the engine refuses that format at this tp
    (its groups straddle the ranks)."""
    try:
        return plan_memory(target, model=model, weight_dtype=dtype, kv=kv, deployment=deployment)
    except MhaError:
        return None


def _sequences_with(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, kv: KvFootprint, dtype: str
) -> str:
    """``; N sequences fit`` beside the pool in weight format ``dtype`` (trial 326 #5: the way out of weights that do
    not fit did not say whether the batch then does); empty where the engine refuses that format here."""
    lighter = _plan_in(model, target, deployment, kv, dtype)
    return "" if lighter is None else f"; {counted(lighter.max_sequences, 'sequence')} fit"


def last_resort(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan, total_params: int
) -> str:
    """When no single flag makes ``plan`` fit: the largest group that splits the heads, with a smaller weight format,
    batch or context where that is what it takes; else a sentence starting ``none:`` that says why nothing does."""
    dtypes = [deployment.weight_dtype, *smaller_weight_dtypes(target, deployment)]
    largest = 0
    for devices in reversed(group_sizes(model)):
        try:
            footprint_for(model, deployment, devices)
        except MhaError:
            continue
        largest = devices
        break
    if not largest:
        return f"none: no group of up to {MAX_DEVICES_TRIED:,} devices splits the {model.attention.n_heads} heads"
    group = resolve_target(f"{largest}x{target.target.id}")
    tp_flag = f" --tp {largest}" if plan.tp != plan.n_devices else ""
    big = None
    for dtype in dtypes:
        wider = deployment.model_copy(update={"weight_dtype": dtype, "tp": largest})
        try:
            big = plan_memory(
                group, model=model, weight_dtype=dtype, kv=footprint_for(model, wider, largest), deployment=wider
            )
        except MhaError:  # the engine refuses this format split over that many ranks (its groups straddle them)
            continue
        smallest = dtype  # the lightest format priced so far: what the sentence below names
        flags = f"--target {largest}x{target.target.id}{tp_flag}" + (
            f" --weight-dtype {dtype}" if dtype != deployment.weight_dtype else ""
        )
        if big.fits:
            return f"{flags} (tensor parallel over {largest} devices)"
        if not big.weights_fit:
            continue
        if big.max_sequences > 0:
            return f"{flags} --batch {big.max_sequences} (together: one flag alone is not enough)"
        seq = _longest_context_that_fits(model, group, wider, big)
        if seq > 0:
            return f"{flags} --seq {seq} (together: one flag alone is not enough)"
    if big is None:
        return f"none: the engine loads none of {', '.join(dtypes)} split over {largest} devices"
    # big is smallest's plan: the weights as the engine holds them (an MXFP4 kernel's padding too)
    why = (
        f"needs {format_bytes(big.weight_bytes_per_device)} of weights per device in {smallest}, more than the"
        f" {format_bytes(big.usable_bytes)} usable"
        if not big.weights_fit
        else "has no room beside the weights for one sequence, however short"
    )
    if big.deficit_bytes:  # nothing is usable: the engine's reserves alone exceed what it is given
        why = f"has no room for any weight: the engine's own reserves exceed its share by {format_bytes(big.deficit_bytes)}"
    return (
        f"none: even {largest} x {target.target.id} (the largest group that splits the {model.attention.n_heads} heads)"
        f" {why}; choose a larger device or a smaller model"
    )


def _longest_context_that_fits(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, plan: MemoryPlan
) -> int:
    """The longest seq_len at which the engine admits this batch (windows, paging and the engine's blocks priced
    as ``plan_memory`` prices them); 0 when not even one token does. A design that states no context (recommend's)
    is probed as its file would be written at each length: its RoPE table as long as the context
    (``Context.written``), which a 256M-token request's 64 GiB table showed."""

    def fits(seq_len: int) -> bool:
        longer = deployment.model_copy(update={"seq_len": seq_len, "tp": plan.tp})
        kv = footprint_for(model, longer, plan.tp)
        held = model if model.context_length is not None else model.model_copy(update={"context_length": seq_len})
        return plan_memory(target, model=held, weight_dtype=deployment.weight_dtype, kv=kv, deployment=longer).fits

    low, high = 0, deployment.seq_len  # fits(low) holds (no tokens), fits(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _plan_experts(plan: MemoryPlan, deployment: DeploymentSpec) -> ExpertLayout | None:
    """The routed experts' layout the plan priced (None without MoE)."""
    if plan.expert_ranks is None:
        return None
    dp_attention = deployment.dp is not None and plan.expert_ranks > plan.tp
    backend = a2a_backend_of(deployment.moe_a2a_backend, deployment.engine, deployment.engine_generation)
    return ExpertLayout(plan.expert_ranks, bool(deployment.expert_parallel) or dp_attention, dp_attention, backend)


def _table_sized_by(model: ModelSpec) -> str:
    """What sizes a design's RoPE table, for MHA025's words: its stated context, or (none stated) the context asked."""
    if model.context_length is None:
        return "a shorter --seq shrinks it"
    return f"sized by the model's context, {model.context_length:,} positions: a config.json's max_position_embeddings"


def flag_fit(
    trace: Trace,
    model: ModelSpec,
    target: ResolvedTarget,
    deployment: DeploymentSpec,
    plan: MemoryPlan,
    kv: KvFootprint,
    total_params: int,
    *,
    judge: Judge | None = None,
) -> list[str]:
    """MHA025 (the weights do not fit) or MHA026 (the batch's cache does not) on ``trace`` when ``plan`` does not
    fit ``target``; returns the ways out (``ways_out``). With ``judge`` (``mha check``'s: ``deployment_judge``) the
    message names those of them that pass it (``core.ways.settle``)."""
    if plan.fits or plan.engine.refused_outright:  # refused whatever the memory: not a rule of fit (kv_format_note)
        return [] if plan.fits else ways_out(model, target, deployment, plan, kv, total_params)
    ways = ways_out(model, target, deployment, plan, kv, total_params)
    how = ""
    if judge is not None:
        how = "; ways out: " + ", ".join(way.text for way in settle(ways, judge, FLAG_FIELDS))
    if not plan.weights_fit:
        reserves = ""
        if plan.deficit_bytes:
            reserves = (
                f" (the engine's own reserves exceed its share of the device by {format_bytes(plan.deficit_bytes)})"
            )
        trace.fire(
            "MHA025",
            f"weights need {format_bytes(plan.weight_bytes_per_device)} per device of {plan.target_name},"
            f" usable {format_bytes(plan.usable_bytes)}{rope_table_clause(plan, _table_sized_by(model))}{reserves}{how}",
            weight_bytes_per_device=plan.weight_bytes_per_device,
            usable_bytes=plan.usable_bytes,
            deficit_bytes=plan.deficit_bytes,
        )
        return ways
    verb = "fits" if plan.max_sequences == 1 else "fit"
    if capped_by_max_num_seqs(plan):
        what = (
            f"batch {deployment.batch} is more than the engine's max_num_seqs ({plan.engine.max_num_seqs:,} a"
            f" replica) runs at once; its cache fits ({format_bytes(plan.kv_bytes_per_device)} per device, the pool"
            f" holds {int(plan.engine.max_concurrency):,} of {deployment.seq_len:,} tokens a replica)"
        )
    else:
        what = (
            f"batch {deployment.batch} needs {format_bytes(plan.kv_bytes_per_device)} of cache per device;"
            f" {counted(plan.max_sequences, 'sequence')} of {deployment.seq_len:,} tokens {verb}"
        )
        if plan.engine.state_pool_bytes and not plan.engine.starts:  # the states' own pool is what overflows
            what += f" (the engine's recurrent-state pool takes {format_bytes(plan.engine.state_pool_bytes)} first)"
    trace.fire(
        "MHA026",
        f"{what}{how}",
        kv_bytes_per_device=plan.kv_bytes_per_device,
        max_sequences=plan.max_sequences,
    )
    return ways


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class Priced(NamedTuple):
    """One model priced under one deployment: parameters, KV cache and, with a target, the memory plan."""

    model: ModelSpec
    deployment: DeploymentSpec
    """The deployment with the priced tp filled in."""
    target: ResolvedTarget | None
    tp_asked: int
    """The deployment's tp, else the target's device count (``memory.resolve_tp``)."""
    params: ParamBreakdown
    kv: KvFootprint
    memory: MemoryPlan | None
    """None without a target, or when ``tp_asked`` does not split the heads (then the unsplit model is priced)."""

    @property
    def tp(self) -> int:
        """The tensor-parallel degree the figures are priced at."""
        assert self.deployment.tp is not None
        return self.deployment.tp

    @property
    def weight_bytes(self) -> int:
        """All weights in the deployment's weight dtype."""
        return deployment_model_bytes(self.model, self.deployment.weight_dtype, self.deployment)

    @property
    def ways(self) -> list[str]:
        """What would make the memory plan fit (``ways_out``, computed on each access); empty when it fits or there
        is none."""
        if self.memory is None or self.target is None:
            return []
        return ways_out(self.model, self.target, self.deployment, self.memory, self.kv, self.params.total)


def deployment_judge(
    model: ModelSpec, deployment: DeploymentSpec, fields: dict[str, tuple[str, type]] | None = None
) -> Judge:
    """A way out of ``mha kv`` or ``mha check`` as a user pasting it gets it: its flags (``fields``' names, default
    ``FLAG_FIELDS``) set on ``deployment`` and the memory plan priced again (``price_deployment``); passes when it
    fits, else returns the ways out from there."""

    def judge(words: list[str]) -> Verdict:
        changed = deployment.model_copy(update=flag_updates(words, fields))
        try:
            priced = price_deployment(model, changed)
        except MhaError as exc:
            return Verdict(False, f"refused: {exc.message}", None, [])
        plan = priced.memory
        if plan is None:
            return Verdict(False, "no target to price it on", None, [])
        layout = f"tp {plan.tp}" + (f" x {plan.replicas} replicas" if plan.replicas > 1 else "")
        if not plan.weights_fit:
            figure = f"weights {format_bytes(plan.weight_bytes_per_device)} per device exceed the device ({layout})"
        else:
            figure = (
                f"{counted(plan.max_sequences, 'sequence')} of {changed.seq_len:,} tokens at once for a batch of"
                f" {changed.batch} ({layout}); weights {format_bytes(plan.weight_bytes_per_device)} per device"
            )
        return Verdict(plan.fits, figure, plan.max_sequences, [] if plan.fits else priced.ways)

    return judge


def with_layout_ways(
    exc: MhaError, target: ResolvedTarget, tp: int, judge: Judge, pp: int = 1, *, without: str = "",
    first: tuple[str, ...] = (),
) -> BadInputError:  # fmt: skip
    """``exc`` naming the ways out of its layout that ``judge`` (the refusing command run again) accepts (``first``,
    then ``memory.layout_changes``), or saying that none of those tried is; ``without``: what every way leaves out,
    as the judge tried them (``" (leaving out --dp)"``)."""
    changes = list(dict.fromkeys([*first, *layout_changes(target, tp, pp)]))
    ways = settle(changes, judge, FLAG_FIELDS, keep=2, goal="is accepted")
    message = exc.message.rstrip(".")  # an engine's own sentence ends in a full stop
    if ways[0].fits:
        return BadInputError(f"{message}: use e.g. {' or '.join(way.change for way in ways)}{without}")
    if not ways[0].text.startswith("none: tried"):  # the generator's own word: why no layout is worth trying
        return BadInputError(f"{message}; {ways[0].text.removeprefix('none: ')}")
    tried = ways[0].figure.removeprefix("tried ").removesuffix(" alone")
    tried = tried.replace(" alone and each with the ways out from there", ", each with the ways out from there")
    return BadInputError(f"{message}; tried as a way out and refused too: {tried}{without}")


def with_replicas_hint(
    exc: MhaError, model: ModelSpec, deployment: DeploymentSpec, target: ResolvedTarget | None, stages: int = 1
) -> MhaError:
    """``exc``, naming the largest tp of a multi-device target that splits the model, its other devices replicas (a
    7B model on 8 GPUs is usually tp 1 or 4 with replicas, not tp 8), whether tp came from the device count or was
    typed (trial 406 #3: ``--tp 3`` on 6 x H100 named no tp, as docs/input-limits.md promises)."""
    if target is None or target.n_devices == 1:
        return exc
    refused = deployment.tp if deployment.tp is not None else target.n_devices
    for tp in range(min(target.n_devices, refused) - 1, 0, -1):  # less than refused: "split less" (review 408 #1)
        if target.n_devices % (tp * stages):  # review 409 #3: --tp 3 --pp 2 on 6 devices: --tp 1
            continue
        try:
            footprint_for(model, deployment, tp)
        except MhaError:
            continue
        return BadInputError(f"{exc.message}; or split less and keep replicas: --tp {tp}")
    return exc


def price_deployment(model: ModelSpec, deployment: DeploymentSpec, *, unsplit_fallback: bool = False) -> Priced:
    """Resolve the target and tp, count the parameters, price the KV cache and plan the memory.

    A tp that does not split the heads raises ``BadInputError``; with ``unsplit_fallback`` the model is priced
    at tp 1 instead, without a memory plan (``mha check`` reports the split as a finding).
    """
    target = resolve_target(deployment.target) if deployment.target else None
    if deployment.engine in (None, "vllm"):  # text only (--limit-mm-per-prompt 0): vLLM leaves the tower out
        model = as_vllm_loads(model, deployment.limit_mm_per_prompt, release_in_force(deployment))
    try:
        tp = resolve_tp(deployment.tp, target, deployment.dp)
    except LayoutError as exc:
        assert target is not None and deployment.tp is not None  # only a --tp the target's devices refuse
        pasted = accepted(lambda words: price_deployment(model, deployment.model_copy(update=flag_updates(words))))
        raise with_layout_ways(exc, target, deployment.tp, pasted) from None
    params = count_params(model)
    try:
        kv = footprint_for(model, deployment, tp)
    except MhaError as exc:
        if not unsplit_fallback:
            raise with_replicas_hint(exc, model, deployment, target) from None
        kv = footprint_for(model, deployment, 1)
        memory = None
    else:
        weight_dtype = deployment.weight_dtype
        memory = (
            plan_memory(target, model=model, weight_dtype=weight_dtype, kv=kv, deployment=deployment)
            if target
            else None
        )
    return Priced(
        model=model, deployment=deployment.model_copy(update={"tp": kv.tp}), target=target, tp_asked=tp,
        params=params, kv=kv, memory=memory,
    )  # fmt: skip
