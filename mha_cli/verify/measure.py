"""Measurements: tensor bytes, the CUDA allocator's change and its check, timing summaries, copy bandwidth.

Step timings come from ``mha_cli.nn.timing`` (CUDA events on CUDA, synchronised perf_counter
elsewhere), re-exported here with the cache fill of ``mha_cli.nn.cache_ops``. The CUDA pieces take
their torch functions as parameters so the arithmetic can be tested without a GPU.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

from mha_cli.core.targets import match_target as match_target
from mha_cli.nn.cache_ops import fill_random as fill_random
from mha_cli.nn.device import synchronize
from mha_cli.nn.timing import time_calls as time_calls
from mha_cli.nn.timing import time_with_events as time_with_events
from mha_cli.verify.report import AllocatorCheck, TimingStats

COPY_BYTES = 64 * 2**20
"""Size of the buffer the CPU copy-bandwidth probe copies (well beyond the caches)."""
COPY_REPS = 15
"""Copies the CPU peak is the best of (about 0.1 s in all)."""


ALLOCATOR_BLOCK_ROUNDING = 512
"""The CUDA caching allocator rounds every block up to a multiple of 512 bytes."""
ALLOCATOR_UNSPLIT_REMAINDER = 2**20
"""A block may come with up to 1 MiB more than asked: a large segment's remainder of at most 1 MiB stays attached."""
TOLERANCE_RULE = (
    "expected <= allocator change <= expected + tensors x (1 MiB + 512 B): blocks round up to 512 B and a"
    " segment remainder of at most 1 MiB is not split off"
)


def total_cache_bytes(caches: Iterable[object]) -> int:
    """Exact bytes of every cache's tensors (each cache's ``nbytes``), summed."""
    return sum(cache.nbytes for cache in caches)


def tensors_of(obj: object) -> list[torch.Tensor]:
    """The tensors an object holds as attributes (a cache's buffers), for counting allocations."""
    return [value for value in vars(obj).values() if isinstance(value, torch.Tensor)]


def allocator_tolerance(n_tensors: int) -> int:
    """Largest overcount the caching allocator can show for ``n_tensors`` allocations (see ``TOLERANCE_RULE``)."""
    return n_tensors * (ALLOCATOR_UNSPLIT_REMAINDER + ALLOCATOR_BLOCK_ROUNDING)


def within_allocator_tolerance(change: int, expected: int, n_tensors: int) -> bool:
    """The allocator never hands out less than asked, and at most ``allocator_tolerance`` more."""
    return expected <= change <= expected + allocator_tolerance(n_tensors)


class AllocatorProbe:
    """Reads the CUDA caching allocator: allocated bytes now, and the peak since a reset.

    The torch functions are parameters so the bookkeeping can be tested without a GPU.
    """

    def __init__(
        self,
        device: torch.device,
        *,
        memory_allocated: Callable[[Any], int] | None = None,
        max_memory_allocated: Callable[[Any], int] | None = None,
        reset_peak_memory_stats: Callable[[Any], None] | None = None,
    ) -> None:
        self.device = device
        self._allocated = memory_allocated or torch.cuda.memory_allocated
        self._peak = max_memory_allocated or torch.cuda.max_memory_allocated
        self._reset = reset_peak_memory_stats or torch.cuda.reset_peak_memory_stats

    def allocated(self) -> int:
        return int(self._allocated(self.device))

    def reset_peak(self) -> None:
        self._reset(self.device)

    def peak(self) -> int:
        return int(self._peak(self.device))


def allocator_check(
    *,
    baseline: int,
    after_weights: int,
    after_cache: int,
    before_prefill: int,
    prefill_peak: int,
    weights_expected: int,
    weights_tensors: int,
    cache_expected: int,
    cache_tensors: int,
    predicted_workspace: int,
) -> AllocatorCheck:
    """The allocator's changes (bytes) against the expected bytes, within ``allocator_tolerance``."""
    weights_change, cache_change = after_weights - baseline, after_cache - after_weights
    return AllocatorCheck(
        baseline_bytes=baseline, weights_change_bytes=weights_change, weights_expected_bytes=weights_expected,
        weights_tolerance_bytes=allocator_tolerance(weights_tensors), weights_tensors=weights_tensors,
        cache_change_bytes=cache_change, cache_expected_bytes=cache_expected,
        cache_tolerance_bytes=allocator_tolerance(cache_tensors), cache_tensors=cache_tensors,
        prefill_peak_bytes=prefill_peak - before_prefill, predicted_workspace_bytes=predicted_workspace,
        tolerance_rule=TOLERANCE_RULE,
        weights_ok=within_allocator_tolerance(weights_change, weights_expected, weights_tensors),
        cache_ok=within_allocator_tolerance(cache_change, cache_expected, cache_tensors),
    )  # fmt: skip


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
    single copy on a shared CPU varies about 2x; the best of 15 repeats within a few per cent on an idle machine.
    """
    return max(copy_rates(device, n_bytes, reps))


def copy_rates(device: torch.device, n_bytes: int = COPY_BYTES, reps: int = COPY_REPS) -> list[float]:
    """Each of ``reps`` copies' bytes per second (``copy_bandwidth``), after one warm-up: their spread says whether
    the machine was busy while the peak was measured."""
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device).uniform_()  # (n,)
    dst = torch.empty_like(src)  # (n,)
    dst.copy_(src)
    rates = []
    for _ in range(reps):
        synchronize(device)
        start = time.perf_counter()
        dst.copy_(src)
        synchronize(device)
        rates.append(2 * src.nbytes / (time.perf_counter() - start))
    return rates
