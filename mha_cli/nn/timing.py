"""Timing one call of a step, shared by ``mha bench`` and ``mha verify``.

Warm-up calls first, then ``reps`` timed calls: on CUDA each between a pair of ``torch.cuda.Event``s
(read after one synchronisation at the end, so timing adds no host round trip per call), elsewhere
with ``time.perf_counter`` between device synchronisations. The CUDA timer takes its torch functions
as parameters so its arithmetic can be tested without a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from mha_cli.nn.device import synchronize


def time_step(step: Callable[[], object], device: torch.device, warmup: int, reps: int) -> list[float]:
    """Seconds per call of ``step``, each timed between device synchronisations, after ``warmup`` calls."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(reps):
        synchronize(device)
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def time_with_events(
    step: Callable[[], object],
    warmup: int,
    reps: int,
    *,
    event: Callable[..., Any] | None = None,
    synchronize_all: Callable[[], None] | None = None,
) -> list[float]:
    """Seconds per call, from CUDA events recorded around each call on the current stream.

    ``event`` and ``synchronize_all`` default to ``torch.cuda.Event`` and ``torch.cuda.synchronize``.
    """
    make_event = torch.cuda.Event if event is None else event
    sync = torch.cuda.synchronize if synchronize_all is None else synchronize_all
    for _ in range(warmup):
        step()
    sync()
    pairs = []
    for _ in range(reps):
        start, end = make_event(enable_timing=True), make_event(enable_timing=True)
        start.record()
        step()
        end.record()
        pairs.append((start, end))
    sync()
    return [start.elapsed_time(end) / 1e3 for start, end in pairs]  # elapsed_time is in ms


def time_calls(step: Callable[[], object], device: torch.device, warmup: int, reps: int) -> tuple[list[float], str]:
    """(seconds per call, timer name): CUDA events on CUDA, synchronised perf_counter elsewhere."""
    if device.type == "cuda":
        with torch.cuda.device(device):
            return time_with_events(step, warmup, reps), "cuda-events"
    return time_step(step, device, warmup, reps), "perf_counter"
