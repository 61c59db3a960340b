"""Whether ``mha calibrate`` may trust what it measured: a judgement over its passes and its held-out check.

Pure Python (no torch): it reads numbers only, so it is tested on hand-made passes. Two signs of a machine too busy
to calibrate, each with its threshold:

- **the held-out check**: measured / predicted of the decoder the profile was not fitted on (decode and prefill)
  must lie within ``CHECK_BAND``, 1/1.5 to 1.5 (a factor of 1.5 either way). Quiet runs on this 2-core CPU have
  landed within 0.79-1.46 (``benchmarks/verify_predictions.py``, ``benchmarks/calibrate_stability.py``;
  docs/validation.md), and the priors' own bands on GPUs are 9-47%: a profile that misses its held-out decoder by
  more than 1.5x is worse than the band any of them carries.
- **spread**: every rate is the median of ``PASSES`` interleaved passes (``calibrate.run``); at each size (and
  shape), the slowest pass over the fastest is that rate's spread. Of 5 passes the fastest and the slowest bound the
  median with 94% confidence whatever the noise's distribution (1 - 2 / 2^5), so the spread is how well the median
  is known. ``MAX_SPREAD`` is the band squared, 2.25: the median's interval may then be as wide as the band the
  check allows (1.5x either way from its middle), no wider. On a quiet run the worst of the 34 rates spreads
  1.8-2.0x; beside a CPU hog, or behind another job on 2 cores, the rates of microsecond operators spread 100-1,000x
  (a 2-thread operator waiting on a descheduled thread), so the limit sits between the two.

A verdict is ``stable`` when both hold. ``calibrate`` measures again when it is not (``ATTEMPTS`` in all) and then
refuses with ``UnstableCalibrationError`` (exit 1), writing no profile.
"""

from collections.abc import Sequence

from mha_cli.core.cost.calibration import Sample
from mha_cli.core.errors import EXIT_CHECK_FAILED, MhaError
from mha_cli.core.record import Record

CHECK_BAND = (1 / 1.5, 1.5)
"""The held-out decoder's measured / predicted must lie within this band, decode and prefill."""
MAX_SPREAD = CHECK_BAND[1] ** 2
"""2.25: the most a rate's slowest pass may take over its fastest (the same size, the same attempt)."""
ATTEMPTS = 3
"""Measurements before ``calibrate`` refuses: the first and two retries (a compile or a test run is often over
within the minute a retry takes; a machine loaded for longer is not made quiet by more of them)."""
_KIND_LABELS = {
    "dispatch": "operator dispatch",
    "weight": "GEMV bandwidth",
    "cache": "attention-decode bandwidth",
    "matmul": "matmul",
    "attention": "prefill attention",
    "kernel": "kernel overhead",
    "all_reduce": "all-reduce",
}


class CheckRow(Record):
    """One phase of the held-out decoder: measured against predicted from the new profile."""

    phase: str
    measured_ms: float
    predicted_ms: float
    ratio: float
    """measured / predicted."""
    dispatches: int


class RateSpread(Record):
    """One rate at one size across the passes: how far its slowest pass is from its fastest."""

    rate: str
    """The rate and size, as a person reads them: ``GEMV bandwidth at 256 KiB``."""
    kind: str
    size: float
    spread: float
    """Slowest pass / fastest pass (1 when all agree)."""


class Stability(Record):
    """The verdict on one attempt of ``mha calibrate``."""

    stable: bool
    worst: RateSpread | None
    """The rate whose passes disagree most (None with fewer than two passes)."""
    over_limit: int
    """How many rates (one per size and shape) spread beyond ``max_spread``."""
    held_out: dict[str, float]
    """The held-out decoder's measured / predicted, per phase (decode, prefill)."""
    max_spread: float
    band: tuple[float, float]
    summary: str
    """One phrase: what was unstable, or the margins of a stable attempt."""


