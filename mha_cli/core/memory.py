"""The memory plan on a target: weights and KV cache per device against what the serving engine leaves for them.

Device memory is what torch reports (``Target.device_memory_bytes``: an H100 80GB is 79.19 GiB, not 80 GB).
The serving engine (``core.engine``, vLLM by default) decides how much of it the weights and the KV cache may
use: for vLLM, total x ``gpu_memory_utilization`` (0.90 by default) less the activation peak of its profiling
run and its non-torch memory. Under tensor parallelism each rank holds its shard (``core.tensor_parallel``:
heads, widths and the padded vocabulary split; norms whole on every rank). Devices beyond the tensor-parallel
group hold replicas (data parallel), each serving its share of the batch: a device caches ceil(batch / replicas)
sequences. The sequences that fit are the engine's maximum concurrency (its block and group rules), whole
requests only.
"""

from typing import Any

from pydantic import Field, NonNegativeInt

from mha_cli.core.dp_attention import (
    DEEPEP_VENDOR,
    a2a_backend_of,
    data_parallel_missing,
    dp_attention_experts,
    dp_attention_problem,
    dp_attention_runs_on,
    dp_tp,
)
from mha_cli.core.engine.encoder_profile import as_vllm_loads
from mha_cli.core.engine.fp8_marlin import marlin_scales
from mha_cli.core.engine.group_alignment import group_straddle_refusal
from mha_cli.core.engine.mla_latent_release import mla_before_latent_refusal
from mha_cli.core.engine.mxfp4_moe import Mxfp4Kernel, kernel_padding, vllm_expert_kernel
from mha_cli.core.engine.per_kind_pages import refuse_per_kind_pages
from mha_cli.core.engine.plan import DEFAULT_WEIGHTS_HOW, EnginePlan, plan_engine
from mha_cli.core.engine.quant_capability import refuse_weights_on_gpu
from mha_cli.core.engine.rocm_nvfp4 import refuse_rocm_nvfp4
from mha_cli.core.engine.rope_cache import ROPE_CACHE_LABEL
from mha_cli.core.engine.settings import release_in_force, release_key_priced, resolve_settings
from mha_cli.core.engine.sglang_ep import sglang_experts_uneven
from mha_cli.core.engine.sglang_reserve import SglangServing
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import KvFootprint, kv_footprint
from mha_cli.core.pipeline import StageLayout
from mha_cli.core.quantities import format_bytes
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.targets import ResolvedTarget
from mha_cli.core.tensor_parallel import ExpertLayout, local_experts, tp_shard_problem
from mha_cli.core.weight_bytes import (
    WeightSource,
    deployment_rank_bytes,
    stored_headers,
    stored_scheme,
    weights_source,
)


def engine_shares_experts(deployment: DeploymentSpec) -> bool:
    """Whether the deployment's engine, at the release priced, runs its data-parallel ranks of an MoE model as one
    server sharing the routed experts, each rank holding 1 / (tp x dp) of them (vLLM: "expert layers form a tensor
    parallel group of size DP x TP", docs/serving/data_parallel_deployment.md, from 0.8.3, its first
    ``--data-parallel-size``; SGLang with --enable-dp-attention): ``core.dp_attention.dp_attention_runs_on``.
    Elsewhere (TensorRT-LLM, vLLM before 0.8.3), or asked (``DeploymentSpec.separate_servers``), replicas are
    separate servers, each its own copy."""
    if deployment.separate_servers:
        return False
    return dp_attention_runs_on(deployment.engine, deployment.engine_generation, deployment.engine_version)


