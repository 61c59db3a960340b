"""Facts read from this machine (for ``--target cpu``): its memory and its CPU's name. Pure Python."""

import os
from pathlib import Path


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
