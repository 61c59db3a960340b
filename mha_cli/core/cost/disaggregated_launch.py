"""Launch lines of a disaggregated split: every prefill and decode worker and the front that pairs them.

vLLM (docs/features/nixl_connector_usage.md, https://docs.vllm.ai/en/stable/features/nixl_connector_usage.html):
each worker a ``vllm serve`` with ``--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'``,
its GPUs in ``CUDA_VISIBLE_DEVICES``, its own ``VLLM_NIXL_SIDE_CHANNEL_PORT`` and the variables the aggregated lines
set (``core.cost.launch_settings.pool_words``' ``vllm_variables``, e.g. ``VLLM_MXFP4_USE_MARLIN=1``); the proxy
``tests/v1/kv_connector/nixl_integration/toy_proxy_server.py`` (in vLLM's source tree) with ``--prefiller-hosts``,
``--prefiller-ports``, ``--decoder-hosts``, ``--decoder-ports``.

SGLang (docs/advanced_features/pd_disaggregation.md, https://docs.sglang.io/advanced_features/pd_disaggregation.html):
each worker a ``sglang.launch_server`` with ``--disaggregation-mode prefill|decode`` and
``--disaggregation-transfer-backend nixl``, placed by ``--base-gpu-id``, each prefill worker its own
``--disaggregation-bootstrap-port``; the router ``python -m sglang_router.launch_router --pd-disaggregation
--prefill URL BOOTSTRAP_PORT ... --decode URL ...``.

Workers of DP attention with expert parallelism (``core.cost.disaggregated_layouts``): vLLM ``--data-parallel-size
N --enable-expert-parallel --all2all-backend deepep_high_throughput`` (prefill) or ``deepep_low_latency`` (decode),
https://docs.vllm.ai/en/stable/serving/expert_parallel_deployment.html; SGLang ``--tp-size N --attn-dp-size N
(before 0.5.22: --dp-size N --enable-dp-attention) --ep-size N --moe-a2a-backend deepep --deepep-mode normal`` (prefill) or ``low_latency``
(decode), as the LMSYS large-scale EP deployment runs them (https://lmsys.org/blog/2025-05-05-large-scale-ep/).

Workers sit on consecutive GPUs, prefill workers first: one that fits a node never straddles two, a larger one takes
whole nodes and has one line per node (``core.cost.launch_nodes``' multi-node flags: vLLM ``--nnodes --node-rank
--master-addr`` for tp, ``--data-parallel-size-local --data-parallel-address --data-parallel-start-rank
--headless`` for data parallelism; SGLang ``--nnodes --node-rank --dist-init-addr``), its node 0 the head. On
several nodes each line names its node's address as ``NODEk_IP`` (to replace). Pure Python.
"""

from __future__ import annotations

import shlex

from mha_cli.core.cost.disaggregated import DisaggregatedPlan, Split, plan_disaggregated
from mha_cli.core.cost.disaggregated_layouts import WorkerLayout, placements
from mha_cli.core.cost.launch_nodes import (
    HEAD_IP,
    MP_GENERATIONS,
    NODE_RANK,
    START_RANK,
    node_shape,
    sglang_lines,
    vllm_lines,
)
from mha_cli.core.cost.launch_settings import (
    NIXL_CONFIG,
    format_notes,
    kv_cache_dtype_words,
    notes_for,
    pool_words,
    quantization_words,
)
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.dp_attention import sglang_deepep_flags
from mha_cli.core.engine.settings import TPU_VENDOR
from mha_cli.core.engine.sglang_ep import redundant_experts
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.served_model import ServedModel
from mha_cli.core.targets import ResolvedTarget

VLLM_PREFILL_PORT, VLLM_DECODE_PORT, VLLM_PROXY_PORT = 8100, 8200, 8192
NIXL_SIDE_CHANNEL_PORT = 5600
"""vLLM's default ``VLLM_NIXL_SIDE_CHANNEL_PORT``; each worker takes it plus its first GPU's index (unique per host)."""
VLLM_PROXY = "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py"
SGLANG_PREFILL_PORT, SGLANG_DECODE_PORT, SGLANG_ROUTER_PORT = 30000, 30100, 8000
SGLANG_BOOTSTRAP_PORT = 8998
"""SGLang's default ``--disaggregation-bootstrap-port``; each prefill worker takes it plus its index."""


def _gpus(first: int, tp: int) -> str:
    return ",".join(str(gpu) for gpu in range(first, first + tp))


def _host(node: int, nodes: int, local: str) -> str:
    """``local`` on a one-node deployment, else a placeholder for node ``node``'s address."""
    return local if nodes == 1 else f"NODE{node}_IP"


