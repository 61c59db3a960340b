"""From microbenchmark timings to a calibrated device profile (the arithmetic of ``mha calibrate``). Pure Python.

Each ``Sample`` is one microbenchmark at one size: the median seconds of a call, the work it did (bytes moved or
FLOPs) and the operators it dispatched. The fit:

- dispatch overhead: the median over the ``dispatch`` samples (a tiny decoder's decode step, whose bytes and FLOPs
  are negligible) of seconds / operators dispatched;
- each rate curve (``weight`` GEMV bytes, ``cache`` attention-decode bytes, ``matmul`` FLOPs against rows,
  ``attention`` prefill FLOPs against queries): at each size, work / (seconds - its dispatches x the overhead), the
  fixed cost taken out once, as ``core.cost.step`` adds it back once;
- kernel overhead: the ``kernel`` samples (CUDA: a CUDA graph of tiny kernels, seconds per kernel); elsewhere the
  dispatch overhead (no graphs);
- all-reduce: least squares of seconds = latency + 2 (n - 1) / n x bytes / bandwidth over the sizes measured;
- the engine's step overhead cannot be measured without the engine: the prior's fitted value, marked as such.
"""

from __future__ import annotations

import statistics
from typing import Literal

from mha_cli.core.cost.priors import fitted_constants
from mha_cli.core.cost.profile import CollectiveCost, Curve, DeviceProfile
from mha_cli.core.errors import MhaError
from mha_cli.core.record import Record

SampleKind = Literal["dispatch", "weight", "cache", "matmul", "attention", "kernel", "all_reduce"]
MIN_SHARE_LEFT = 0.2
"""A sample's time left after its fixed cost is at least this share of it (a fixed cost measured a little high
must not turn a small operation's rate infinite)."""


class Sample(Record):
    """One microbenchmark at one size: its median time and what it did."""

    kind: SampleKind
    size: float
    """Bytes (weight, cache, all_reduce), rows (matmul), queries (attention), operators (dispatch, kernel)."""
    work: float
    """Bytes moved (weight, cache, all_reduce) or FLOPs (matmul, attention); 0 for dispatch and kernel."""
    seconds: float
    dispatches: int = 1
    """Operators one timed call dispatched (kernels, for ``kernel`` samples)."""
    ranks: int = 1


def _curve(samples: list[Sample], overhead: float) -> Curve:
    """One point per size: the median rate of the samples at that size (several shapes may share one)."""
    rates: dict[float, list[float]] = {}
    for s in samples:
        rates.setdefault(s.size, []).append(
            s.work / max(s.seconds - s.dispatches * overhead, MIN_SHARE_LEFT * s.seconds)
        )
    sizes = sorted(rates)
    return Curve(sizes=sizes, rates=[statistics.median(rates[size]) for size in sizes])


def _all_reduce(samples: list[Sample], link: str) -> CollectiveCost | None:
    if len(samples) < 2:
        return None
    ranks = samples[0].ranks
    xs = [2 * (ranks - 1) / ranks * s.work for s in samples]
    ys = [s.seconds for s in samples]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread if spread else 0.0
    latency = max(0.0, mean_y - slope * mean_x)
    bandwidth = 1 / slope if slope > 0 else max(xs) / max(ys)
    return CollectiveCost(latency_s=latency, bandwidth_bytes_per_s=bandwidth, link=link)


def profile_from_samples(
    samples: list[Sample],
    *,
    name: str,
    device: Literal["cuda", "cpu"],
    device_name: str,
    dtype: str,
    created: str,
    link: str,
) -> DeviceProfile:
    """The profile ``samples`` measure (see the module docstring); ``relative_error`` is set by the validation."""
    by_kind: dict[str, list[Sample]] = {}
    for sample in samples:
        by_kind.setdefault(sample.kind, []).append(sample)
    missing = [kind for kind in ("dispatch", "weight", "cache", "matmul", "attention") if kind not in by_kind]
    if missing:
        raise MhaError(f"calibration has no {', '.join(missing)} measurement: rerun `mha calibrate`")
    dispatch = statistics.median(s.seconds / s.dispatches for s in by_kind["dispatch"])  # one per pass
    kernel = statistics.median(s.seconds / s.dispatches for s in by_kind["kernel"]) if "kernel" in by_kind else dispatch
    step = fitted_constants()["constants"]["step_overhead_s"]
    collective = _all_reduce(by_kind.get("all_reduce", []), link)
    constants = {
        "dispatch_overhead_s": f"{dispatch:.3g}: a tiny decoder's decode step / the operators it dispatched",
        "kernel_overhead_s": f"{kernel:.3g}: "
        + ("a CUDA graph of tiny kernels / its kernels" if "kernel" in by_kind else "= dispatch overhead (no graphs)"),
        "step_overhead_s": f"{step:.3g}: PRIOR (an engine's step is not measured here; cost_priors.json)",
    }
    for kind in ("weight", "cache", "matmul", "attention"):
        constants[f"{kind}_points"] = str(len(by_kind[kind]))
    if collective is not None:
        constants["all_reduce"] = (
            f"latency {collective.latency_s:.3g} s, bus bandwidth {collective.bandwidth_bytes_per_s / 1e9:.3g} GB/s"
            f" over {by_kind['all_reduce'][0].ranks} ranks ({link})"
        )
    return DeviceProfile(
        name=name, kind="calibrated", source=f"mha calibrate on {device_name} ({dtype}), {created}", device=device,
        device_name=device_name, dtype=dtype, weight_bandwidth=_curve(by_kind["weight"], dispatch),
        cache_bandwidth=_curve(by_kind["cache"], dispatch), matmul=_curve(by_kind["matmul"], dispatch),
        attention_flops=_curve(by_kind["attention"], dispatch), kernel_overhead_s=kernel, dispatch_overhead_s=dispatch,
        step_overhead_s=step, collective=collective, constants=constants, relative_error=0.0, created=created,
    )  # fmt: skip