class MemoryPlan(Record):
    """Bytes per device: weights + KV cache against what the engine leaves for them."""

    target_id: str
    target_name: str
    alias_note: str | None
    n_devices: int
    tp: int
    replicas: int
    """Tensor-parallel groups the devices form (n_devices / tp)."""
    device_memory_bytes: int
    """One device as torch reports it (``torch.cuda.mem_get_info`` total)."""
    vendor_memory_gb: float
    """The same device as its datasheet states it, in its GB (``Target.memory_gb``)."""
    vendor_memory_bytes: int
    """That figure in bytes (``Target.memory_bytes``: its GB 2^30 B where torch shows them so, else 10^9 B)."""
    utilisation: float
    """The engine's share of device memory (vLLM gpu_memory_utilization, ...)."""
    usable_bytes: NonNegativeInt
    """What the engine leaves for weights and the KV cache: the weights + engine.available_kv_bytes (less
    engine.deficit_bytes, when the weights do not fit); never negative: 0 when the engine's reserves alone take all
    the device gives it or more (``deficit_bytes`` says how much more)."""
    deficit_bytes: NonNegativeInt
    """How much more the engine's reserves (activation peak, non-torch memory, what its utilisation keeps out) take
    than the device, before any weight: what is missing for ``usable_bytes`` to reach 0; 0 when nothing is
    (engine.deficit_bytes counts the weights too)."""
    weight_bytes_per_device: int
    weights_from: WeightSource = "config"
    """Where ``weight_bytes_per_device`` comes from: the weight inventory counted from the config, or the
    checkpoint's safetensors headers (``core.header_weights``), split by the inventory's per-rank share."""
    sequences_per_replica: int
    """ceil(batch / replicas): the sequences one tensor-parallel group serves."""
    kv_bytes_per_device: int
    """The cache one device holds: its rank's share of sequences_per_replica sequences (each layer its own tokens:
    what a decode step reads)."""
    allocated_kv_bytes_per_device: int
    """The same sequences as the engine allocates them (engine.kv_bytes_per_request each: whole blocks in every
    group of vLLM's hybrid allocator)."""
    headroom_bytes: int
    """The engine's budget for the KV cache (engine.available_kv_bytes, or minus engine.deficit_bytes) -
    allocated_kv_bytes_per_device: signed, negative by what the batch lacks to run at once."""
    weights_fit: bool
    """The weights fit the engine's share of the device, its activation peak and an engine's state pool aside (False: a
    smaller format or more devices; True with a negative budget: the engine's own overheads are the problem)."""
    fits: bool
    """The engine starts and admits every sequence of the replica at once (engine.fits)."""
    max_sequences: int
    """Sequences of seq_len tokens the engine runs at once, over all replicas (whole requests, at most max_num_seqs
    per replica; engine.admitted_per_replica x replicas), each with blocks of its own: requests sharing a prefix's
    blocks (``plan --shared-prefix``) run more at once, which the plan's ``running_per_replica`` counts (trial 399
    #5)."""
    max_tokens_per_device: int
    """Tokens (of every layer) the engine's KV pool on one device holds (engine.kv_tokens)."""
    expert_ranks: int | None = None
    """MoE: the ranks one layer's routed experts spread over (tp, or tp x replicas when the replicas share them)."""
    experts_per_device: str | None = None
    """MoE: what one device holds of each MoE layer's routed experts, in words."""
    expert_kernel: Mxfp4Kernel | None = Field(default=None, exclude=True, repr=False)
    """vLLM's MXFP4 MoE kernel holding the routed experts at its padded shapes (``core.engine.mxfp4_moe``): counted in
    ``weight_bytes_per_device`` and what a step reads (``core.cost.stepper.ServingCase``); None: the checkpoint's
    shapes. Not in the JSON."""
    engine: EnginePlan

    @property
    def dp_attention(self) -> bool:
        """The replicas share the experts: one server whose replicas are its DP-attention ranks (SGLang
        ``--attn-dp-size``, vLLM ``--data-parallel-size``), not separate servers."""
        return self.replicas > 1 and self.expert_ranks is not None and self.expert_ranks > self.tp


def rope_table_clause(plan: MemoryPlan, shrink: str) -> str:
    """`` beside its RoPE cos/sin table of X for the context's positions (shrink)`` where the engine's RoPE table
    (one row a position of the model's context: 64 GiB at 256M tokens) is larger than the weights it is blamed on;
    empty otherwise. ``shrink``: what shortens the table (recommend's --seq; a config's max_position_embeddings)."""
    rope = -sum(line.bytes for line in plan.engine.budget if line.label == ROPE_CACHE_LABEL)
    if rope <= plan.weight_bytes_per_device:
        return ""
    return f" beside its RoPE cos/sin table of {format_bytes(rope)} for the context's positions ({shrink})"


def weights_overflow_words(plan: MemoryPlan) -> str:
    """Why a design's weights do not fit, in words: the share the engine leaves them, and the RoPE table beside them
    where that table is what takes the device, so the words name the context, not the weights alone (``mha
    recommend --seq 2G`` blamed 1.7 GiB of weights)."""
    words = f"the weights exceed the {format_bytes(plan.usable_bytes)} a device the engine may use"
    return words + rope_table_clause(plan, "a shorter --seq shrinks it")


