"""A deployment over several nodes: which of its collectives and pipeline sends leave a node, and what they cost.

Ranks are numbered as vLLM and SGLang number them: tensor-parallel ranks innermost (consecutive devices), then the
pipeline stages, then the data-parallel replicas (rank = replica x pp x tp + stage x tp + tp rank); devices fill the
nodes in order, ``devices_per_node`` each. So

- a tensor-parallel group spans nodes only when tp does not fit a node's devices (an explicit ``--tp 16`` on
  ``2x8xh100``): its all-reduces and the logits gather then run at the scale-out link's rate (a ring across nodes
  crosses the network card of every GPU, so its bus bandwidth is one card's);
- a pipeline boundary crosses nodes where stage s + 1 starts on another node than stage s ends on: its send of the
  step's activations (tokens x d_model x 2 B) goes over the scale-out link;
- the routed experts' group (tp x replicas ranks sharing them, per stage) spans nodes when its ranks sit in more than
  one node: an all-gather of it runs at the scale-out rate; an all-to-all sends each peer its share, the peers on other
  nodes over the scale-out link and those on its own over the scale-up link, at once (the slower of the two).

The scale-out link (``core.links``: the part's reference network card, or ``--inter-node-link``) reaches the same
share of its line rate as the profile's own link reaches of its (the prior's ``link_efficiency``; 1 on the ceiling),
and each collective crossing it pays the profile's collective latency plus the link's start-up. Pure Python.
"""

import math
from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

from mha_cli.core.cost.profile import CollectiveCost, DeviceProfile
from mha_cli.core.cost.work import COLLECTIVES, Op
from mha_cli.core.links import Link
from mha_cli.core.record import Record
from mha_cli.core.targets import nodes_in_words

if TYPE_CHECKING:
    from mha_cli.core.targets import ResolvedTarget


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class NodePlacement(NamedTuple):
    """How a deployment's devices sit in nodes and what joins the nodes."""

    devices_per_node: int
    link: Link
    """The scale-out link between two nodes, per device."""
    basis: str = ""
    """Why this link: ``--inter-node-link``, or the part's reference server (``core.links.scale_out_basis``, which
    says when it is an assumption); empty where the plan does not know."""


