"""Training runs spread over worker processes: the same numbers as one process, sooner.

Each job (one model, one seed) seeds itself and runs with the experiment's fixed CPU threads and
deterministic algorithms, so its result does not depend on which process runs it or on how many run
at once: ``--workers 1`` and ``--workers 2`` give identical results (a test checks it). On CPU the default
is one worker per core this process may use, at most ``MAX_DEFAULT_WORKERS``; on CUDA the jobs run one
after another in this process (they share one device). A count asked (``--workers N``) runs as asked up to
the usable cores and the jobs, and the run says so where it ran fewer (``workers_for``).

A job that raises, or Ctrl-C, ends the run at once: the other workers are terminated, not waited for
(they ignore SIGINT themselves, so Ctrl-C reaches only this process and prints no worker tracebacks).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from functools import partial
from multiprocessing import get_context
from typing import Any, NamedTuple, TypeVar

import torch

Job = TypeVar("Job")
Result = TypeVar("Result")

MAX_DEFAULT_WORKERS = 2
"""The default worker count on CPU is the usable core count, capped here (the default runs are sized for 2 cores)."""


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform tells it, else the machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_workers(device: torch.device) -> int:
    """Worker processes for ``device``: 1 on CUDA, else the usable cores up to ``MAX_DEFAULT_WORKERS``."""
    if device.type != "cpu":
        return 1
    return max(1, min(MAX_DEFAULT_WORKERS, usable_cores()))


class WorkerCount(NamedTuple):
    """The worker processes a run starts, ``used``, of those ``asked`` (``--workers``; None: the default)."""

    asked: int | None
    used: int
    cores: int
    """The cores this process may use (``usable_cores``)."""
    jobs: int

    @property
    def said(self) -> str:
        """For the progress line: ``2 workers``, or where fewer ran than asked ``12 asked, 2 used: 2 usable cores``
        (or ``: 1 training``, where the jobs were fewer)."""
        if self.asked is None or self.used == self.asked:
            return f"{self.used} worker{'s' if self.used != 1 else ''}"
        limit = (
            f"{self.cores} usable core{'s' if self.cores != 1 else ''}"
            if self.used == self.cores
            else f"{self.jobs} training{'s' if self.jobs != 1 else ''}"
        )
        return f"{self.asked} asked, {self.used} used: {limit}"


def workers_for(asked: int | None, device: torch.device, jobs: int) -> WorkerCount:
    """The processes to start for ``jobs`` trainings: ``asked`` (else ``default_workers``), capped at the jobs and
    at the usable cores. Each process trains on one torch thread, so a process past the cores only waits its turn
    and slows the others: ``--workers 12`` on 2 cores took 135 s against 19 s for 2 (``mha experiment heads``)."""
    cores = usable_cores()
    wanted = default_workers(device) if asked is None else asked
    return WorkerCount(asked, max(1, min(wanted, cores, jobs)), cores, jobs)


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
    done: dict[int, Any] = {}
    pool = get_context("spawn").Pool(processes=min(workers, len(jobs)), initializer=_ignore_interrupts)  # no idle ones
    try:
        for index, result in pool.imap_unordered(partial(_indexed, work), enumerate(jobs)):
            done[index] = result
            if on_done is not None:
                on_done(result)
    except BaseException:  # a job raised, or Ctrl-C: stop the other workers now, not after their jobs
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
    return [done[index] for index in range(len(jobs))]


def _indexed(work: Callable[[Any], Any], item: tuple[int, Any]) -> tuple[int, Any]:
    """(index, work(job)) for ``item`` = (index, job): results arrive out of order and are put back in place."""
    index, job = item
    return index, work(job)


def _ignore_interrupts() -> None:
    """Worker initialiser: Ctrl-C is the parent's to handle (it terminates the workers), and the SIGTERM of
    ``pool.terminate`` ends a worker silently: a spawned worker inherits the console's handler, which printed
    "error: stopped by SIGTERM" per worker beside the parent's one line (newuser trial 241)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
