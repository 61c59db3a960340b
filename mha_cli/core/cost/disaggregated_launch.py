"""Launch lines of a disaggregated split: every prefill and decode worker and the front that pairs them.

vLLM (docs/features/nixl_connector_usage.md, https://docs.vllm.ai/en/stable/features/nixl_connector_usage.html):
each worker a ``vllm serve`` with ``--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'``,
its GPUs in ``CUDA_VISIBLE_DEVICES`` and its own ``VLLM_NIXL_SIDE_CHANNEL_PORT``; the proxy
``tests/v1/kv_connector/nixl_integration/toy_proxy_server.py`` (in vLLM's source tree) with ``--prefiller-hosts``,
``--prefiller-ports``, ``--decoder-hosts``, ``--decoder-ports``.

SGLang (docs/advanced_features/pd_disaggregation.md, https://docs.sglang.io/advanced_features/pd_disaggregation.html):
each worker a ``sglang.launch_server`` with ``--disaggregation-mode prefill|decode`` and
``--disaggregation-transfer-backend nixl``, placed by ``--base-gpu-id``, each prefill worker its own
``--disaggregation-bootstrap-port``; the router ``python -m sglang_router.launch_router --pd-disaggregation
--prefill URL BOOTSTRAP_PORT ... --decode URL ...``.

Workers sit on consecutive GPUs, prefill workers first, none straddling two nodes; on several nodes each line names
its node's address as ``NODEk_IP`` (to replace). Pure Python.
"""

from __future__ import annotations

import json
import shlex

from mha_cli.core.cost.disaggregated import DisaggregatedPlan, Split, placements, plan_disaggregated
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.served_model import ServedModel
from mha_cli.core.targets import ResolvedTarget

NIXL_CONFIG = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))
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


def _format_flags(deployment: DeploymentSpec, served: ServedModel, *, sglang: bool) -> list[str]:
    flags = []
    if deployment.weight_dtype == "fp8":
        flags += ["--quantization", "fp8"]
    if deployment.kv_dtype == "fp8":
        flags += ["--kv-cache-dtype", "fp8_e4m3" if sglang else "fp8"]
    if served.revision is not None:
        flags += ["--revision", served.revision]
    return flags