def nodes_of(ranks: list[int], devices_per_node: int) -> set[int]:
    """The nodes ``ranks`` (device numbers in fill order) sit in."""
    return {rank // devices_per_node for rank in ranks}


def tp_groups(tp: int, pp: int, replicas: int) -> list[list[int]]:
    """Every tensor-parallel group's ranks: consecutive runs of tp."""
    return [list(range(start, start + tp)) for start in range(0, tp * pp * replicas, tp)]


def expert_groups(tp: int, pp: int, replicas: int, expert_ranks: int) -> list[list[int]]:
    """Every routed-experts group's ranks: per stage, the tp ranks of the ``expert_ranks / tp`` replicas sharing them
    (tp itself when each replica holds its own experts)."""
    sharing = expert_ranks // tp
    groups = []
    for stage in range(pp):
        for first in range(0, replicas, sharing):
            groups.append(
                [r * tp * pp + stage * tp + t for r in range(first, first + sharing) for t in range(tp)]
            )  # fmt: skip
    return groups


def off_node_share(groups: list[list[int]], devices_per_node: int) -> float:
    """The largest share of a rank's peers in its group that sit on other nodes (0: every group inside a node)."""
    worst = 0.0
    for group in groups:
        here = Counter(rank // devices_per_node for rank in group)  # the group's ranks on each node
        if len(group) > 1 and len(here) > 1:
            worst = max(worst, (len(group) - min(here.values())) / (len(group) - 1))
    return worst


def crossing_boundaries(tp: int, pp: int, replicas: int, devices_per_node: int) -> int:
    """The most pipeline boundaries of one replica whose two stages sit on different nodes."""
    most = 0
    for r in range(replicas):
        base = r * tp * pp
        most = max(
            most,
            sum(
                (base + s * tp - 1) // devices_per_node != (base + s * tp) // devices_per_node for s in range(1, pp)
            ),
        )  # fmt: skip
    return most


class CollectiveSpans(NamedTuple):
    """Which of a deployment's collectives leave a node, worked out once per layout."""

    tp_share: float
    """The tensor-parallel group's share of peers off the node (0: tp inside a node)."""
    expert_share: float
    """The routed experts' group's (0: inside a node, or no shared experts)."""
    crossing: int
    """Pipeline boundaries crossing nodes (of the replica with most)."""


def collective_spans(
    placement: NodePlacement, tp: int, pp: int, replicas: int, expert_ranks: int | None
) -> CollectiveSpans:
    """``CollectiveSpans`` of tp x pp x replicas on ``placement``'s nodes."""
    per_node = placement.devices_per_node
    tp_share = off_node_share(tp_groups(tp, pp, replicas), per_node)
    expert_share = 0.0
    if expert_ranks is not None and expert_ranks > tp:
        expert_share = off_node_share(expert_groups(tp, pp, replicas, expert_ranks), per_node)
    return CollectiveSpans(tp_share, expert_share, crossing_boundaries(tp, pp, replicas, per_node))


def placed(ops: list[Op], spans: CollectiveSpans, tp: int) -> list[Op]:
    """``ops`` with each collective's share of traffic off the node set (``Op.off_node``): the tensor-parallel
    group's for the all-reduces and the logits gather, the experts' group's for their dispatch."""
    if not spans.tp_share and not spans.expert_share:
        return ops
    out = []
    for op in ops:
        if op.kind in COLLECTIVES:
            share = spans.tp_share if (op.ranks or tp) == tp else spans.expert_share
            if share:
                op = op._replace(off_node=share)
        out.append(op)
    return out


def scale_out_cost(profile: DeviceProfile, link: Link, fitted_efficiency: float) -> CollectiveCost | None:
    """The collective cost of ``link`` on ``profile``: its line rate at the profile's link efficiency (its constant
    ``link_efficiency``, else ``fitted_efficiency``; the full rate on a ceiling), its latency the profile's collective
    latency plus the link's start-up (none on a ceiling). None where the profile prices no collective."""
    if profile.collective is None:
        return None
    if profile.kind == "ceiling":
        return CollectiveCost(latency_s=0.0, bandwidth_bytes_per_s=link.gbs * 1e9, link=link.id)
    efficiency = float(profile.constants.get("link_efficiency", fitted_efficiency))
    return CollectiveCost(
        latency_s=profile.collective.latency_s + link.latency_s, bandwidth_bytes_per_s=link.gbs * 1e9 * efficiency,
        link=link.id,
    )  # fmt: skip


def off_node_seconds(op: Op, scale_up: CollectiveCost, scale_out: CollectiveCost, ranks: int) -> float:
    """One instance of collective ``op`` whose group spans nodes: a ring (all-reduce, all-gather) at the scale-out
    rate; an all-to-all's off-node share over the scale-out link while its on-node share goes over the scale-up one."""
    if op.kind == "all_reduce":
        return scale_out.all_reduce_s(op.bytes, ranks)
    if op.kind == "all_gather":
        return scale_out.all_gather_s(op.bytes, ranks)
    away = op.off_node * op.bytes / scale_out.bandwidth_bytes_per_s
    home = (1 - op.off_node) * op.bytes / scale_up.bandwidth_bytes_per_s
    return scale_out.latency_s + max(away, home)


def node_placement(target: "ResolvedTarget") -> NodePlacement | None:
    """``target``'s nodes and the link between them (``--inter-node-link``, else the part's reference network card:
    ``core.links.scale_out_link``); None on one node."""
    if target.n_nodes == 1:
        return None
    from mha_cli.core.links import link, scale_out_basis, scale_out_link

    if target.inter_node_link:
        return NodePlacement(target.devices_per_node, link(target.inter_node_link), "--inter-node-link")
    part = target.target.id
    return NodePlacement(target.devices_per_node, scale_out_link(part), scale_out_basis(part))


class NodeSpan(Record):
    """The nodes a served deployment spans (``ServingPlan.nodes``): what prices its collectives between them."""

    nodes: int
    devices_per_node: int
    """GPUs one node holds, filled in order (the last may hold fewer: ``last_node_devices``)."""
    last_node_devices: int | None = None
    """GPUs the last node holds where it is not full (12 GPUs in nodes of 8: 4); None: every node full."""
    inter_node_link: str
    """The link between nodes: a ``core.links.LINKS`` id."""

    @property
    def placement(self) -> NodePlacement:
        from mha_cli.core.links import link

        return NodePlacement(self.devices_per_node, link(self.inter_node_link))


def node_span(placement: NodePlacement | None, n_devices: int) -> NodeSpan | None:
    """``placement`` as the plan records it (None on one node)."""
    if placement is None:
        return None
    per_node = placement.devices_per_node
    return NodeSpan(
        nodes=-(-n_devices // per_node), devices_per_node=per_node, inter_node_link=placement.link.id,
        last_node_devices=n_devices % per_node or None,
    )  # fmt: skip


def node_notes(placement: NodePlacement, spans: CollectiveSpans, tp: int, pp: int, n_devices: int) -> list[str]:
    """What the plan priced on the link between nodes, in words (the nodes and their link first)."""
    link, per_node = placement.link, placement.devices_per_node
    notes = [
        f"{nodes_in_words(n_devices, per_node)}: between nodes {link.name}, {link.gbs:g} GB/s per GPU each"
        f" way ({f'{placement.basis}; ' if placement.basis else ''}{link.source}); inside a node the scale-up link"
    ]
    if spans.tp_share:
        notes.append(
            f"--tp {tp} spans nodes (a node holds {per_node}): every all-reduce runs at the {link.id} rate, several"
            f" times slower than inside a node; tp {math.gcd(tp, per_node)} with more pipeline stages keeps it inside"
        )
    if spans.crossing:
        notes.append(
            f"{spans.crossing} of the {pp - 1} pipeline boundaries cross nodes: each step's activations (tokens x"
            f" d_model x 2 B) go over {link.id} there"
        )
    if spans.expert_share:
        notes.append(
            f"the routed experts' group spans nodes: {spans.expert_share:.0%} of each rank's dispatch goes over"
            f" {link.id} (all-to-all: at once with the rest over the scale-up link; all-gather: at the {link.id} rate)"
        )
    return notes
