"""Links between devices, nodes and host memory: the bandwidth a transfer gets, one direction, per device.

Three links price everything that leaves a device's own memory:

- **scale-up** (inside a node): NVLink, Infinity Fabric or PCIe between the devices of one node, from the target
  table's ``interconnect_gbs`` (total bidirectional: half of it each way);
- **scale-out** (between nodes): the network card each GPU has in the reference servers of its generation (DGX A100:
  one 200 Gb/s HDR InfiniBand port per GPU; DGX H100/H200/B200: one 400 Gb/s NDR port per GPU; B300/GB300: one
  800 Gb/s ConnectX-8 port per GPU; PCIe cards, in no reference server, are assumed to have the same port per GPU
  and ``scale_out_basis`` says so), or any link of ``LINKS`` named with ``--inter-node-link``;
- **host** (device to the CPU's memory): the PCIe generation of the part, or NVLink-C2C on Grace superchips. KV
  offload to host memory moves over it.

Figures are the signalling rates of the standards (PCIe: 16 lanes at 16/32/64 GT/s after encoding; InfiniBand and
Ethernet: the port's line rate), one direction, in GB/s (10^9 B/s). What a transfer reaches is a share of it, as for
memory bandwidth; that share is the cost model's, not this table's. Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.errors import BadInputError, shown


class Link(NamedTuple):
    """One kind of link, with its bandwidth per device and direction."""

    id: str
    name: str
    gbs: float
    """Bandwidth one direction, per device, in GB/s (10^9 B/s)."""
    latency_s: float
    """One message's start-up time (s): the order of magnitude the standard's implementations publish."""
    source: str


_PCIE_SOURCE = "PCI-SIG specifications: 16 GT/s (4.0), 32 GT/s (5.0), 64 GT/s (6.0) per lane, x16, one direction"
_IB_SOURCE = "InfiniBand Trade Association roadmap (https://www.infinibandta.org/infiniband-roadmap/): port line rates"
LINKS: dict[str, Link] = {
    link.id: link
    for link in (
        Link("pcie4", "PCIe 4.0 x16", 31.5, 2e-6, _PCIE_SOURCE),
        Link("pcie5", "PCIe 5.0 x16", 63.0, 2e-6, _PCIE_SOURCE),
        Link("pcie6", "PCIe 6.0 x16", 121.0, 2e-6, _PCIE_SOURCE),
        Link(
            "nvlink-c2c", "NVLink-C2C (Grace to Hopper/Blackwell)", 450.0, 1e-6,
            "NVIDIA GH200/GB200 datasheets: NVLink-C2C 900 GB/s bidirectional",
        ),
        Link("ib-hdr", "InfiniBand HDR, 200 Gb/s", 25.0, 5e-6, _IB_SOURCE),
        Link("ib-ndr", "InfiniBand NDR, 400 Gb/s", 50.0, 5e-6, _IB_SOURCE),
        Link("ib-xdr", "InfiniBand XDR, 800 Gb/s", 100.0, 5e-6, _IB_SOURCE),
        Link("roce-100", "RoCE, 100 GbE", 12.5, 10e-6, "IEEE 802.3 Ethernet line rates"),
        Link("roce-200", "RoCE, 200 GbE", 25.0, 10e-6, "IEEE 802.3 Ethernet line rates"),
        Link("roce-400", "RoCE, 400 GbE", 50.0, 10e-6, "IEEE 802.3 Ethernet line rates"),
        Link("roce-800", "RoCE, 800 GbE", 100.0, 10e-6, "IEEE 802.3 Ethernet line rates"),
    )
}  # fmt: skip
"""Every link a user may name, by id."""

_DGX_A100 = "NVIDIA DGX A100 user guide: 8 x ConnectX-6 HDR 200 Gb/s, one per GPU; GPUs on PCIe 4.0"
_DGX_H100 = "NVIDIA DGX H100/H200 user guide: 8 x ConnectX-7 NDR 400 Gb/s, one per GPU; GPUs on PCIe 5.0"
_DGX_B200 = "NVIDIA DGX B200 user guide: 8 x ConnectX-7 400 Gb/s, one per GPU; GPUs on PCIe 5.0"
_B300 = "NVIDIA HGX B300 / GB300 NVL72 datasheets: ConnectX-8 SuperNIC 800 Gb/s per GPU"
_MI300 = "AMD Instinct MI300X platform: 8 x 400 Gb/s NICs (one per GPU) on PCIe 5.0"
_MI350 = "AMD Instinct MI350 Series platform (MI350X, MI355X): 400 Gb/s Pollara NICs, one per GPU; PCIe 5.0"
ASSUMED = "assumed"
"""How a source whose network figure no reference server fixes begins (``scale_out_basis``)."""
_PCIE_SERVERS = (
    " port per GPU, as in the DGX of its generation; PCIe servers differ (NVIDIA's Enterprise RA 'PCIe Optimized"
    " 2-8-5' server has 5 network adapters for 8 GPUs, https://docs.nvidia.com/ai-enterprise/reference-architecture/"
    "latest/compute-node-hardware.html): give --inter-node-link for yours"
)
_A100_PCIE = (
    f"{ASSUMED}, a PCIe card in no reference server: the card on PCIe 4.0 x16 (NVIDIA A100 PCIe product brief);"
    f" one HDR 200 Gb/s{_PCIE_SERVERS}"
)
_H100_PCIE = (
    f"{ASSUMED}, a PCIe card in no reference server: the card on PCIe 5.0 x16 (NVIDIA H100 PCIe / H100 NVL product"
    f" briefs); one NDR 400 Gb/s{_PCIE_SERVERS}"
)
NODE_LINKS: dict[str, tuple[str, str, str]] = {
    "a100-40gb": ("pcie4", "ib-hdr", _DGX_A100),
    "a100-80gb": ("pcie4", "ib-hdr", _DGX_A100),
    "a100-40gb-pcie": ("pcie4", "ib-hdr", _A100_PCIE),
    "a100-80gb-pcie": ("pcie4", "ib-hdr", _A100_PCIE),
    "h100-sxm": ("pcie5", "ib-ndr", _DGX_H100),
    "h100-pcie": ("pcie5", "ib-ndr", _H100_PCIE),
    "h100-nvl": ("pcie5", "ib-ndr", _H100_PCIE),
    "h200": ("pcie5", "ib-ndr", _DGX_H100),
    "h20": ("pcie5", "ib-ndr", _DGX_H100),
    "h800": ("pcie5", "ib-ndr", _DGX_H100),
    "b200": ("pcie5", "ib-ndr", _DGX_B200),
    "gb200": ("nvlink-c2c", "ib-ndr", "NVIDIA GB200 NVL72 datasheet: NVLink-C2C to Grace; ConnectX-7 400 Gb/s per GPU"),
    "b300": ("pcie6", "ib-xdr", _B300),
    "gb300": ("nvlink-c2c", "ib-xdr", _B300),
    "mi300x": ("pcie5", "roce-400", _MI300),
    "mi325x": ("pcie5", "roce-400", _MI300),
    "mi355x": ("pcie5", "roce-400", _MI350),
    "mi350x": ("pcie5", "roce-400", _MI350),
}
"""Target id -> (host link, scale-out link, source): the reference server of each data-centre part."""
DEFAULT_HOST_LINK = "pcie4"
"""The host link of a part the table does not name (workstation and older cards): PCIe 4.0 x16."""
DEFAULT_SCALE_OUT_LINK = "roce-100"
"""The link between nodes of a part the table does not name: one 100 GbE port per device."""


NODE_DEVICES: dict[str, int] = {
    "gb200": 72, "gb300": 72,  # NVIDIA GB200/GB300 NVL72: 72 GPUs in one NVLink domain
    "tpu-v4": 4096, "tpu-v5e": 256, "tpu-v5p": 8960, "tpu-v6e": 256,  # Google Cloud TPU docs: chips per pod on ICI
    "jetson-orin": 1,  # a module: one device, no device-to-device link
    "gb10": 1,  # a DGX Spark: one GPU a box; two boxes join over ConnectX-7 200 GbE (NVIDIA DGX Spark spec)
}  # fmt: skip
"""Target id -> devices one scale-up domain (a node) holds where it is not ``DEFAULT_NODE_DEVICES``."""
DEFAULT_NODE_DEVICES = 8
"""Devices in one node of every other part: the 8 GPUs of an HGX/DGX or MI300X platform server, or of an 8-card PCIe
server (NVIDIA DGX user guides; AMD Instinct platform)."""
HOST_DEVICES: dict[str, int] = {"gb200": 4, "gb300": 4}
"""Target id -> GPUs one host (one operating system, where a launch line runs) drives, where fewer than its node
holds: an NVL72 rack's NVLink domain is 72 GPUs, but each of its 18 compute trays is a host of 2 Grace CPUs and 4
Blackwell GPUs (NVIDIA GB200 NVL72 and GB300 NVL72 datasheets), so a server over more than 4 GPUs starts on
several trays, as over several nodes."""


def host_devices(target_id: str) -> int:
    """GPUs one host of ``target_id`` drives: ``HOST_DEVICES``, else its node's (``node_devices``)."""
    return HOST_DEVICES.get(target_id, node_devices(target_id))


