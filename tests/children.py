"""The living child processes of the test process: what must not outlive a run (ranks, worker pools)."""

from __future__ import annotations

import os
from pathlib import Path


def living_children() -> list[int]:
    """Pids of this process's living children. multiprocessing's resource tracker is not counted: the first
    spawned worker pool of a pytest run starts it, and it lives as long as pytest."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"resource_tracker" not in command:
            pids.append(int(stat.parent.name))
    return pids