def disaggregated_launch(
    plan: DisaggregatedPlan, split: Split, served: ServedModel, deployment: DeploymentSpec, *, utilisation: float
) -> dict[str, str]:
    """The ``vllm`` and ``sglang`` lines of ``split`` (one command a line): ``utilisation`` the engine's memory
    fraction priced (SGLang's ``--mem-fraction-static`` when its rules priced it), the decode workers' running cap
    the largest batch whose step meets --itl-ms."""
    context = str(plan.isl + plan.osl)
    model = served.model
    # a decode worker runs at most the batch whose step meets --itl-ms (all it admits without one)
    running_cap = str(max(1, next(d.goodput_batch for d in plan.decode if d.tp == split.decode_tp)))
    roles = [("prefill", i, split.prefill_tp) for i in range(split.prefill_workers)]
    roles += [("decode", i, split.decode_tp) for i in range(split.decode_workers)]
    vllm_lines, sglang_lines = [], []
    prefill_urls, decode_urls, prefill_ports, decode_ports, prefill_hosts, decode_hosts = [], [], [], [], [], []
    placed = placements([tp for _, _, tp in roles], plan.devices_per_node)
    nodes = 1 + max(node for node, _ in placed)
    for (role, index, tp), (node, first) in zip(roles, placed, strict=True):
        is_prefill = role == "prefill"
        (prefill_hosts if is_prefill else decode_hosts).append(_host(node, nodes, "localhost"))
        side_host = [] if nodes == 1 else [f"VLLM_NIXL_SIDE_CHANNEL_HOST={_host(node, nodes, '')}"]
        port = (VLLM_PREFILL_PORT if is_prefill else VLLM_DECODE_PORT) + index
        (prefill_ports if is_prefill else decode_ports).append(str(port))
        running = [] if is_prefill else ["--max-num-seqs", running_cap]
        vllm_lines.append(shlex.join([
            f"CUDA_VISIBLE_DEVICES={_gpus(first, tp)}", *side_host,
            f"VLLM_NIXL_SIDE_CHANNEL_PORT={NIXL_SIDE_CHANNEL_PORT + first}",
            "vllm", "serve", model, "--port", str(port), "--tensor-parallel-size", str(tp), "--max-model-len", context,
            "--gpu-memory-utilization", f"{utilisation:g}", *running, *_format_flags(deployment, served, sglang=False),
            "--kv-transfer-config", NIXL_CONFIG,
        ]))  # fmt: skip
        sglang_port = (SGLANG_PREFILL_PORT if is_prefill else SGLANG_DECODE_PORT) + index
        mode = ["--disaggregation-mode", role, "--disaggregation-transfer-backend", "nixl"]
        if is_prefill:
            bootstrap = str(SGLANG_BOOTSTRAP_PORT + index)
            mode += ["--disaggregation-bootstrap-port", bootstrap]
            prefill_urls += ["--prefill", f"http://{_host(node, nodes, '127.0.0.1')}:{sglang_port}", bootstrap]
        else:
            mode += ["--max-running-requests", running_cap]
            decode_urls += ["--decode", f"http://{_host(node, nodes, '127.0.0.1')}:{sglang_port}"]
        sglang_lines.append(shlex.join([
            "python", "-m", "sglang.launch_server", "--model-path", model, *mode, "--tp-size", str(tp),
            *([] if nodes == 1 else ["--host", _host(node, nodes, "")]),
            "--base-gpu-id", str(first), "--port", str(sglang_port), "--context-length", context,
            *(["--mem-fraction-static", f"{utilisation:g}"] if plan.engine == "sglang" else []),
            *_format_flags(deployment, served, sglang=True),
        ]))  # fmt: skip
    vllm_lines.append(shlex.join([
        "python", VLLM_PROXY, "--port", str(VLLM_PROXY_PORT), "--prefiller-hosts",
        *prefill_hosts, "--prefiller-ports", *prefill_ports, "--decoder-hosts", *decode_hosts, "--decoder-ports",
        *decode_ports,
    ]))  # fmt: skip
    sglang_lines.append(shlex.join([
        "python", "-m", "sglang_router.launch_router", "--pd-disaggregation", *prefill_urls, *decode_urls,
        "--host", "0.0.0.0", "--port", str(SGLANG_ROUTER_PORT),
    ]))  # fmt: skip
    return {"vllm": "\n".join(vllm_lines), "sglang": "\n".join(sglang_lines)}


LAUNCH_NOTE = (
    f"one command a line, prefill workers on the first GPUs; vLLM's proxy {VLLM_PROXY} is in its source tree (run it"
    " from a checkout) and both engines need NIXL installed (pip install nixl)"
)
NODES_NOTE = "the workers span nodes: run each line on its node; NODEk_IP stands for node k's address"


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
    split = plan.splits[plan.chosen]
    launch = disaggregated_launch(plan, split, served, deployment, utilisation=plan.gpu_memory_utilization)
    # each engine's lines in the forms of the release meant (core.engine.launch_forms), left out where it has none
    from mha_cli.core.engine.generations import generation
    from mha_cli.core.engine.launch_forms import fit_commands, releases_for

    priced = generation(deployment.engine_generation, deployment.engine)
    launch, left_out = fit_commands(launch, releases_for(priced, deployment.engine_version))
    nodes = [NODES_NOTE] if "NODE1_IP" in launch.get("vllm", launch.get("sglang", "")) else []
    note = "; ".join([LAUNCH_NOTE, *nodes, *([served.note] if served.note else []), *left_out])
    return plan.model_copy(update={"launch": launch, "launch_note": note})