def _parallel_flags(
    layout: WorkerLayout, role: str, *, sglang: bool, release: tuple[int, ...] | None = None, deepep: bool = True,
    redundant: int = 0,
) -> list[str]:  # fmt: skip
    """A worker's parallelism flags: tp alone, or DP attention with the experts spread by DeepEP (prefill: its
    throughput kernels; decode: its low-latency ones; ``deepep`` False, off NVIDIA: the engines' default dispatch),
    in the words of SGLang's ``release`` (a ``release_key``; None: latest)."""
    if layout.dp == 1:
        return ["--tp-size" if sglang else "--tensor-parallel-size", str(layout.tp)]
    if sglang:  # SGLang counts every GPU in --tp-size, the attention ranks in --attn-dp-size (launch_forms: older)
        gpus = str(layout.gpus)
        mode = "normal" if role == "prefill" else "low_latency"
        dispatch = [*sglang_deepep_flags(release), "--deepep-mode", mode] if deepep else []
        copies = ["--ep-num-redundant-experts", str(redundant)] if redundant else []  # core.engine.sglang_ep
        return ["--tp-size", gpus, "--dp-size", "1", "--attn-dp-size", str(layout.dp), "--ep-size", gpus, *dispatch,
                *copies]  # fmt: skip
    backend = "deepep_high_throughput" if role == "prefill" else "deepep_low_latency"
    return ["--tensor-parallel-size", str(layout.tp), "--data-parallel-size", str(layout.dp),
            "--enable-expert-parallel", *(["--all2all-backend", backend] if deepep else [])]  # fmt: skip


