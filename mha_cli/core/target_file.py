"""A target defined in a small YAML file (``--target my-gpu.yaml``), so a chip the table lacks is never a dead end.

The file is read bounded and with a safe YAML loader (``core.config_io.read_mapping``) and validated by
``TargetFile``: unknown fields refused, every figure in the unit its name states, one line per error (exit 2). The
path as typed is the target's id, so ``4xmy-gpu.yaml`` is four of the device, and every command line the tool prints
with it (``--target 8xmy-gpu.yaml``) names the same file. ``mha targets --schema`` prints the fields.
"""

import contextlib
import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from mha_cli.core.errors import BadInputError, shown_path
from mha_cli.core.record import Record

MAX_TARGET_FILE_BYTES = 64 * 1024
"""A target file is a dozen lines; anything larger is not one."""
HBM_VISIBLE = 0.99
"""``torch_memory_gib`` when the file leaves it out: 99% of the vendor's GB, read as GiB (H100 79.19 of 80, H200
139.80 of 141, B200 178.35 of 180), the table's rule for a device without a public torch figure."""
AMD_VISIBLE = 0.9999
"""The same for an AMD part: ROCm shows nearly all of it (MI300X: torch 2.6 on ROCm 6.2.4 reads 196,592 MiB, 191.98
GiB of 192: ROCm/ROCm#4203, the table's row; trial 397 #5: 99% left an AMD file 1.9 GiB short)."""


VENDORS = {name.lower(): name for name in ("NVIDIA", "AMD", "Intel", "Google", "Apple")}
"""The vendors of the targets table, as it spells them (``mha_cli/data/hardware_targets.csv``), by lower case."""


COMPUTE_CAPABILITY_BELOW = 16
"""A target file's compute capability is below this: NVIDIA's newest parts are 12.x (RTX PRO 6000, GB10), so 90 or
100, a dropped decimal point, is refused rather than read as a GPU generations ahead."""

_NOT_NVIDIA = "an NVIDIA GPU's CUDA figure, and vendor is {vendor}: leave it out (or give vendor: NVIDIA)"


MIN_BANDWIDTH_GBS = 10.0
"""A target file's memory bandwidth is at least this many GB/s: a laptop CPU's DDR has 50 or more, an H100 3,350, so
a figure below is one in TB/s."""
MAX_BANDWIDTH_GBS = 100_000.0
"""A target file's memory bandwidth is at most this many GB/s: a B300's HBM3e has 8,000, so a figure above is one in
MB/s (trial 320 #11: 4,000,000 was priced)."""
MAX_MEMORY_GB = 8192.0
"""A target file's device memory is at most this many GB: a B300 has 288, a unified-memory machine 512, so a figure
above is one in MB (trial 338 #4: 144,000 was priced, a billion KV tokens)."""
MIN_MEMORY_GB = 1.0
"""No accelerator that serves a transformer has under 1 GB (trial 351 #7: 0.096, terabytes written as GB, was priced)."""
MIN_TORCH_SHARE = 0.25
"""torch's total is at least this share of the vendor's GB: 0.92 to 0.99 on every shipped target, and a unified-memory
part whose GPU is given a carve-out reads less (a Strix Halo set to 96 of 128 GB: 0.75, review 356 #4), so only a
figure in another unit or another device's falls below it (trial 351 #7: 0.5 GiB of 96 GB)."""
INTERCONNECT_GBS_RANGE = (20.0, 100_000.0)
"""A target file's device-to-device bandwidth in GB/s lies in this range: an NVLink bridge has 112.5, NVLink5 1,800,
PCIe 4.0 x16 64; below is a figure in TB/s (trial 338 #4: 1.8 made every collective 25 times slower), above one in
MB/s."""
MAX_DENSE_TFLOPS = 50_000.0
"""A target file's dense throughput is at most this many TFLOP/s at any precision: a B300's dense fp4 is about
15,000, so a figure above is one in GFLOP/s."""


