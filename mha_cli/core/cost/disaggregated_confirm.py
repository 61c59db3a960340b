"""``mha plan --disaggregated``'s pick confirmed in the simulated loop (``core.serve.disaggregated``).

The search ranks the splits by the closed form (``core.cost.disaggregated``: M/D/1 queues, targets read against
means), each at its closed-form goodput. Here the splits that meet the targets are run in the simulated loop at that
load, best first; a split whose loop misses (means against the targets, as the search reads them) is priced at the
most load the loop meets them at, found by bisection below its goodput (at a fixed ``--rate`` it misses instead).
A lowered split sells fewer tokens/s per GPU, so the next split is run while its closed-form figure beats the best
confirmed so far: the loop only lowers a load, so a split stopped at, and every one after it, cannot beat the pick.
The pick is the best confirmed split; the table's ``meets`` is the loop's verdict where it ran, else the closed
form's. Pure Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TypeVar

from mha_cli.core.quantities import format_ms, format_past
from mha_cli.core.serve.disaggregated import SimulatedSplit


class PricedSplit(Protocol):
    """What is read of a split (``core.cost.disaggregated.Split``, which imports this module)."""

    meets_targets: bool
    misses: list[str]
    rate_rps: float
    """The load priced (requests/s)."""
    goodput_rps: float
    ttft_ms: float
    output_tokens_per_s_per_gpu: float

    def model_copy(self, *, update: dict[str, Any]) -> Any: ...


Split = TypeVar("Split", bound=PricedSplit)

HALVINGS = 8
"""Bisection steps of a lowered load: within 1/256 of the closed form's goodput (17.38 req/s: 0.07 req/s)."""


class Confirmed(NamedTuple):
    """The splits with the loop's verdicts, best first; the pick (None: no split's loop meets the targets), its run
    and notes."""

    splits: list[PricedSplit]
    chosen: int | None
    simulated: SimulatedSplit | None
    notes: list[str]


def misses(run: SimulatedSplit, ttft_ms: float | None, itl_ms: float | None) -> list[str]:
    """The targets ``run`` misses, its means read against them (TTFT; TPOT for the ITL target); empty: it meets."""
    missed = []
    if ttft_ms is not None and run.ttft_ms.mean > ttft_ms:
        mean = format_past(run.ttft_ms.mean, ttft_ms, 0)
        missed.append(f"mean TTFT {mean} ms > {format_ms(ttft_ms)} ms (p99 {run.ttft_ms.p99:,.0f} ms)")
    if itl_ms is not None and run.tpot_ms.mean > itl_ms:  # to the decimal that shows the miss: 7.02 ms > 7
        mean = format_past(run.tpot_ms.mean, itl_ms, 1)
        missed.append(f"mean TPOT {mean} ms > {format_ms(itl_ms)} ms (p99 {run.tpot_ms.p99:,.1f} ms)")
    return missed


def confirm_splits(
    splits: list[Split],
    run: Callable[[Split, float], SimulatedSplit],
    at_load: Callable[[Split, float], Split],
    *,
    ttft_ms: float | None,
    itl_ms: float | None,
    fixed_rate: bool,
) -> Confirmed:
    """``splits`` (best first, the closed form's) confirmed in the loop (module docstring): ``run(split, rate)``
    simulates one at ``rate`` req/s, ``at_load(split, rate)`` prices it there in the closed form; ``fixed_rate``:
    the load is ``--rate``, never lowered."""
    out = list(splits)
    best: tuple[Split, SimulatedSplit, str | None] | None = None  # the pick, its run, the note where it was lowered
    for index, split in enumerate(splits):
        if not split.meets_targets or (best is not None and _sold(split) <= _sold(best[0])):
            break  # sorted: no later split meets, or beats the best confirmed
        first = run(split, split.rate_rps)
        missed = misses(first, ttft_ms, itl_ms)
        met = first if not missed else None if fixed_rate else _most_load_met(split, run, ttft_ms, itl_ms)
        if met is None:
            out[index] = split.model_copy(
                update={"meets_targets": False, "misses": [_as_miss(miss) for miss in missed]}
            )
            continue
        out[index] = split if met is first else at_load(split, met.rate_rps)
        note = None if met is first else (
            f"the pick's simulated loop missed at the closed form's {split.rate_rps:.3g} req/s ({', '.join(missed)}):"
            f" it is priced at {met.rate_rps:.3g} req/s, the most its loop meets the targets at (bisection)"
        )  # fmt: skip
        if best is None or _sold(out[index]) > _sold(best[0]):
            best = (out[index], met, note)
    if best is None:
        return Confirmed(out, None, None, [])
    pick, simulated, note = best
    out.sort(key=lambda s: (-s.meets_targets, -_sold(s), s is not pick, -s.goodput_rps, s.ttft_ms))
    chosen = next(i for i, s in enumerate(out) if s is pick)
    return Confirmed(out, chosen, simulated, [note] if note else [])


def _as_miss(missed: str) -> str:
    """A loop's miss as a split's ``misses`` name one, its target first (the table's ``meets`` shows that word):
    ``ttft (simulated: mean TTFT 2,211 ms > 2,000 ms (p99 5,415 ms))``."""
    return f"{'ttft' if 'TTFT' in missed else 'itl'} (simulated: {missed})"


def _sold(split: Split) -> float:
    return split.output_tokens_per_s_per_gpu


def _most_load_met(
    split: Split, run: Callable[[Split, float], SimulatedSplit], ttft_ms: float | None, itl_ms: float | None
) -> SimulatedSplit | None:
    """The run at the most load below ``split``'s goodput whose loop meets the targets (bisection, ``HALVINGS``
    steps); None when even the least load tried misses."""
    low, high, met = 0.0, split.rate_rps, None
    for _ in range(HALVINGS):
        middle = (low + high) / 2
        attempt = run(split, middle)
        if misses(attempt, ttft_ms, itl_ms):
            high = middle
        else:
            low, met = middle, attempt
    return met
