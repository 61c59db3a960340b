"""A disaggregated deployment's serving loop, simulated: requests arriving at a rate pass a prefill worker, the KV
transfer and a decode worker, and their TTFT and TPOT come out as distributions (mean, median, p90, p99).

- **Arrivals**: Poisson at ``rate`` (seeded), each request ``isl`` prompt and ``osl`` output tokens; the front
  (vLLM's proxy, SGLang's router in round-robin) sends request i to prefill worker i mod P and decode worker i mod D.
- **Prefill worker**: first come, first served; when free it takes every waiting prompt up to ``prompts_per_step``
  into one step (``prefill_seconds(m)`` for m prompts), and they finish together.
- **Transfer**: each request's cache is ready on its decode worker ``transfer_s`` after its prefill.
- **Decode worker**: a step loop; at each step's start it admits the ready requests while fewer than ``admitted``
  run, then runs one token for each (``decode_seconds(b)``). A request's first token ends its first step (the
  decode worker computes it again, as vLLM's NixlConnector does): TTFT = that time - arrival; TPOT = (finish - first
  token) / (osl - 1).

The steps' times come from the cost model (``core.cost.disaggregated_workers``). Pure Python.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import NamedTuple

from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.serve.stats import LatencyStats, summarise

MAX_SIMULATED_REQUESTS = 100_000


class PoolTimes(NamedTuple):
    """What the simulation needs of a split's workers, in seconds."""

    prefill_seconds: Callable[[int], float]
    """One prefill step of m prompts."""
    prompts_per_step: int
    decode_seconds: Callable[[int], float]
    """One decode step of b sequences."""
    admitted: int
    """Requests a decode worker runs at once."""
    transfer_s: float


class SimulatedSplit(Record):
    """One split's simulated run."""

    requests: int
    rate_rps: float
    ttft_ms: LatencyStats
    tpot_ms: LatencyStats
    duration_s: float
    max_running: int
    """The most requests one decode worker ran at once."""


def poisson_arrivals(rate: float, count: int, seed: int) -> list[float]:
    """``count`` arrival times (s) of a Poisson process at ``rate`` per second."""
    draw = random.Random(seed)
    times, now = [], 0.0
    for _ in range(count):
        now += draw.expovariate(rate)
        times.append(now)
    return times


def _prefilled(arrivals: list[float], times: PoolTimes) -> list[float]:
    """When each of one prefill worker's requests (arrival times, sorted) finishes its prefill."""
    done = [0.0] * len(arrivals)
    free, next_up = 0.0, 0
    while next_up < len(arrivals):
        start = max(free, arrivals[next_up])
        batch = next_up
        while batch < len(arrivals) and batch - next_up < times.prompts_per_step and arrivals[batch] <= start:
            batch += 1
        free = start + times.prefill_seconds(batch - next_up)
        for i in range(next_up, batch):
            done[i] = free
        next_up = batch
    return done


def _decoded(ready: list[float], times: PoolTimes, osl: int) -> tuple[list[float], list[float], int]:
    """(first token, finish) times of one decode worker's requests (ready times, sorted) and its largest batch."""
    first, finish = [0.0] * len(ready), [0.0] * len(ready)
    made = [0] * len(ready)
    running: list[int] = []
    now, waiting, most = 0.0, 0, 0
    while waiting < len(ready) or running:
        while waiting < len(ready) and ready[waiting] <= now and len(running) < times.admitted:
            running.append(waiting)
            waiting += 1
        if not running:
            now = ready[waiting]
            continue
        most = max(most, len(running))
        now += times.decode_seconds(len(running))
        for i in running:
            made[i] += 1
            if made[i] == 1:
                first[i] = now
            if made[i] == osl:
                finish[i] = now
        running = [i for i in running if made[i] < osl]
    return first, finish, most


def simulate_split(
    times: PoolTimes, *, prefill_workers: int, decode_workers: int, rate: float, osl: int, requests: int = 1000,
    seed: int = 0,
) -> SimulatedSplit:  # fmt: skip
    """``requests`` arriving at ``rate`` through ``prefill_workers`` and ``decode_workers`` (module docstring)."""
    if not 0 < rate < 1e9 or not 1 <= requests <= MAX_SIMULATED_REQUESTS or osl < 1:
        raise BadInputError("a simulated split needs a rate > 0, 1 to 100,000 requests and osl >= 1")
    arrivals = poisson_arrivals(rate, requests, seed)
    ready = [0.0] * requests
    for worker in range(prefill_workers):
        mine = list(range(worker, requests, prefill_workers))
        for i, done in zip(mine, _prefilled([arrivals[i] for i in mine], times), strict=True):
            ready[i] = done + times.transfer_s
    ttft, tpot, last, most = [], [], 0.0, 0
    for worker in range(decode_workers):
        mine = sorted(range(worker, requests, decode_workers), key=lambda i: ready[i])
        first, finish, largest = _decoded([ready[i] for i in mine], times, osl)
        most = max(most, largest)
        for i, f, end in zip(mine, first, finish, strict=True):
            ttft.append(f - arrivals[i])  # seconds: summarise reports milliseconds
            tpot.append((end - f) / max(1, osl - 1))
            last = max(last, end)
    return SimulatedSplit(requests=requests, rate_rps=rate, ttft_ms=summarise(ttft), tpot_ms=summarise(tpot),
                          duration_s=last, max_running=most)  # fmt: skip
