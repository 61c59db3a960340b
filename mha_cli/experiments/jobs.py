"""Training runs spread over worker processes: the same numbers as one process, sooner.

Each job (one model, one seed) seeds itself and runs with the experiment's fixed CPU threads and
deterministic algorithms, so its result does not depend on which process runs it or on how many run
at once: ``--workers 1`` and ``--workers 2`` give identical results (a test checks it). On CPU the default
is one worker per core, at most ``MAX_DEFAULT_WORKERS``; on CUDA the jobs run one after another in this
process (they share one device).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import TypeVar

import torch

Job = TypeVar("Job")
Result = TypeVar("Result")

MAX_DEFAULT_WORKERS = 2
"""The default worker count on CPU is the core count, capped here (the default runs are sized for 2 cores)."""


def default_workers(device: torch.device) -> int:
    """Worker processes for ``device``: 1 on CUDA, else the CPU cores up to ``MAX_DEFAULT_WORKERS``."""
    if device.type != "cpu":
        return 1
    return max(1, min(MAX_DEFAULT_WORKERS, os.cpu_count() or 1))


def run_jobs(
    work: Callable[[Job], Result],
    jobs: Sequence[Job],
    *,
    workers: int,
    on_done: Callable[[Result], None] | None = None,
) -> list[Result]:
    """``[work(job) for job in jobs]``, in ``workers`` spawned processes when more than one.

    ``work`` must be a module-level function and jobs and results picklable. ``on_done`` is called in
    this process as each result arrives (for a progress bar). Results come back in the order of ``jobs``.
    """
    if workers <= 1 or len(jobs) <= 1:
        results = []
        for job in jobs:
            results.append(work(job))
            if on_done is not None:
                on_done(results[-1])
        return results
    done: dict[int, Result] = {}
    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=get_context("spawn"))
    try:
        futures = {pool.submit(work, job): index for index, job in enumerate(jobs)}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            if on_done is not None:
                on_done(done[futures[future]])
    except BaseException:  # Ctrl-C or a failed job: do not wait minutes for the other jobs to finish
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [done[index] for index in range(len(jobs))]
