"""Launch lines of a plan over several nodes: what each node runs, vLLM's and SGLang's own multi-node flags.

Three shapes, from the plan's layout (``ServingPlan.nodes``):

- **a replica spans nodes** (tp x pp more than a node holds: pipeline stages across nodes): vLLM's multiprocessing
  backend over nodes, ``--distributed-executor-backend mp --nnodes K --node-rank R --master-addr --master-port``, the
  other nodes ``--headless`` (``ParallelConfig.nnodes``, vllm-project/vllm#23691; first read in vLLM 0.11.1's wheel,
  ``core.engine.flags``), written for the generations in ``MP_GENERATIONS``; the V1 generation (0.8-0.20), whose first releases lack it, starts a Ray cluster
  and ``--distributed-executor-backend ray`` on the head, which every release of it runs
  (https://docs.vllm.ai/en/stable/serving/parallelism_scaling.html);
  SGLang ``--nnodes K --node-rank R --dist-init-addr HEAD:PORT`` (``ServerArgs``). Several replicas: one such group of
  K nodes each, behind a load balancer;
- **replicas sharing the experts across nodes** (expert parallelism, DP attention): one data-parallel group over
  every node, vLLM ``--data-parallel-size-local --data-parallel-address --data-parallel-rpc-port``, the other nodes
  ``--data-parallel-start-rank S --headless`` (https://docs.vllm.ai/en/stable/serving/data_parallel_deployment.html);
  SGLang ``--nnodes --node-rank --dist-init-addr`` with its ``--enable-dp-attention``;
- **replicas that fit a node each, not sharing**: every node runs the same server for its own replicas (``--data-
  parallel-size`` of a node's), a load balancer in front.

Each line is written once for the head (node 0) and, where the others differ, once with placeholders for them
(``HEAD_IP``, ``NODE_RANK``, ``START_RANK``) that the note says how to fill. Pure Python.
"""

from typing import NamedTuple

from mha_cli.core.rules.engine import counted

STRADDLING = (
    "no launch line: a replica of tp x pp GPUs straddles two nodes unevenly (placed in fill order), which neither"
    " engine's multi-node launch runs; a layout whose replica divides a node, or fills whole nodes, has one"
)
SPANNING_SHARED = (
    "no launch line: replicas that each span nodes and share the routed experts (pipeline stages across nodes with"
    " data parallelism over them) are priced, but neither engine's multi-node recipe for them is written here"
)
HEAD_IP = "HEAD_IP"
"""Placeholder: node 0's address, as the other nodes reach it."""
NODE_RANK = "NODE_RANK"
"""Placeholder: the node's index (1 to nodes - 1)."""
START_RANK = "START_RANK"
"""Placeholder: the node's first data-parallel rank (its index x the data-parallel ranks a node holds)."""
VLLM_MASTER_PORT = "29501"
"""vLLM's ``ParallelConfig.master_port`` default."""
VLLM_DP_RPC_PORT = "13345"
"""The RPC port vLLM's data-parallel deployment guide uses (any port every node reaches)."""
SGLANG_DIST_PORT = "50000"
"""The ``--dist-init-addr`` port SGLang's multi-node examples use."""
RAY_PORT = "6379"
"""Ray's default head port (``ray start --head``)."""
MP_GENERATIONS = ("vllm-0.21",)
"""vLLM generations whose releases all take ``--nnodes`` with the mp backend (vllm-project/vllm#23691, first read in
0.11.1): vllm-0.21 only. V1 (0.8-0.20) gets Ray lines, which run on 0.8-0.10 too, though 0.11-0.20 would also take mp."""