def _per_node(
    words: list[str], layout: WorkerLayout, node: int, devices_per_node: int, *, sglang: bool
) -> list[list[str]]:
    """``words`` (a worker's line) as one line per node of a worker spanning nodes from ``node`` on
    (``core.cost.launch_nodes``' multi-node lines, their placeholders filled: the head is the worker's first node);
    the one line of a worker inside a node."""
    span = -(-layout.gpus // devices_per_node)
    if span == 1:
        return [words]
    expert_ranks = layout.gpus if layout.dp > 1 else None
    shape = node_shape(span, devices_per_node, layout.tp, 1, layout.dp, expert_ranks)
    lines = sglang_lines(words, shape) if sglang else vllm_lines(words, shape, MP_GENERATIONS[0])
    assert lines.head, lines.note  # a worker's layout is one the multi-node lines write (tp, or DP of tp 1)
    found = []
    for rank in range(span):
        line = lines.head if rank == 0 or lines.others is None else lines.others
        filled = {HEAD_IP: f"NODE{node}_IP", NODE_RANK: str(rank), START_RANK: str(rank * shape.replicas_per_node)}
        found.append([filled.get(word, word).replace(f"{HEAD_IP}:", f"NODE{node}_IP:") for word in line])
    return found


def _format_flags(deployment: DeploymentSpec, served: ServedModel, *, sglang: bool) -> list[str]:
    """What every worker was priced with and its line must ask for: prefix caching and vLLM's async scheduling where
    set, the weight and cache formats, the pool and block size, the revision."""
    flags = []
    if deployment.prefix_caching is not None:  # asked outright: the workers were priced with it
        if sglang:
            flags += [] if deployment.prefix_caching else ["--disable-radix-cache"]
        else:
            flags += ["--enable-prefix-caching" if deployment.prefix_caching else "--no-enable-prefix-caching"]
    if deployment.async_scheduling is not None and not sglang:  # as set (DeploymentSpec.async_scheduling): vLLM's
        flags += ["--async-scheduling" if deployment.async_scheduling else "--no-async-scheduling"]
    flags += quantization_words(deployment)
    flags += kv_cache_dtype_words(deployment, sglang=sglang)
    pool = pool_words(deployment, cpu=False, trtllm=False)  # the pool and block size priced (core.cost.launch_settings)
    flags += pool.sglang if sglang else pool.vllm
    if served.revision is not None:
        flags += ["--revision", served.revision]
    if served.remote_code is not None:  # the checkpoint's own tokenizer or config class (core.remote_code)
        flags.append("--trust-remote-code")
    return flags


def disaggregated_launch(
    plan: DisaggregatedPlan, split: Split, served: ServedModel, deployment: DeploymentSpec, *,
    spec: ModelSpec | None = None,
) -> dict[str, str]:  # fmt: skip
    """The ``vllm`` and ``sglang`` lines of ``split`` (one command a line): each worker's memory fraction as its pool
    was priced (SGLang's default is lower under DP attention: trial 318 #5 found the plan's one fraction on every
    line), on the priced engine's line only (vLLM's ``--gpu-memory-utilization``, SGLang's
    ``--mem-fraction-static``; TensorRT-LLM's free fraction is neither's, as ``search.launch_commands`` writes them),
    no running cap below what a decode worker's pool admits (the goodput batch, once written as one, starved the load
    it was priced at and sized another pool than the one priced: trial 289 #1, review 290 #1); ``spec``: the model,
    whose experts an SGLang DP worker's --ep-size may need redundant copies of to divide (``core.engine.sglang_ep``)."""
    context = str(
        max(plan.isl + plan.osl, deployment.max_model_len or 0)
    )  # the engines' context: a longer --max-model-len
    model = served.model
    from mha_cli.core.dp_attention import a2a_backend_on
    from mha_cli.core.engine.flags import release_meant
    from mha_cli.core.engine.settings import deployment_generation

    meant = release_meant(deployment_generation(deployment), deployment.engine_version)
    sglang_release = meant if deployment.engine == "sglang" else None
    from mha_cli.core.targets import resolve_target

    deepep = a2a_backend_on(resolve_target(plan.target).target.vendor) == "deepep"  # as the workers were priced
    # each worker's step budget as priced (the engine's for the GPU, or --max-num-batched-tokens): one DP rank's
    # (SGLang's --chunked-prefill-size is all its DP-attention ranks': each takes it // --dp-size)
    budget = {(worker.tp, worker.dp): str(worker.chunk_tokens) for worker in plan.prefill}
    fraction = {(w.tp, w.dp): f"{w.gpu_memory_utilization:g}" for w in (*plan.prefill, *plan.decode)}
    roles = [("prefill", i, split.prefill) for i in range(split.prefill_workers)]
    roles += [("decode", i, split.decode) for i in range(split.decode_workers)]
    # NAME=value words before each vLLM command (the MXFP4 MoE kernel forced), as the aggregated lines carry them
    vllm_variables = pool_words(deployment, cpu=False, trtllm=False).vllm_variables
    vllm, sglang = [], []
    prefill_urls, decode_urls, prefill_ports, decode_ports, prefill_hosts, decode_hosts = [], [], [], [], [], []
    per_node = plan.devices_per_host or plan.devices_per_node  # an NVL72 rack: placed tray by tray (4 GPUs a host)
    placed = placements([layout.gpus for _, _, layout in roles], per_node)
    nodes = max(node + -(-layout.gpus // per_node) for (node, _), (_, _, layout) in zip(placed, roles, strict=True))
    for (role, index, layout), (node, first) in zip(roles, placed, strict=True):
        is_prefill = role == "prefill"
        on_node = min(layout.gpus, per_node)  # the worker's GPUs on each of its nodes
        (prefill_hosts if is_prefill else decode_hosts).append(_host(node, nodes, "localhost"))
        port = (VLLM_PREFILL_PORT if is_prefill else VLLM_DECODE_PORT) + index
        (prefill_ports if is_prefill else decode_ports).append(str(port))
        step = budget[layout.tp, layout.dp]
        # the fraction priced goes on the priced engine's line only: another engine's fraction sizes another pool
        vllm_fraction = ["--gpu-memory-utilization", fraction[layout.tp, layout.dp]] if plan.engine == "vllm" else []
        sglang_fraction = ["--mem-fraction-static", fraction[layout.tp, layout.dp]] if plan.engine == "sglang" else []
        # a --max-num-seqs given is priced (each worker's pool) and written on every line: vLLM's is each DP rank's
        running = [] if deployment.max_num_seqs is None else ["--max-num-seqs", str(deployment.max_num_seqs)]
        words = ["vllm", "serve", model, "--port", str(port), *_parallel_flags(layout, role, sglang=False, deepep=deepep),
                 "--max-model-len", context, *vllm_fraction, *running,
                 "--max-num-batched-tokens", step, *_format_flags(deployment, served, sglang=False),
                 "--kv-transfer-config", NIXL_CONFIG]  # fmt: skip
        for rank, line in enumerate(_per_node(words, layout, node, per_node, sglang=False)):
            side_host = [] if nodes == 1 else [f"VLLM_NIXL_SIDE_CHANNEL_HOST={_host(node + rank, nodes, '')}"]
            env = [f"CUDA_VISIBLE_DEVICES={_gpus(first, on_node)}", *side_host,
                   f"VLLM_NIXL_SIDE_CHANNEL_PORT={NIXL_SIDE_CHANNEL_PORT + first}", *vllm_variables]  # fmt: skip
            vllm.append(shlex.join([*env, *line]))
        sglang_port = (SGLANG_PREFILL_PORT if is_prefill else SGLANG_DECODE_PORT) + index
        mode = ["--disaggregation-mode", role, "--disaggregation-transfer-backend", "nixl"]
        if deployment.max_num_seqs is not None:  # SGLang's --max-running-requests counts all its DP ranks'
            mode += ["--max-running-requests", str(deployment.max_num_seqs * layout.dp)]
        if is_prefill:
            bootstrap = str(SGLANG_BOOTSTRAP_PORT + index)
            mode += ["--disaggregation-bootstrap-port", bootstrap]
            prefill_urls += ["--prefill", f"http://{_host(node, nodes, '127.0.0.1')}:{sglang_port}", bootstrap]
        else:
            decode_urls += ["--decode", f"http://{_host(node, nodes, '127.0.0.1')}:{sglang_port}"]
        words = ["python", "-m", "sglang.launch_server", "--model-path", model, *mode,
                 *_parallel_flags(layout, role, sglang=True, release=sglang_release, deepep=deepep,
                                  redundant=0 if spec is None else redundant_experts(spec, layout.gpus)), "--base-gpu-id", str(first), "--port", str(sglang_port),
                 "--context-length", context, "--chunked-prefill-size", str(int(step) * layout.dp),
                 *sglang_fraction,
                 *_format_flags(deployment, served, sglang=True)]  # fmt: skip
        for rank, line in enumerate(_per_node(words, layout, node, per_node, sglang=True)):
            host = [] if nodes == 1 else ["--host", _host(node + rank, nodes, "")]
            sglang.append(shlex.join([*line[:5], *host, *line[5:]]))
    vllm.append(shlex.join([
        "python", VLLM_PROXY, "--port", str(VLLM_PROXY_PORT), "--prefiller-hosts",
        *prefill_hosts, "--prefiller-ports", *prefill_ports, "--decoder-hosts", *decode_hosts, "--decoder-ports",
        *decode_ports,
    ]))  # fmt: skip
    sglang.append(shlex.join([
        "python", "-m", "sglang_router.launch_router", "--pd-disaggregation", *prefill_urls, *decode_urls,
        "--host", "0.0.0.0", "--port", str(SGLANG_ROUTER_PORT),
    ]))  # fmt: skip
    return {"vllm": "\n".join(vllm), "sglang": "\n".join(sglang)}


def _sglang_workers_stop(
    plan: DisaggregatedPlan, split: Split, model: ModelSpec | None, deployment: DeploymentSpec
) -> str | None:
    """Why SGLang would not start the sglang lines of ``split`` written beside another engine's plan: a worker
    priced as its line runs it (``core.cost.companion_lines``: its ``--chunked-prefill-size``, the step priced x its
    DP-attention ranks; the decode workers reserve for it too, 0.5.9 ``_handle_gpu_memory_settings`` not looking at
    the mode) that SGLang would not start; None where every worker starts, or the model is not at hand."""
    from mha_cli.core.cost.companion_lines import sglang_line_stops
    from mha_cli.core.targets import resolve_target

    if model is None:
        return None
    device = resolve_target(plan.target).target.id
    context = max(plan.isl + plan.osl, deployment.max_model_len or 0)
    budget = {(worker.tp, worker.dp): worker.chunk_tokens for worker in plan.prefill}
    for role, layout in (("prefill", split.prefill), ("decode", split.decode)):
        chunk = budget[layout.tp, layout.dp] * layout.dp
        dp = layout.dp if layout.dp > 1 else None
        stops = sglang_line_stops(
            model, deployment, device, layout.gpus, layout.tp, dp, deployment.max_num_seqs, chunk, context
        )
        if stops is not None:  # review 370 #3, review 373 #2: priced whole, not the reserve alone
            return f"sglang: no lines: its {role} workers: {stops}"
    return None


TPU_NOT_WRITTEN = (
    "no launch line on a TPU: the lines written are CUDA's (CUDA_VISIBLE_DEVICES, NIXL over the GPUs' memory), and vLLM"
    " 0.32's NixlConnector takes a TPU only with its KV buffer on the host (kv_buffer_device cpu: nixl/utils.py), a"
    " transfer not priced here; mainline SGLang has no TPU backend"
)
LAUNCH_NOTE = (
    "one command a line, prefill workers on the first GPUs; {proxy}{engines} NIXL installed (pip install nixl)"
)
VLLM_PROXY_NOTE = f"vLLM's proxy {VLLM_PROXY} is in its source tree (run it from a checkout) and "
"""Said only where a vllm line is written: without one (a release before NixlConnector) the proxy runs nothing."""
NODES_NOTE = (
    "the workers span nodes: run each line on its node (a worker over several nodes has one line per node, its first"
    " node the head; vLLM's multi-node flags are those of vLLM 0.11 and later); NODEk_IP stands for node k's address"
)


TRTLLM_NOT_WRITTEN = (
    "no trtllm line: TensorRT-LLM's own disaggregated serving (trtllm-serve disaggregated over context and generation"
    " servers, nvidia.github.io/TensorRT-LLM/features/disagg-serving.html) is not written; the vllm and sglang lines"
    " run this split, each engine sizing its pool by its own rules (the plan's are TensorRT-LLM's)"
)
OLD_VLLM_DEEPEP = (
    "vLLM before 0.11.1 takes DeepEP from the environment, not --all2all-backend: VLLM_ALL2ALL_BACKEND="
    "deepep_high_throughput on the prefill lines, deepep_low_latency on the decode lines (vllm-project/vllm#26732)"
)


def _vllm_generation(deployment: DeploymentSpec) -> str:
    """The vLLM generation the lines are for: the one priced, or the latest when another engine was."""
    from mha_cli.core.engine.generations import LATEST, generation

    priced = generation(deployment.engine_generation, deployment.engine)
    return priced.id if priced.engine == "vllm" else LATEST["vllm"].id


def disaggregated_with_launch(
    model: ModelSpec, served: ServedModel, target: ResolvedTarget, deployment: DeploymentSpec,
    profiles: tuple[DeviceProfile, DeviceProfile], **options: object,
) -> DisaggregatedPlan:  # fmt: skip
    """``plan_disaggregated`` with its pick's launch lines (none for a mixer no engine serves)."""
    from mha_cli.core.cost.search import unserved_mixer

    plan = plan_disaggregated(model, target, deployment, profiles, **options)  # type: ignore[arg-type]
    if plan.chosen is None:
        return plan
    unserved = unserved_mixer(model)
    if unserved is not None:
        note = f"no launch line: no engine mha models serves {unserved} layers"
        return plan.model_copy(update={"launch_note": note})
    if target.target.vendor == TPU_VENDOR:  # the lines written are CUDA's (review 265 #9)
        return plan.model_copy(update={"launch_note": TPU_NOT_WRITTEN})
    split = plan.splits[plan.chosen]
    launch = disaggregated_launch(plan, split, served, deployment, spec=model)
    if served.named_by == "gguf-file":  # vLLM's GGUF loader, as the aggregated lines: SGLang's is not priced
        launch = {"vllm": launch["vllm"]}
    reserve_stops = _sglang_workers_stop(plan, split, model, deployment) if deployment.engine != "sglang" else None
    if reserve_stops is not None and "sglang" in launch:  # review 370 #3: the workers' chunks SGLang stops on
        launch = {name: text for name, text in launch.items() if name != "sglang"}
    # each engine's lines in the forms of the release meant (core.engine.launch_forms), left out where it has none
    from mha_cli.core.engine.generations import generation
    from mha_cli.core.engine.launch_forms import fit_commands, releases_for

    priced = generation(deployment.engine_generation, deployment.engine)
    launch, left_out = fit_commands(launch, releases_for(priced, deployment.engine_version))
    nodes = [NODES_NOTE] if any("NODE1_IP" in text for text in launch.values()) else []
    if nodes and plan.devices_per_host:  # an NVL72 rack: NVLink joins its trays, each its own host
        nodes.append(f"each node here is one of the rack's compute trays, a host of {plan.devices_per_host} GPUs")
    engines = "both engines need" if "sglang" in launch and "vllm" in launch else "vLLM needs"
    engines = "SGLang needs" if "vllm" not in launch else engines
    dp_workers = split.prefill_dp > 1 or split.decode_dp > 1
    old_vllm = [OLD_VLLM_DEEPEP] if dp_workers and _vllm_generation(deployment) == "vllm-v1" else []
    old_vllm = old_vllm if "vllm" in launch else []
    note = "; ".join(
        [
            LAUNCH_NOTE.format(proxy=VLLM_PROXY_NOTE if "vllm" in launch else "", engines=engines),
            *nodes,
            *([TRTLLM_NOT_WRITTEN] if deployment.engine == "trtllm" else []),
            *old_vllm,
            *[note for note in (served.note, served.remote_code_note(list(launch))) if note],
            *left_out,
            *([reserve_stops] if reserve_stops is not None else []),
            *notes_for(
                [*pool_words(deployment, cpu=False, trtllm=False).notes, *format_notes(deployment, list(launch))],
                list(launch),
            ),
        ]
    )
    return plan.model_copy(update={"launch": launch, "launch_note": note})