def node_devices(target_id: str) -> int:
    """Devices one node of ``target_id`` holds: what its scale-up link joins (``NODE_DEVICES``, else 8)."""
    return NODE_DEVICES.get(target_id, DEFAULT_NODE_DEVICES)


def link(link_id: str) -> Link:
    """The link named ``link_id`` (``ib-ndr``, ``pcie5``...), or one line naming the ones there are."""
    key = link_id.strip().lower()
    if key not in LINKS:
        raise BadInputError(f"unknown link {shown(link_id)}: one of {', '.join(LINKS)}")
    return LINKS[key]


NETWORK_LINKS = tuple(link_id for link_id in LINKS if link_id.startswith(("ib-", "roce-")))
"""The links that join nodes (``--inter-node-link``): InfiniBand and RoCE ports."""


def network_link(link_id: str) -> Link:
    """The network link named ``link_id`` (``NETWORK_LINKS``), or one line naming them."""
    key = link_id.strip().lower()
    if key not in NETWORK_LINKS:
        raise BadInputError(
            f"--inter-node-link {shown(link_id)}: give a network link, one of {', '.join(NETWORK_LINKS)}"
        )
    return LINKS[key]


def host_link(target_id: str) -> Link:
    """The link between one device of ``target_id`` and its host's memory."""
    return LINKS[NODE_LINKS.get(target_id, (DEFAULT_HOST_LINK, "", ""))[0]]


def scale_out_link(target_id: str) -> Link:
    """The default link between nodes, per device of ``target_id`` (its reference server's network card)."""
    return LINKS[NODE_LINKS.get(target_id, ("", DEFAULT_SCALE_OUT_LINK, ""))[1]]


def scale_out_basis(target_id: str) -> str:
    """Why ``scale_out_link`` picks its link for ``target_id``: the reference server's guide, or, where none fixes it
    (PCIe cards, parts the table does not name), an assumption that says so (``ASSUMED``)."""
    if target_id in NODE_LINKS:
        return NODE_LINKS[target_id][2]
    return f"{ASSUMED}: no reference server for this part, one 100 GbE port per GPU; give --inter-node-link for yours"


def scale_up_gbs(interconnect_gbs: float | None) -> float:
    """One direction of a target's device-to-device link in GB/s (``interconnect_gbs`` is both directions), or the
    host link's PCIe 4.0 rate where the row states none."""
    return interconnect_gbs / 2 if interconnect_gbs else LINKS[DEFAULT_HOST_LINK].gbs