class NodeShape(NamedTuple):
    """How a plan's replicas sit in its nodes."""

    nodes: int
    devices_per_node: int
    replica_nodes: int
    """Nodes one replica spans (1: a replica inside a node)."""
    replicas: int
    shared: bool
    """The replicas share the routed experts (one data-parallel group over the nodes)."""
    replica_devices: int = 1
    """tp x pp: the devices of one replica."""
    copies: bool = False
    """MoE replicas that each hold their own experts: vLLM's data parallelism would spread the experts over them
    (its MoE layers take dp x tp as one group without expert parallelism), so each is a server of its own."""

    @property
    def replicas_per_node(self) -> int:
        """Replicas a full node holds."""
        return max(1, self.devices_per_node // self.replica_devices)

    @property
    def straddles(self) -> bool:
        """A replica's GPUs are not whole nodes nor a share of one that the node divides (tp x pp = 6 on nodes of 8,
        or 12 over 8 + 4): some replica straddles a node boundary unevenly, which neither engine launches."""
        if self.replica_nodes == 1:
            return self.devices_per_node % self.replica_devices != 0
        return self.replica_devices % self.devices_per_node != 0

    @property
    def last_node_replicas(self) -> int | None:
        """Replicas the last node holds when it is not full (``12xh100``: 8 + 4), else None."""
        rest = self.replicas % self.replicas_per_node if self.replica_nodes == 1 else 0
        return rest or None


def node_shape(
    nodes: int, devices_per_node: int, tp: int, pp: int, replicas: int, expert_ranks: int | None
) -> NodeShape:
    """``NodeShape`` of tp x pp x replicas over ``nodes`` of ``devices_per_node``."""
    replica_nodes = -(-(tp * pp) // devices_per_node)
    shared = expert_ranks is not None and expert_ranks > tp
    copies = expert_ranks is not None and expert_ranks == tp and replicas > 1
    return NodeShape(nodes, devices_per_node, replica_nodes, replicas, shared, tp * pp, copies)


def _servers_per_node(shape: NodeShape, engine: str, why: str) -> str:
    """The note for a line run once per replica on every node (no flag of its engine runs the layout priced)."""
    last = shape.last_node_replicas
    where = f"each of the {shape.nodes} nodes" if last is None else (
        f"each of the first {shape.nodes - 1} and {last} on the last, which is not full" if shape.nodes > 2
        else f"node 0 and {last} on node 1, which is not full"
    )  # fmt: skip
    return (
        f"{engine}: the line once per replica, {counted(shape.replicas_per_node, 'server')} on {where}, each on its own"
        f" {shape.replica_devices} GPUs (CUDA_VISIBLE_DEVICES) and port, a load balancer in front: {why}"
    )


COPIES_WHY = "each replica holds its own experts, which vLLM's data parallelism would spread over every replica's GPUs"
"""Why vLLM's line runs once per replica for MoE copies (``NodeShape.copies``)."""


class NodeLines(NamedTuple):
    """The lines of one engine: the head's, the other nodes' (None: the same line), what to fill in, and the last
    node's where it is not full and its line differs (``12xh100`` as 8 + 4; None: the same as the others)."""

    head: list[str]
    others: list[str] | None
    note: str | None
    last: list[str] | None = None


def _every_node(line: list[str], shape: NodeShape, engine: str, dp_flag: str) -> NodeLines:
    """``line`` (its ``dp_flag`` set to a full node's replicas) on every node, a load balancer in front; the last
    node, when it is not full, runs its own replicas (``ENGINE_last_node``)."""
    if shape.last_node_replicas is None:
        return NodeLines(
            line, None, f"{engine}: the same line on each of the {shape.nodes} nodes, a load balancer in front"
        )
    first = "node 0" if shape.nodes == 2 else f"nodes 0-{shape.nodes - 2}"
    last = _replace(line, dp_flag, str(shape.last_node_replicas))
    note = (
        f"{engine}: the {engine} line on {first}, {engine}_last_node ({dp_flag} {shape.last_node_replicas}) on node"
        f" {shape.nodes - 1}, which is not full; a load balancer in front"
    )
    return NodeLines(line, None, note, last)


def _others(nodes: int) -> str:
    """``node 1`` or ``nodes 1-3``: every node but the head of ``nodes``."""
    return "node 1" if nodes == 2 else f"nodes 1-{nodes - 1}"


def _replace(words: list[str], flag: str, value: str) -> list[str]:
    """``words`` with ``flag``'s value set to ``value`` (the flag added when absent)."""
    if flag in words:
        at = words.index(flag)
        return [*words[: at + 1], value, *words[at + 2 :]]
    return [*words, flag, value]


def vllm_lines(vllm: list[str], shape: NodeShape, generation: str) -> NodeLines:
    """``vllm`` (one node's ``vllm serve`` words) over ``shape``'s nodes; no line (``NodeLines.head`` empty, the note
    says why) for replicas sharing experts under vLLM V0 (no data parallelism), over replicas that span nodes, or
    over a last node that is not full."""
    if shape.straddles:
        return NodeLines([], None, STRADDLING)
    if shape.replica_nodes > 1 and shape.shared:
        return NodeLines([], None, SPANNING_SHARED)
    if shape.replica_nodes > 1:
        group = f" (one group of {shape.replica_nodes} nodes per replica, each with its own HEAD_IP)"
        many = group if shape.replicas > 1 else ""
        line = _replace(vllm, "--data-parallel-size", "1") if "--data-parallel-size" in vllm else vllm
        if generation not in MP_GENERATIONS:  # Ray: a cluster over the nodes, the server on the head
            head = [*line, "--distributed-executor-backend", "ray"]
            others = ["ray", "start", "--address", f"{HEAD_IP}:{RAY_PORT}", "--block"]
            note = (
                f"vllm: on the head first `ray start --head --port {RAY_PORT}`, on each other node the vllm_workers"
                f" line, then the vllm line on the head{many}"
            )
            return NodeLines(head, others, note)
        mp = ["--distributed-executor-backend", "mp", "--nnodes", str(shape.replica_nodes)]
        address = ["--master-addr", HEAD_IP, "--master-port", VLLM_MASTER_PORT]
        head = [*line, *mp, "--node-rank", "0", *address]
        others = [*line, *mp, "--node-rank", NODE_RANK, *address, "--headless"]
        note = f"vllm: the vllm line on node 0, vllm_workers on {_others(shape.replica_nodes)}{many}"
        return NodeLines(head, others, note)
    if shape.shared:
        if "--data-parallel-size" not in vllm:
            return NodeLines([], None, "no launch line: this vLLM generation has no data parallelism to share experts")
        if shape.last_node_replicas is not None:  # vLLM's --data-parallel-size-local is one figure for every node
            return NodeLines([], None, "no launch line: the last node is not full (give whole nodes: NODESxDEVICES)")
        local = str(shape.replicas_per_node)
        dp = ["--data-parallel-size-local", local, "--data-parallel-address", HEAD_IP,
              "--data-parallel-rpc-port", VLLM_DP_RPC_PORT]  # fmt: skip
        head = [*vllm, *dp]
        others = [*vllm, *dp, "--data-parallel-start-rank", START_RANK, "--headless"]
        note = (
            f"vllm: the vllm line on node 0, vllm_workers on {_others(shape.nodes)} with START_RANK = the node's"
            f" index x {local}"
        )
        return NodeLines(head, others, note)
    if shape.copies and shape.replicas_per_node > 1:
        return NodeLines(vllm, None, _servers_per_node(shape, "vllm", COPIES_WHY))
    if "--data-parallel-size" not in vllm and shape.replicas_per_node > 1:  # vLLM V0: a server per replica
        return NodeLines(vllm, None, _servers_per_node(shape, "vllm", "this vLLM generation has no data parallelism"))
    line = (
        _replace(vllm, "--data-parallel-size", str(shape.replicas_per_node)) if "--data-parallel-size" in vllm else vllm
    )
    return _every_node(line, shape, "vllm", "--data-parallel-size")


SGLANG_UNEVEN = (
    "no launch line: the last node is not full, and SGLang places --tp-size / --nnodes GPUs on every node (give whole"
    " nodes: NODESxDEVICES)"
)


def sglang_lines(sglang: list[str], shape: NodeShape) -> NodeLines:
    """``sglang`` (one node's ``sglang.launch_server`` words) over ``shape``'s nodes; no line over replicas that span
    nodes and share the experts, or straddle two unevenly (the note says so)."""
    if shape.straddles:
        return NodeLines([], None, STRADDLING)
    if shape.replica_nodes > 1 and shape.shared:
        return NodeLines([], None, SPANNING_SHARED)
    if shape.shared and shape.last_node_replicas is not None:  # 12xh200 as 8 + 4 (trial 268 #1)
        return NodeLines([], None, SGLANG_UNEVEN)
    if shape.replica_nodes > 1 or shape.shared:
        span = shape.replica_nodes if shape.replica_nodes > 1 else shape.nodes
        line = _replace(sglang, "--dp-size", "1") if shape.replica_nodes > 1 else sglang
        dist = ["--nnodes", str(span), "--dist-init-addr", f"{HEAD_IP}:{SGLANG_DIST_PORT}"]
        many = f" (one group of {span} nodes per replica)" if shape.replica_nodes > 1 and shape.replicas > 1 else ""
        return NodeLines(
            [*line, *dist, "--node-rank", "0"], [*line, *dist, "--node-rank", NODE_RANK],
            f"sglang: the sglang line on node 0, sglang_workers on {_others(span)}{many}",
        )  # fmt: skip
    return _every_node(_replace(sglang, "--dp-size", str(shape.replicas_per_node)), shape, "sglang", "--dp-size")


def node_launch(
    lines: dict[str, list[str]], shape: NodeShape, vllm_generation: str
) -> tuple[dict[str, list[str]], list[str]]:
    """``lines`` (one node's words per engine: ``vllm``, ``sglang``) over ``shape``'s nodes: each engine's head line,
    its other nodes' line as ``ENGINE_workers`` where they differ, and the notes saying where each runs. An engine
    whose line is not written is dropped, with a note."""
    out: dict[str, list[str]] = {}
    notes: list[str] = []
    for engine, words in lines.items():
        if engine == "vllm":
            found = vllm_lines(words, shape, vllm_generation)
        elif engine == "sglang":
            found = sglang_lines(words, shape)
        else:  # trtllm-serve: its multi-node launch (mpirun / trtllm-llmapi-launch) is not written
            if shape.replica_nodes == 1 and not shape.straddles:  # replicas inside a node: servers, no data parallelism
                notes.append(_servers_per_node(shape, engine, "trtllm-serve has no data-parallel flag"))
            else:
                notes.append(f"{engine}: its multi-node launch (under mpirun) is not written; the line is one node's")
            out[engine] = words
            continue
        if not found.head:
            notes.append(f"{engine}: {found.note}")
            continue
        out[engine] = found.head
        if found.others is not None:
            out[f"{engine}_workers"] = found.others
        if found.last is not None:
            out[f"{engine}_last_node"] = found.last
        if found.note:
            notes.append(found.note)
    return out, notes


PLACEHOLDERS = {HEAD_IP: "node 0's address", NODE_RANK: "the node's index", START_RANK: "its first data-parallel rank"}
"""The words a multi-node line leaves for the user to fill, and with what."""


def placeholders_note(lines: dict[str, list[str]]) -> str | None:
    """``replace HEAD_IP with node 0's address, ...``: the placeholders ``lines`` hold (None: none), said of the lines
    a release kept, so it names none of a dropped engine's (trial 351 #10: START_RANK of a dropped vllm line)."""
    used = [f"{name} with {what}" for name, what in PLACEHOLDERS.items()
            if any(name in word for words in lines.values() for word in words)]  # fmt: skip
    return "replace " + ", ".join(used) if used else None
