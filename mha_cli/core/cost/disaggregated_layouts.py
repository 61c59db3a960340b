"""The worker layouts ``mha plan --disaggregated`` searches, and where a split's workers sit in the nodes.

A worker is ``tp`` x ``dp`` GPUs:

- **tensor-parallel** (``dp`` 1): one engine whose tp ranks shard every layer (``--tensor-parallel-size``);
- **DP attention with expert parallelism** (``dp`` > 1, MoE models on vLLM and SGLang, ``core.dp_attention``): ``dp``
  data-parallel ranks of ``tp`` GPUs (tp 1, as the engines' large-scale recipes run it), each running attention for
  its own requests with the attention weights whole, the routed experts spread over all tp x dp GPUs and reached by
  all-to-all (SGLang ``--enable-dp-attention --moe-a2a-backend deepep``; vLLM ``--data-parallel-size
  --enable-expert-parallel``).

Sizes searched: every size up to a node's GPUs that shards the model (a worker inside one node), and whole nodes
beyond (2, 3, ... nodes, a worker spanning them: its collectives across nodes priced by ``core.cost.nodes``), up to
the target's GPUs less one (the other pool needs some). A worker of more GPUs than a node starts on a fresh node and
takes whole nodes; smaller ones never straddle two. Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.dp_attention import dp_attention_problem
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.tensor_parallel import tp_shard_problem


class WorkerLayout(NamedTuple):
    """One worker's parallelism: ``dp`` data-parallel attention ranks of ``tp`` GPUs each (dp 1: tensor-parallel)."""

    tp: int
    dp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    @property
    def label(self) -> str:
        """``tp8`` (tensor-parallel) or ``dp16`` / ``dp8xtp2`` (DP attention + expert parallelism)."""
        if self.dp == 1:
            return f"tp{self.tp}"
        return f"dp{self.dp}" if self.tp == 1 else f"dp{self.dp}xtp{self.tp}"


def as_layout(worker: int | WorkerLayout) -> WorkerLayout:
    """``worker`` as a layout: a bare int is a tensor-parallel worker of that many GPUs."""
    return worker if isinstance(worker, WorkerLayout) else WorkerLayout(worker)


def worker_sizes(n_devices: int, devices_per_node: int) -> list[int]:
    """GPUs a worker may take: 1 to a node's, then whole nodes (2, 3, ...) while another worker still fits beside."""
    inside = list(range(1, min(devices_per_node, n_devices) + 1))
    spanning = range(2 * devices_per_node, n_devices, devices_per_node)
    return inside + [size for size in spanning if size < n_devices]


def worker_layouts(
    model: ModelSpec, deployment: DeploymentSpec, n_devices: int, devices_per_node: int
) -> list[WorkerLayout]:
    """Every layout searched on ``n_devices`` in nodes of ``devices_per_node``: tensor-parallel workers of each size
    that shards the model's heads, then (MoE models, on an engine that runs it) DP attention workers of 2 or more
    tp-1 ranks over which the routed experts divide evenly (SGLang places n_experts / ep_size on each rank; other
    sizes need EPLB's redundant experts, ``--ep-num-redundant-experts``, which are not priced)."""
    sizes = worker_sizes(n_devices, devices_per_node)
    found = [WorkerLayout(size) for size in sizes if tp_shard_problem(model, size) is None]
    if model.block.moe is None:
        return found
    for size in sizes:
        if size > 1 and model.block.moe.n_experts % size == 0 and dp_attention_problem(
            model, deployment.engine, 1, size, size, deployment.engine_generation, deployment.engine_version
        ) is None:  # fmt: skip
            found.append(WorkerLayout(1, size))
    return found


def placements(workers: list[int], devices_per_node: int) -> list[tuple[int, int]]:
    """(node, first GPU in that node) of workers of ``workers`` GPUs laid out in order: one that fits a node never
    straddles two; a larger one starts on a fresh node and takes ceil(GPUs / node) whole nodes."""
    found, node, used = [], 0, 0
    for gpus in workers:
        if gpus > devices_per_node:
            if used:
                node, used = node + 1, 0
            found.append((node, 0))
            node += -(-gpus // devices_per_node)
            continue
        if used + gpus > devices_per_node:
            node, used = node + 1, 0
        found.append((node, used))
        used += gpus
    return found


def devices_reached(workers: list[int], devices_per_node: int) -> int:
    """Devices up to the end of the last of ``workers`` placed in order (``placements``): at most the target's, or
    they do not fit (a part-filled last node, ``12xh100``'s 8 + 4, holds only what fits in its 4)."""
    if not workers:
        return 0
    node, first = placements(workers, devices_per_node)[-1]
    last = workers[-1]
    return node * devices_per_node + (
        first + last if last <= devices_per_node else -(-last // devices_per_node) * devices_per_node
    )


def nodes_used(workers: list[int], devices_per_node: int) -> int:
    """Nodes the workers of ``workers`` GPUs take, placed in order (``placements``)."""
    if not workers:
        return 0
    node, _ = placements(workers, devices_per_node)[-1]
    last = workers[-1]
    return node + (-(-last // devices_per_node) if last > devices_per_node else 1)