class TargetFile(Record):
    """One accelerator, as the rows of ``mha targets`` describe theirs."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    name: str = Field(min_length=1, max_length=200)
    """What the device is called (``Acme X1 96GB``)."""
    vendor: str = Field(min_length=1, max_length=40)
    """``NVIDIA`` or ``AMD``: the engines' GPU memory rules and the fitted priors apply as to those vendors' GPUs;
    any other vendor is priced with them too, and the output says it is a sketch."""
    memory_gb: float = Field(gt=0, le=1e6)
    """Device memory as the datasheet writes it, the number alone (an H100's "80GB": 80; a card sold as "96 GB
    HBM3": 96). mha reads it as binary GB, 2^30 B each, as the rows of ``mha targets`` read theirs; torch sees less
    (79.19 GiB of an H100's 80): give that as ``torch_memory_gib`` where you have it (trial 326 #7)."""
    memory_bandwidth_gbs: float = Field(gt=0, le=1e7)
    """Peak memory bandwidth in GB/s (an H100 SXM: 3350)."""
    bf16_tflops_dense: float = Field(gt=0, le=1e7)
    """Dense (not 2:4 sparse) bf16 tensor throughput in TFLOP/s; fp16's where the device has no bf16."""
    bf16_native: bool = True
    """False when the device has no bf16 and ``bf16_tflops_dense`` is fp16's (Volta, Turing)."""
    fp8_tflops_dense: float | None = Field(default=None, gt=0, le=1e7)
    """Dense fp8 tensor throughput in TFLOP/s; leave out when the device has no fp8."""
    fp4_tflops_dense: float | None = Field(default=None, gt=0, le=1e7)
    """Dense fp4 tensor throughput in TFLOP/s; leave out when the device has no fp4."""
    interconnect_gbs: float | None = Field(default=None, gt=0, le=1e7)
    """Device-to-device bandwidth in GB/s, total bidirectional (NVLink4: 900); leave out for PCIe only."""
    torch_memory_gib: float | None = Field(default=None, gt=0, le=1e6)
    """Memory as torch sees it, in GiB: ``torch.cuda.mem_get_info()[1] / 2**30`` (an H100 80GB: 79.19). Plans use
    it. Left out: 99% of ``memory_gb`` (99.99% on an AMD part), an estimate the output flags."""
    compute_capability: float | None = Field(default=None, ge=1, lt=COMPUTE_CAPABILITY_BELOW)
    """An NVIDIA GPU's CUDA compute capability, major.minor with one digit after the point (an H100: 9.0, a B200:
    10.0, an RTX PRO 6000: 12.0; https://developer.nvidia.com/cuda-gpus): required for an NVIDIA GPU, left out for
    another vendor's. vLLM's defaults follow it (its sampler from 7.5, CUDA graphs up to 1,024 tokens on 10.x, its
    attention and MoE kernels), and the formats a GPU is offered (fp8 from 8.9, NVFP4 from 10.0)."""
    source: str = Field(min_length=1, max_length=2000)
    """Where the figures come from (``SOURCE_MEANS``)."""
    notes: str = Field(default="", max_length=4000)
    """Anything a reader of the figures should know (write UNCERTAIN to flag a figure in ``mha targets``)."""

    @field_validator("vendor")
    @classmethod
    def _vendor_as_the_table_spells_it(cls, vendor: str) -> str:
        """``nvidia`` or ``Nvidia`` is NVIDIA: the engines' rules and the priors compare the table's spelling, so a
        vendor written in another case was priced as an unknown vendor's device (no CUDA graphs, another sampler)."""
        return VENDORS.get(vendor.strip().lower(), vendor)

    @field_validator("compute_capability", mode="before")
    @classmethod
    def _capability_with_its_point(cls, capability: Any, info: ValidationInfo) -> Any:
        """90 for 9.0 (the way ``sm_90`` spells it) is refused with the figure meant, before the bound's bare "must
        be less than 16" (trial 309 #7); another vendor's file is told to leave the field out, whatever its figure
        (review 310 #3)."""
        if capability is None:
            return capability
        if info.data.get("vendor", "NVIDIA") != "NVIDIA":
            raise ValueError(_NOT_NVIDIA.format(vendor=info.data["vendor"]))
        number = isinstance(capability, int | float) and not isinstance(capability, bool) and math.isfinite(capability)
        whole = number and capability == int(capability)  # inf and nan: the bound's own words
        if whole and 20 <= capability < 200:  # 2.0-19.9 written without its point
            raise ValueError(
                f"{capability:g} is written without its point: give {capability / 10:.1f} (major.minor, as"
                " developer.nvidia.com/cuda-gpus lists it; an H100: 9.0)"
            )
        return capability

    @model_validator(mode="after")
    def _torch_memory_within_the_device(self) -> "TargetFile":
        if self.torch_memory_gib is not None and self.torch_memory_gib > self.memory_gb:
            raise ValueError(
                f"torch_memory_gib ({self.torch_memory_gib:g}) is above memory_gb ({self.memory_gb:g}): give what"
                " torch.cuda.mem_get_info()[1] / 2**30 reads on the device"
            )
        capability = self.compute_capability
        if capability is not None and abs(capability * 10 - round(capability * 10)) > 1e-9:  # 9.0, 8.9, 10.3
            raise ValueError(
                f"compute_capability {capability:g} is not major.minor with one minor digit (an H100: 9.0, 8.9 an"
                " L40S): give the figure https://developer.nvidia.com/cuda-gpus lists"
            )
        if capability is None and self.vendor == "NVIDIA":  # trial 309 #1: left out, vLLM's rules were guessed
            raise ValueError(
                "compute_capability: required for an NVIDIA GPU (an H100: 9.0, a B200: 10.0;"
                " developer.nvidia.com/cuda-gpus): vLLM's sampler, CUDA graphs and kernels follow it"
            )
        self._figures_in_their_units()
        self._precisions_the_capability_has()
        return self

    def _precisions_the_capability_has(self) -> None:
        """Refuse an fp8 or fp4 throughput an NVIDIA GPU of this capability cannot have (trial 316 #5: fp8 at 300
        TFLOP/s on a 7.0 device was priced): its fp8 tensor cores start at 8.9 (Ada), fp4 at 10.0 (Blackwell)."""
        capability = self.compute_capability
        if capability is None:
            return
        for name, first, family in (("fp8_tflops_dense", 8.9, "Ada"), ("fp4_tflops_dense", 10.0, "Blackwell")):
            if getattr(self, name) is not None and capability < first:
                raise ValueError(
                    f"{name} on compute capability {capability:.1f}: NVIDIA GPUs compute in that precision from"
                    f" {first:g} ({family}) on: leave it out"
                )

    def _figures_in_their_units(self) -> None:
        """Refuse a figure in another unit than its name's (trial 297 #9: 0.896 GB/s, TB/s written as GB/s, priced a
        22.6 s decode step with exit 0) or a lower precision slower than bf16 (fp8 100 against bf16 200)."""
        if self.memory_bandwidth_gbs < MIN_BANDWIDTH_GBS:
            raise ValueError(
                f"memory_bandwidth_gbs {self.memory_bandwidth_gbs:g} is in GB/s, and no accelerator has under"
                f" {MIN_BANDWIDTH_GBS:g}: a figure in TB/s is {self.memory_bandwidth_gbs * 1000:g} GB/s"
            )
        if self.memory_bandwidth_gbs > MAX_BANDWIDTH_GBS:
            raise ValueError(
                f"memory_bandwidth_gbs {self.memory_bandwidth_gbs:g} is in GB/s, and no accelerator has over"
                f" {MAX_BANDWIDTH_GBS:,.0f}: a figure in MB/s is {self.memory_bandwidth_gbs / 1000:g} GB/s"
            )
        if self.memory_gb < MIN_MEMORY_GB:
            raise ValueError(
                f"memory_gb {self.memory_gb:g} is in GB, and no accelerator that serves a model has under"
                f" {MIN_MEMORY_GB:g}: a figure in TB is {self.memory_gb * 1000:g} GB"
            )
        if self.memory_gb > MAX_MEMORY_GB:
            raise ValueError(
                f"memory_gb {self.memory_gb:g} is in GB, and no accelerator has over {MAX_MEMORY_GB:,.0f}: a figure in"
                f" MB is {self.memory_gb / 1000:g} GB"
            )
        torch_total = self.torch_memory_gib
        if torch_total is not None and torch_total < MIN_TORCH_SHARE * self.memory_gb:
            raise ValueError(
                f"torch_memory_gib {torch_total:g} is under {MIN_TORCH_SHARE:.0%} of memory_gb ({self.memory_gb:g}):"
                " give what torch.cuda.mem_get_info()[1] / 2**30 reads on the device in GiB (an H100's 79.19 of 80),"
                " or leave it out"
            )
        low, high = INTERCONNECT_GBS_RANGE
        link = self.interconnect_gbs
        if link is not None and not low <= link <= high:
            unit, value = ("TB/s", link * 1000) if link < low else ("MB/s", link / 1000)
            raise ValueError(
                f"interconnect_gbs {link:g} is in GB/s, and device links run {low:g} to {high:,.0f}: a figure in {unit} is"
                f" {value:g} GB/s (leave it out for PCIe only)"
            )
        for name in ("bf16_tflops_dense", "fp8_tflops_dense", "fp4_tflops_dense"):
            value = getattr(self, name)
            if value is not None and value > MAX_DENSE_TFLOPS:
                raise ValueError(
                    f"{name} {value:g} is in TFLOP/s, dense, and no accelerator has over {MAX_DENSE_TFLOPS:,.0f}: a"
                    f" figure in GFLOP/s is {value / 1000:g} TFLOP/s (or a sparse one twice the dense)"
                )
        for name in ("fp8_tflops_dense", "fp4_tflops_dense"):
            value = getattr(self, name)
            if value is not None and value < self.bf16_tflops_dense:
                raise ValueError(
                    f"{name} ({value:g}) is below bf16_tflops_dense ({self.bf16_tflops_dense:g}): where a device has"
                    " the precision it runs at least bf16's rate; leave it out if the device has none"
                )

    def target_fields(self, target_id: str) -> dict[str, Any]:
        """The fields of the ``core.targets.Target`` this file describes, under ``target_id`` (the path as typed)."""
        measured = self.torch_memory_gib is not None
        amd = self.vendor == "AMD"
        visible = AMD_VISIBLE if amd else HBM_VISIBLE
        seen = "ROCm reads an AMD part (MI300X 191.98 of 192)" if amd else "HBM GPUs read (H100 79.19 of 80)"
        return dict(
            id=target_id, name=self.name, vendor=self.vendor, memory_gb=self.memory_gb,
            memory_bandwidth_gbs=self.memory_bandwidth_gbs, bf16_tflops_dense=self.bf16_tflops_dense,
            bf16_native=self.bf16_native, fp8_tflops_dense=self.fp8_tflops_dense,
            fp8_native=self.fp8_tflops_dense is not None, fp4_tflops_dense=self.fp4_tflops_dense,
            interconnect_gbs=self.interconnect_gbs, compute_capability=self.compute_capability, source=f"{target_id}: {self.source}", notes=self.notes,
            torch_memory_gib=self.torch_memory_gib if measured else round(visible * self.memory_gb, 2),
            torch_memory_source=f"{target_id}: torch_memory_gib" if measured else (
                f"estimate (not in the target file): {visible:.2%} of memory_gb as GiB, as {seen}; give"
                " torch_memory_gib"
            ),
        )  # fmt: skip


def read_target_file(path_text: str) -> TargetFile:
    """The file at ``path_text``, validated; read again only when it changes."""
    try:
        info = os.stat(path_text)
    except (OSError, ValueError):  # missing, unreadable, a NUL in the name: reading it says which, in one line
        return _read(path_text)
    return _read_unchanged(os.path.abspath(path_text), info.st_mtime_ns, info.st_size, path_text)


@lru_cache(maxsize=16)
def _read_unchanged(abspath: str, mtime_ns: int, size: int, path_text: str) -> TargetFile:
    return _read(path_text)


SOURCE_MEANS = "where the figures come from, a datasheet's title or URL"
"""What a target file's ``source`` holds, said where it is missing (trial 340 #10)."""


def _read(path_text: str) -> TargetFile:
    from mha_cli.core.config_io import read_mapping  # the YAML reader: imported only for a file target
    from mha_cli.core.validation import describe_validation_error

    path, where = Path(path_text), f"target file {shown_path(path_text)}"
    with contextlib.suppress(OSError, ValueError):  # read_mapping refuses what cannot be read, in one line
        if path.stat().st_size > MAX_TARGET_FILE_BYTES:
            raise BadInputError(f"{where}: larger than {MAX_TARGET_FILE_BYTES // 1024} KiB; is this a target file?")
    data = read_mapping(path)
    try:
        return TargetFile.model_validate(data)
    except ValidationError as exc:
        described = describe_validation_error(exc).replace("`mha schema` lists the fields", "`mha targets --schema`")
        described = described.replace("source: missing (required)", f"source: missing (required: {SOURCE_MEANS})")
        raise BadInputError(f"{where}: {described}") from None


def target_file_example(row: dict[str, Any]) -> dict[str, Any]:
    """The fields of a target file that describes a row of the table (``Target.model_dump()``)."""
    given = {name: row[name] for name in TargetFile.model_fields if row.get(name) not in (None, "")}
    return {name: value for name, value in given.items() if not (name == "bf16_native" and value)}


def target_file_json_schema(example: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a target file, each field described, ``example`` (a valid file) with it."""
    from mha_cli.core.schema_export import JSON_SCHEMA_DIALECT, attribute_docstrings

    schema = TargetFile.model_json_schema()
    schema["$schema"] = JSON_SCHEMA_DIALECT
    schema["title"] = "mha target file"
    schema["description"] = (
        "A device the targets table lacks, for --target FILE.yaml (N x it: --target NxFILE.yaml)."
        " Dense figures: a datasheet's 2:4 sparse figures halved."
    )
    for field, doc in attribute_docstrings(TargetFile).items():
        schema["properties"][field]["description"] = " ".join(doc.split())
    # compute_capability: required for an NVIDIA GPU, absent for another vendor's (review 310 #4)
    schema["if"] = {"properties": {"vendor": {"const": "NVIDIA"}}, "required": ["vendor"]}
    schema["then"] = {"required": ["compute_capability"]}
    schema["else"] = {"not": {"required": ["compute_capability"]}}
    schema["examples"] = [example]
    return schema