def expert_layout(model: ModelSpec, tp: int, replicas: int, deployment: DeploymentSpec | None) -> ExpertLayout | None:
    """How ``model``'s routed experts spread over the devices (None without MoE): over the tp ranks of each replica,
    or over all tp x replicas ranks when the engine's data-parallel ranks share them (``engine_shares_experts``);
    whole experts per rank with ``deployment.expert_parallel``; whole over all ranks with ``deployment.dp``, reached
    by the dispatch its ``moe_a2a_backend`` names (None: the engine's default)."""
    if model.block.moe is None:
        return None
    deployment = deployment or DeploymentSpec()
    if deployment.dp and replicas > 1:  # checked by the caller (core.dp_attention.dp_attention_problem)
        backend = a2a_backend_of(deployment.moe_a2a_backend, deployment.engine, deployment.engine_generation)
        return dp_attention_experts(tp, replicas, backend)
    whole = bool(deployment.expert_parallel)
    shared = replicas > 1 and engine_shares_experts(deployment)
    if shared and shared_experts_problem(model, tp, replicas, whole) is not None:
        shared = False  # the engine could not share them: separate servers, each replica its own copy
    return ExpertLayout(tp * replicas if shared else tp, whole=whole)


def shared_experts_problem(model: ModelSpec, tp: int, replicas: int, whole: bool) -> str | None:
    """Why ``replicas`` of tp ``tp`` cannot share ``model``'s routed experts (vLLM would refuse the
    ``--data-parallel-size``), or None when they can."""
    if model.block.moe is None or replicas == 1:
        return None
    return tp_shard_problem(model, tp, ExpertLayout(tp * replicas, whole=whole))


def describe_experts(model: ModelSpec, layout: ExpertLayout) -> str:
    """``16 of 128 experts whole (expert parallel over 8 ranks)`` or ``all 128 experts at 1/8 of their width``."""
    assert model.block.moe is not None
    total = model.block.moe.n_experts
    if layout.whole:
        reached = ""
        if layout.dp_attention:
            reached = ", reached by all-to-all" if layout.deepep else ", reached by all-gather and reduce-scatter"
        return (
            f"{local_experts(model, layout)} of {total} experts whole (expert parallel over {layout.ranks} ranks"
            f"{reached})"
        )
    if layout.ranks == 1:
        return f"all {total} experts whole"
    return f"all {total} experts at 1/{layout.ranks} of their width (tensor-sharded over {layout.ranks} ranks)"


class LayoutError(BadInputError):
    """A tensor-parallel degree (times the pipeline stages) that does not divide the target's devices. The caller
    that can run the command again names the ways out that pass (``layout_changes``, judged by ``core.ways``)."""


def resolve_tp(tp: int | None, target: ResolvedTarget | None, dp: int | None = None) -> int:
    """The tensor-parallel degree: given, or the target's device count (over ``dp`` DP attention ranks: its share);
    checked against it (``LayoutError``)."""
    n_devices = target.n_devices if target else 1
    if dp is not None:
        if target is None:
            raise BadInputError(f"--dp {dp} spreads the model over a target's GPUs: add --target (8xh200, ...)")
        return dp_tp(dp, tp, n_devices)
    if tp is None:
        return n_devices
    if target is not None and (tp > n_devices or n_devices % tp):
        raise LayoutError(f"tp ({tp}) must divide the {n_devices} device(s) of target {target.spec!r}")
    return tp


SMALLER_TPS_TRIED = 2
"""Smaller tensor-parallel degrees a refused layout's ways out try (the largest that divide the devices)."""


def layout_changes(target: ResolvedTarget, tp: int, pp: int = 1) -> list[str]:
    """What may make ``tp`` x ``pp`` fit ``target``, simplest first: on the same target the tps on either side of the
    one asked that divide its devices (the next power of two, as tp 4 for a tp 3 that does not split 32 heads, and the
    largest smaller divisor), then a target of that many devices, one of the next power of two, and the next smaller
    tp. Unchecked: a caller keeps those that pass (``core.ways.settle``)."""
    device = target.target.id
    larger = 1 << tp.bit_length()  # the next power of two above tp
    nearest: list[int] = []
    rest: list[int] = []
    if target.n_devices % pp == 0:
        per_stage = target.n_devices // pp
        smaller = [t for t in range(min(tp - 1, per_stage), 0, -1) if per_stage % t == 0][:SMALLER_TPS_TRIED]
        nearest, rest = ([larger] if per_stage % larger == 0 else []) + smaller[:1], smaller[1:]
    other_targets = [  # not the devices already given: the layout asked, or the --tp alone (``nearest``)
        words
        for count, words in ((tp * pp, f"--target {tp * pp}x{device}"),
                             (larger * pp, f"--target {larger * pp}x{device} --tp {larger}"))
        if count != target.n_devices
    ]  # fmt: skip
    return [f"--tp {t}" for t in nearest] + other_targets + [f"--tp {t}" for t in rest]


