"""The KV cache a disaggregated prefill worker hands to a decode worker: its bytes and its time over the link.

A prompt of ``isl`` tokens leaves the prefill worker as the cache the decode worker holds for it: what each decode
rank holds (``core.kv``: its KV heads, replicated when tp exceeds the KV heads; an MLA latent whole on every rank;
sliding-window layers their window; a fixed state its size) times the decode ranks. Each GPU has its own link
(NVLink port, network card), so the transfer runs over min(prefill tp, decode tp) links at once:

    seconds = latency + bytes / (links x bandwidth per link)

The link: the scale-up link (NVLink, from the target's ``interconnect_gbs``) on a one-node target, the scale-out link
(``core.links``: InfiniBand NDR per H100, ...) on several nodes, or the one ``--kv-link`` names.
Figures are the links' line rates, one direction: a floor, as NIXL and Mooncake reach a share of them. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.links import LINKS, Link, link, scale_out_link, scale_up_gbs
from mha_cli.core.record import Record
from mha_cli.core.targets import TARGET_FILE_SUFFIXES, ResolvedTarget

SCALE_UP_LATENCY_S = 2e-6
"""One transfer's start-up on the scale-up link: the order of magnitude of ``core.links``' PCIe rows (2 us)."""


class KvTransfer(Record):
    """One request's KV cache moved from a prefill worker to a decode worker."""

    link_id: str
    link_name: str
    gbs: float
    """Bandwidth of one link, one direction, GB/s (10^9 B/s)."""
    links: int
    """Links the transfer runs over at once: min(prefill tp, decode tp)."""
    bytes: int
    """The request's cache as the decode ranks hold it, all ranks."""
    seconds: float
    how: str


def scale_up_link(target: ResolvedTarget) -> Link:
    """The target's device-to-device link inside a node, as a ``Link`` (half its bidirectional ``interconnect_gbs``)."""
    device = target.target
    gbs = scale_up_gbs(device.interconnect_gbs)
    table = f"{device.id}:" if device.id.lower().endswith(TARGET_FILE_SUFFIXES) else "hardware_targets.csv"
    source = (
        f"{table} interconnect_gbs {device.interconnect_gbs:g} GB/s both directions, half each way"
        if device.interconnect_gbs
        else f"no interconnect_gbs for {device.id}: {LINKS['pcie4'].name} assumed"
    )
    name = f"{device.name} scale-up link" if device.interconnect_gbs else f"{device.name} host link"
    return Link("scale-up", name, gbs, SCALE_UP_LATENCY_S, source)


def kv_link(target: ResolvedTarget, named: str | None = None) -> Link:
    """The link KV caches move over on ``target``: ``named`` (a ``core.links`` id) when given, else the scale-up link
    on one node, the scale-out link on several (conservative for workers that share a node)."""
    if named is not None:
        return link(named)
    if target.n_nodes == 1:
        return scale_up_link(target)
    return link(target.inter_node_link) if target.inter_node_link else scale_out_link(target.target.id)


def kv_transfer(bytes_per_rank: int, *, prefill_tp: int, decode_tp: int, over: Link) -> KvTransfer:
    """Move one request's cache, ``bytes_per_rank`` on each of ``decode_tp`` ranks, ``over`` a link per GPU."""
    if bytes_per_rank < 0 or prefill_tp < 1 or decode_tp < 1:
        raise ValueError("bytes must be >= 0 and tp >= 1")
    total = bytes_per_rank * decode_tp
    links = min(prefill_tp, decode_tp)
    seconds = over.latency_s + total / (links * over.gbs * 1e9) if total else 0.0
    how = (
        f"{total:,} B ({bytes_per_rank:,} B on each of {decode_tp} decode rank(s)) over {links} x {over.name}"
        f" at {over.gbs:g} GB/s line rate + {over.latency_s * 1e6:g} us ({over.source})"
    )
    return KvTransfer(
        link_id=over.id, link_name=over.name, gbs=over.gbs, links=links, bytes=total, seconds=seconds, how=how
    )