def rate_label(kind: str, size: float) -> str:
    """``GEMV bandwidth at 256 KiB``, ``matmul at 16 rows``, ``operator dispatch`` (the rate a sample measures)."""
    label = _KIND_LABELS.get(kind, kind)
    if kind in ("weight", "cache", "all_reduce"):
        return f"{label} at {size / 2**20:g} MiB" if size >= 2**20 else f"{label} at {size / 2**10:g} KiB"
    if kind == "matmul":
        return f"{label} at {size:g} rows"
    if kind == "attention":
        return f"{label} at {size:g} queries"
    return label


def spreads(passes: Sequence[Sequence[Sample]]) -> list[RateSpread]:
    """Each measured point's spread across ``passes`` (the i-th sample of every pass measures the same thing)."""
    if len(passes) < 2:
        return []
    first = passes[0]
    for n, other in enumerate(passes[1:], start=2):
        if [(s.kind, s.size) for s in other] != [(s.kind, s.size) for s in first]:
            raise ValueError(f"pass {n} measured other sizes than pass 1: passes must repeat the same samples")
    rows = []
    for i, sample in enumerate(first):
        seconds = [p[i].seconds for p in passes]
        fastest, slowest = min(seconds), max(seconds)
        spread = slowest / fastest if fastest > 0 else float("inf")
        rows.append(RateSpread(rate=rate_label(sample.kind, sample.size), kind=sample.kind, size=sample.size,
                               spread=spread))  # fmt: skip
    return rows


def judge_stability(
    passes: Sequence[Sequence[Sample]],
    check: Sequence[CheckRow] = (),
    *,
    max_spread: float = MAX_SPREAD,
    band: tuple[float, float] = CHECK_BAND,
) -> Stability:
    """Stable when every rate's slowest pass is within ``max_spread`` of its fastest and every held-out ratio lies
    in ``band``; ``summary`` names the worst rate and its spread, and the held-out ratios."""
    rows = spreads(passes)
    worst = max(rows, key=lambda row: row.spread, default=None)
    over = sum(row.spread > max_spread for row in rows)
    held_out = {row.phase: row.ratio for row in check}
    low, high = band
    outside = {phase: ratio for phase, ratio in held_out.items() if not low <= ratio <= high}
    ratios = ", ".join(f"x{ratio:.2f} {phase}" for phase, ratio in held_out.items())
    problems = []
    if worst is not None and over:
        others = f" (and {over - 1} more rate{'s' if over > 2 else ''} over it)" if over > 1 else ""
        problems.append(
            f"{worst.rate} varied {worst.spread:.1f}x between passes, over the {max_spread:g}x limit{others}"
        )
    if outside:
        problems.append(f"the held-out decoder ran at {ratios} of its prediction, outside {low:.2f}-{high:g}")
    elif held_out and problems:
        problems.append(f"held-out decoder {ratios} (within {low:.2f}-{high:g})")
    if problems:
        summary = "; ".join(problems)
    else:
        margin = f"passes within {worst.spread:.2f}x ({worst.rate}; limit {max_spread:g}x)" if worst else "one pass"
        summary = margin + (f"; held-out decoder {ratios} (band {low:.2f}-{high:g})" if held_out else "")
    return Stability(stable=not (over or outside), worst=worst, over_limit=over, held_out=held_out,
                     max_spread=max_spread, band=band, summary=summary)  # fmt: skip


class UnstableCalibrationError(MhaError):
    """Every attempt of ``mha calibrate`` was unstable: exit 1, no profile written."""

    exit_code = EXIT_CHECK_FAILED

    def __init__(self, verdict: Stability, attempts: int, verdicts: list[Stability] | None = None) -> None:
        self.verdicts = verdicts or [verdict]
        """Every attempt's verdict, in order (what ``--json`` lists under ``attempts``)."""
        tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
        super().__init__(
            f"this machine was too busy to calibrate in {tries}, no profile written. The last: {verdict.summary}."
            " Rerun on an idle machine (stop other jobs first), or pass --allow-unstable to write the profile anyway"
            " with that error as its band"
        )
