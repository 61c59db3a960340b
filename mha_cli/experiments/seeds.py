"""Spread over seeds: every trained figure of an experiment is a mean over seeds, with its range.

A difference is stated only where it exceeds the spread: two figures are *apart* when their seed ranges
do not overlap (every seed of one is below every seed of the other). For two figures fixed in advance,
with 3 seeds each, independent draws and no real difference, that happens by chance in 2 of the 20
equally likely orderings (p = 0.1, two-sided; 0.05 for a named direction). A rule that compares many
figures, or picks its reference after looking (the best of five), calls differences more often:
``null_rate`` measures how often, by Monte Carlo.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from math import comb
from statistics import mean, stdev

from mha_cli.core.record import Record

MIN_SEEDS = 3
"""Default runs train every model with at least this many seeds."""


class SeedSpread(Record):
    """A figure measured once per seed."""

    values: list[float]
    """One value per seed, in the order of the run's seeds."""
    mean: float
    std: float
    """Sample standard deviation (n - 1); 0 for a single seed."""
    low: float
    high: float

    @property
    def range(self) -> float:
        return self.high - self.low

    def text(self, fmt: str = ".3f", *, sd: bool = True) -> str:
        """'2.204 ± 0.017 (2.194 to 2.224)': the mean, the standard deviation (``sd``) and the range over seeds,
        the values formatted by ``fmt`` ('+.3f' signs them)."""
        deviation = f" ± {self.std:{fmt.lstrip('+')}}" if sd else ""
        return f"{self.mean:{fmt}}{deviation} ({self.low:{fmt}} to {self.high:{fmt}})"


def seed_spread(values: list[float]) -> SeedSpread:
    """Mean, standard deviation and range of per-seed ``values``."""
    if not values:
        raise ValueError("a seed spread needs at least one value")
    return SeedSpread(
        values=list(values),
        mean=mean(values),
        std=stdev(values) if len(values) > 1 else 0.0,
        low=min(values),
        high=max(values),
    )


def clearly_below(a: SeedSpread, b: SeedSpread) -> bool:
    """Every seed of ``a`` is below every seed of ``b`` (their ranges do not overlap)."""
    return a.high < b.low


def chance_apart(n_a: int, n_b: int) -> float:
    """Probability that ``n_a`` and ``n_b`` draws of one distribution have disjoint ranges, one side below
    the other in either order: 2 / C(n_a + n_b, n_a) (0.1 for 3 and 3)."""
    return 2 / comb(n_a + n_b, n_a)


def null_rate(
    n_groups: int,
    n_seeds: int,
    calls_a_difference: Callable[[list[SeedSpread]], bool],
    *,
    samples: int = 10_000,
    seed: int = 0,
) -> float:
    """How often ``calls_a_difference`` fires when nothing differs: the fraction of ``samples`` draws of
    ``n_groups`` x ``n_seeds`` independent, identically distributed values for which it returns True.

    Draws are uniform. A rule that compares values by order alone gives the same rate under any continuous
    distribution; one that also picks by mean (``heads.worse_than_best`` picks the best count by it) depends on the
    distribution a little: for 5 counts, 2 seeds: 80% Gaussian, 83% uniform, 86% exponential; 3 seeds: 40%, 43%,
    45% (trial 262's Monte Carlo), so the figure is uniform noise's, said as such.
    """
    draw = random.Random(seed)
    fired = sum(
        calls_a_difference([seed_spread([draw.random() for _ in range(n_seeds)]) for _ in range(n_groups)])
        for _ in range(samples)
    )
    return fired / samples
