"""Measurements: cache bytes, the CUDA allocator's change, timing summaries, copy bandwidth.

Step timings come from ``mha_cli.nn.timing`` (CUDA events on CUDA, synchronised perf_counter
elsewhere), re-exported here with the cache fill of ``mha_cli.nn.cache_ops``. The CUDA pieces take
their torch functions as parameters so the arithmetic can be tested without a GPU.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

from mha_cli.core.targets import Target, load_targets
from mha_cli.nn.cache_ops import fill_random as fill_random
from mha_cli.nn.device import synchronize
from mha_cli.nn.kv_cache import KVCache, LatentCache
from mha_cli.nn.timing import time_calls as time_calls
from mha_cli.nn.timing import time_with_events as time_with_events
from mha_cli.verify.report import TimingStats

COPY_BYTES = 64 * 2**20
"""Size of the buffer the CPU copy-bandwidth probe copies (well beyond the caches)."""
COPY_REPS = 15
"""Copies the CPU peak is the best of (about 0.1 s in all)."""


def total_cache_bytes(caches: Iterable[KVCache | LatentCache]) -> int:
    """Exact bytes of every cache tensor (``nbytes``), summed."""
    return sum(cache.nbytes for cache in caches)


def allocated_bytes(device: torch.device, memory_allocated: Callable[[Any], int] | None = None) -> int | None:
    """Bytes the CUDA caching allocator has handed out on ``device``; ``None`` off CUDA."""
    if device.type != "cuda":
        return None
    read = torch.cuda.memory_allocated if memory_allocated is None else memory_allocated
    return int(read(device))


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_allocated_bytes(device: torch.device) -> int | None:
    return int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None


def summarise(times_s: list[float], *, warmup: int, timer: str) -> TimingStats:
    """Median, min, max and interquartile spread, in milliseconds."""
    ms = sorted(t * 1e3 for t in times_s)
    spread = 0.0
    if len(ms) >= 2:
        q1, _, q3 = statistics.quantiles(ms, n=4, method="inclusive")
        spread = q3 - q1
    return TimingStats(
        reps=len(ms), warmup=warmup, median_ms=statistics.median(ms), min_ms=ms[0], max_ms=ms[-1],
        spread_ms=spread, timer=timer,
    )  # fmt: skip


def copy_bandwidth(device: torch.device, n_bytes: int = COPY_BYTES, reps: int = COPY_REPS) -> float:
    """Achieved bytes per second of ``dst.copy_(src)``, counting the read and the write (2 x n_bytes).

    The best of ``reps`` copies, after one warm-up: the figure a streaming kernel can reach here. A
    single copy on a shared CPU varies about 2x; the best of 15 repeats within a few per cent.
    """
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device).uniform_()  # (n,)
    dst = torch.empty_like(src)  # (n,)
    dst.copy_(src)
    best = float("inf")
    for _ in range(reps):
        synchronize(device)
        start = time.perf_counter()
        dst.copy_(src)
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return 2 * src.nbytes / best


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