def tp_spans_nodes_note(tp: int, target: ResolvedTarget) -> str | None:
    """The warning that ``tp`` ranks cross ``target``'s nodes (memory alone is priced where it is printed: ``mha
    plan`` prices the all-reduces on the network), or None when they fit in one node."""
    if tp <= target.devices_per_node:
        return None
    return (
        f"tp {tp} spans nodes of {target.devices_per_node}: the memory per device stands, but every all-reduce"
        " crosses the network, which a latency here does not price (it assumes one NVLink domain); `mha plan`"
        " prices it. tp within a node and pipeline stages across nodes is the usual layout"
    )


def plan_memory(
    target: ResolvedTarget,
    *,
    model: ModelSpec,
    kv: KvFootprint,
    weight_dtype: str,
    deployment: DeploymentSpec | None = None,
    experts: ExpertLayout | None = None,
    weights_bytes_per_rank: int | None = None,
    stage: StageLayout | None = None,
) -> MemoryPlan:
    """Fit ``model``'s weights (one device's share, in ``weight_dtype``) and ``kv`` onto ``target``'s devices under
    the engine ``deployment`` names (vLLM with its defaults when None); an MoE model's routed experts in ``experts``'
    layout (default: ``expert_layout`` over the target's replicas). ``weights_bytes_per_rank``: the rank's weights
    when the caller has them (``deployment_rank_bytes`` of the same model, tp, format, deployment and experts: a
    layout planned at many loads), else counted here; at the checkpoint's shapes either way: vLLM's MXFP4 MoE kernel's
    padding is added here alone (``MemoryPlan.expert_kernel``), and ``MemoryPlan.weight_bytes_per_device`` is the
    padded figure every caller reads. ``stage``: the pipeline stage ``model`` is (its layers), where the engine sizes
    buffers by it."""
    device = target.target
    if deployment is not None and deployment.engine in (None, "vllm"):  # text only: vLLM leaves the tower out
        model = as_vllm_loads(model, deployment.limit_mm_per_prompt, release_in_force(deployment))
    replicas = target.n_devices // kv.tp
    sequences = -(-kv.batch // replicas)
    copies_note = None
    if experts is None and deployment is not None and deployment.dp:  # asked for: refused, never priced as copies
        problem = dp_attention_problem(
            model,
            deployment.engine,
            kv.tp,
            deployment.dp,
            replicas,
            deployment.engine_generation,
            deployment.engine_version,
        )
        if problem is not None:
            raise BadInputError(problem)
    if experts is None:
        experts = expert_layout(model, kv.tp, replicas, deployment)
        whole = bool((deployment or DeploymentSpec()).expert_parallel)
        chosen = deployment or DeploymentSpec()
        engine_shares = engine_shares_experts(chosen)
        problem = shared_experts_problem(model, kv.tp, replicas, whole) if engine_shares else None
        if model.block.moe is not None and replicas > 1 and chosen.separate_servers:
            copies_note = (
                f"{replicas} replicas asked as separate servers (separate_servers), each with its own copy of the"
                " experts"
            )
        elif model.block.moe is not None and replicas > 1 and not engine_shares and chosen.engine != "trtllm":
            copies_note = (
                f"{data_parallel_missing(chosen.engine, chosen.engine_generation, chosen.engine_version)}: its"
                f" {replicas} replicas are priced as separate servers, each with its own copy of the experts"
            )
        if problem is not None:
            copies_note = (
                f"the {kv.tp * replicas} ranks of {replicas} replicas cannot share the experts ({problem}): priced"
                f" as {replicas} separate servers, each with its own copy (one --data-parallel-size {replicas} would"
                " not start)"
            )
    if experts is not None and experts != ExpertLayout(kv.tp):  # the default layout keeps its even-split fallback
        problem = tp_shard_problem(model, kv.tp, experts)
        if problem is not None:
            raise BadInputError(problem)
    # the rank's shard in its format (tensor by tensor as the checkpoint stores it, when it says), scales included
    weights = weights_bytes_per_rank
    if weights is None:
        weights = deployment_rank_bytes(model, kv.tp, weight_dtype, deployment, experts=experts)
    headers = stored_headers(deployment, weight_dtype)
    weights_how = None
    if headers is not None:
        files = f"{headers.files} checkpoint header{'s' if headers.files != 1 else ''}"
        weights_how = f"{files}: this rank's share of {format_bytes(headers.total_bytes)} (vocab padded to 64)"
    # SGLang runs DP attention wherever its replicas share the experts (the launch line's --enable-dp-attention)
    dp_ranks = experts.ranks // kv.tp if experts is not None and experts.ranks > kv.tp else 1
    chosen = deployment or DeploymentSpec()
    serving = SglangServing(
        model, pp=1 if stage is None else stage.pp, experts=experts, speculative=chosen.speculative,
        host_kv_cache=bool(chosen.kv_offload_bytes),
    )  # fmt: skip
    settings = resolve_settings(chosen, device, kv.tp, dp_attention_ranks=dp_ranks, serving=serving)
    refuse_per_kind_pages(model, settings.generation)
    last = settings.release  # the generation's last (major, minor) where no release is typed; None: the latest
    release = settings.engine_version or (None if last is None else f"{last[0]}.{last[1]}")
    refuse_rocm_nvfp4(model, deployment, weight_dtype, engine=settings.engine, vendor=device.vendor, release=release)
    unlatent = mla_before_latent_refusal(settings.engine_version, model) if settings.engine == "vllm" else None
    if unlatent is not None:
        raise BadInputError(unlatent)
    scheme = stored_scheme(deployment, weight_dtype)  # a format vLLM refuses on this GPU: core.engine.quant_capability
    release_priced = release_key_priced(chosen)  # the one typed, else the generation's last: the rules' release
    refuse_weights_on_gpu(settings.engine, weight_dtype, scheme, device.vendor, device.compute_capability,
                          release_priced)  # fmt: skip
    straddles = group_straddle_refusal(  # a quantisation group cut by the split: core.engine.group_alignment
        model, weight_dtype, scheme, kv.tp, settings.engine, release_priced, experts
    )
    if straddles is not None:
        raise BadInputError(straddles)
    if experts is not None and experts.deepep and device.vendor != DEEPEP_VENDOR and settings.engine == "vllm":
        raise BadInputError(  # trial 268 #5; SGLang's DeepEP dispatcher has ROCm (AITER) paths: not refused there
            f"vLLM runs DeepEP on NVIDIA GPUs alone (NVSHMEM; ROCm has its own MoRI backends, not priced); {device.name}"
            f" is {device.vendor}'s: leave out --moe-a2a-backend for the default all-gather dispatch, or --engine sglang"
        )
    if experts is not None and experts.deepep and settings.engine == "vllm" and release_priced is not None:
        from mha_cli.core.engine.flags import format_release, has

        deepep = ("VLLM_ALL2ALL_BACKEND deepep_low_latency", "--all2all-backend deepep_low_latency")
        if not any(has("vllm", release_priced, word) for word in deepep):  # review 384 #6, 386 #1
            raise BadInputError(
                f"vLLM {format_release(release_priced)} has no DeepEP backend (VLLM_ALL2ALL_BACKEND's deepep values"
                " are from 0.9.1, --all2all-backend from 0.11.1): use --engine vllm@0.9.1 or later, or leave out"
                " --moe-a2a-backend for the default all-gather dispatch"
            )
    if settings.engine == "sglang" and experts is not None and experts.whole:  # SGLang asserts they divide
        uneven = sglang_experts_uneven(model, experts.ranks, release_priced)
        if uneven is not None:
            raise BadInputError(uneven)
    kernel = vllm_expert_kernel(
        model,
        weight_dtype,
        settings.engine,
        settings.release,
        device.vendor,
        device.compute_capability,
        forced=chosen.vllm_mxfp4_kernel,
        typed=settings.engine_version,
    )
    padding, padded = kernel_padding(model, kernel, experts or ExpertLayout(kv.tp))
    if padded is not None:  # the kernel's shapes, not the checkpoint's (core.engine.mxfp4_moe)
        weights += padding
        weights_how = f"{weights_how or DEFAULT_WEIGHTS_HOW}; {padded}"
    scales, widened = marlin_scales(
        model, kv.tp, weight_dtype, settings.engine, settings.release, device.vendor, device.compute_capability,
        chosen.vllm_fp8_linear_kernel, experts or ExpertLayout(kv.tp),
    )  # fmt: skip
    if widened is not None:  # the kernel's scales, not the checkpoint's (core.engine.fp8_marlin)
        weights += scales
        weights_how = f"{weights_how or DEFAULT_WEIGHTS_HOW}; {widened}"
    engine_kv = kv
    if kv.mla_cache == "naive":  # every engine caches MLA's latent; naive is a torch build, priced apart
        engine_kv = kv_footprint(
            model, seq_len=kv.seq_len, batch=kv.batch, kv_dtype=kv.kv_dtype, tp=kv.tp, block_size=kv.block_size
        )
    speculative = None if deployment is None else deployment.speculative
    engine = plan_engine(
        model, engine_kv, device, settings, weights_bytes_per_rank=weights, sequences_per_replica=sequences,
        weights_how=weights_how, speculative_tokens=0 if speculative is None else speculative.num_speculative_tokens,
        speculative_method=None if speculative is None else speculative.method, stage=stage,
    )  # fmt: skip
    if engine_kv is not kv:
        engine.notes.append("the engines cache MLA's absorbed latent: --mla-cache naive prices only the torch build")
    if copies_note is not None:
        engine.notes.append(copies_note)
    if target.node_note is not None:
        engine.notes.append(target.node_note)
    spans = tp_spans_nodes_note(kv.tp, target)
    if spans is not None:
        engine.notes.append(spans)
    free_for_kv = engine.available_kv_bytes - engine.deficit_bytes  # signed: the budget's sum
    return MemoryPlan(
        target_id=device.id, target_name=device.name, alias_note=target.alias_note, n_devices=target.n_devices,
        tp=kv.tp, replicas=replicas, device_memory_bytes=device.device_memory_bytes,
        vendor_memory_gb=device.memory_gb, vendor_memory_bytes=device.memory_bytes,
        utilisation=settings.utilisation, usable_bytes=max(0, free_for_kv + weights),
        deficit_bytes=max(0, -(free_for_kv + weights)),
        weight_bytes_per_device=weights, weights_from=weights_source(deployment, weight_dtype),
        weights_fit=free_for_kv + engine.activation_peak_bytes + engine.state_pool_bytes >= 0,
        max_sequences=engine.admitted_per_replica * replicas, max_tokens_per_device=engine.kv_tokens,
        expert_ranks=None if experts is None else experts.ranks,
        experts_per_device=None if experts is None else describe_experts(model, experts), expert_kernel=kernel,
        engine=engine,
        **_load_fields(engine, kv, sequences),
    )  # fmt: skip


def _load_fields(engine: EnginePlan, kv: KvFootprint, sequences: int) -> dict[str, Any]:
    """A memory plan's fields that its load sets (``sequences`` per replica, each of ``kv``): the rest do not see it."""
    allocated = sequences * engine.kv_bytes_per_request
    if engine.running_kv_bytes is not None and sequences:  # the others decoding, the last one admitted
        held, ask = engine.running_kv_bytes
        allocated = (sequences - 1) * held + ask
    return {
        "sequences_per_replica": sequences, "kv_bytes_per_device": sequences * kv.bytes_per_sequence_per_rank,
        "allocated_kv_bytes_per_device": allocated,
        "headroom_bytes": engine.available_kv_bytes - engine.deficit_bytes - allocated, "fits": engine.fits,
    }  # fmt: skip


def at_load(plan: MemoryPlan, kv: KvFootprint) -> MemoryPlan:
    """``plan_memory``'s plan for ``kv`` (the same model, layout, formats and engine as ``plan``'s, another batch) from
    ``plan``: the engine's plan does not depend on the batch but for the sequences it is asked to hold (a layout
    planned at many loads plans its memory once). Its notes are a copy: a caller may add to them."""
    replicas = plan.n_devices // kv.tp
    sequences = -(-kv.batch // replicas)
    engine = plan.engine.at_load(sequences)
    return plan.model_copy(update={"engine": engine, **_load_fields(engine, kv, sequences)})
