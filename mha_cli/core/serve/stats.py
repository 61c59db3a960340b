"""Summary statistics as ``vllm bench serve`` prints them: mean, median and percentiles with numpy's default
(linear) interpolation, in milliseconds. Pure Python."""

from mha_cli.core.record import Record

PERCENTILES = (50.0, 90.0, 99.0)


class LatencyStats(Record):
    """One latency's distribution over the requests (or tokens), in milliseconds."""

    mean: float
    median: float
    p90: float
    p99: float

    def at(self, percentile: float) -> float:
        """The figure at ``percentile`` (50, 90 or 99), or the mean for 0."""
        return {0.0: self.mean, 50.0: self.median, 90.0: self.p90, 99.0: self.p99}[float(percentile)]


def percentile(ordered: list[float], q: float) -> float:
    """The ``q``-th percentile of sorted values, interpolated linearly between ranks (numpy's default)."""
    if not ordered:
        return 0.0
    position = q / 100 * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def weighted_percentile(ordered: list[tuple[float, int]], total: int, q: float) -> float:
    """``percentile`` of values given as sorted (value, repeats) pairs whose repeats add up to ``total``."""
    if total == 0:
        return 0.0
    position = q / 100 * (total - 1)
    low_rank, high_rank = int(position), min(int(position) + 1, total - 1)
    low = high = None
    seen = 0
    for value, repeats in ordered:
        seen += repeats
        if low is None and seen > low_rank:
            low = value
        if seen > high_rank:
            high = value
            break
    assert low is not None and high is not None
    return low + (high - low) * (position - low_rank)


def summarise(values: list[float]) -> LatencyStats:
    """Seconds in, milliseconds out."""
    ordered = sorted(values)
    mean = sum(ordered) / len(ordered) if ordered else 0.0
    return LatencyStats(
        mean=mean * 1e3, median=percentile(ordered, 50) * 1e3, p90=percentile(ordered, 90) * 1e3,
        p99=percentile(ordered, 99) * 1e3,
    )  # fmt: skip


def summarise_weighted(pairs: list[tuple[float, int]]) -> LatencyStats:
    """(seconds, repeats) pairs in, milliseconds out."""
    ordered = sorted(pairs)
    total = sum(repeats for _, repeats in ordered)
    mean = sum(value * repeats for value, repeats in ordered) / total if total else 0.0
    return LatencyStats(
        mean=mean * 1e3, median=weighted_percentile(ordered, total, 50) * 1e3,
        p90=weighted_percentile(ordered, total, 90) * 1e3, p99=weighted_percentile(ordered, total, 99) * 1e3,
    )  # fmt: skip
