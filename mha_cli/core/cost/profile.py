"""Device profiles: the achieved rates and fixed costs a step's time is computed from.

A profile holds, for one device and dtype:

- ``weight_bandwidth``: bytes per second a matmul (or elementwise kernel) streams, against the bytes one instance
  moves (a 1 MiB matrix does not saturate HBM; a 100 MiB one nearly does);
- ``cache_bandwidth``: the same for an attention kernel reading its cache;
- ``matmul``: FLOP/s against the matmul's rows (tokens): low for a handful of rows, near the dense peak for
  thousands (a measured profile's); a prior's is flat, its rows padded to ``matmul_tile`` instead
  (``core.cost.gemm_tiles``); ``attention_flops``: the same for attention against its rows (query tokens x query heads per KV
  head, ``core.cost.work.attention_rows``);
- ``decode_attention``: the engine's decode attention kernels on this GPU, which price a decode step's attention
  on whole query tiles instead (``core.cost.decode_tiles``; None: the ``attention_flops`` curve prices it);
- ``kernel_overhead_s``: the fixed cost of one kernel in a serving engine (decode under CUDA graphs), and
  ``dispatch_overhead_s``: the cost of one operator dispatched eagerly by torch (what ``verify`` runs);
  ``prefill_dispatch_overhead_s``: the host's launch time per kernel of a prompt step in an engine whose prefill runs
  outside CUDA graphs (``core.engine.prefill_graphs``);
- ``step_overhead_s``: the engine's fixed cost per step (scheduling, input preparation, sampling bookkeeping), and
  ``sequence_overhead_s`` its host cost per sequence in the step; ``request_overhead_s``: a request's cost outside
  the steps (HTTP, tokenising), in its TTFT;
- ``collective``: an all-reduce's latency and bus bandwidth across the tensor-parallel group.

``kind`` says where the figures come from: ``prior`` (shipped: datasheets scaled by constants fitted on published
measurements, ``core.cost.priors``) or ``calibrated`` (measured on this machine by ``mha calibrate``). Pure Python.
"""

import bisect
import math
from functools import cached_property
from typing import Literal

from pydantic import ConfigDict, Field, NonNegativeFloat, PositiveFloat, model_validator

from mha_cli.core.cost.decode_tiles import DecodeAttention, TileKernel
from mha_cli.core.record import Record, empty_dict

ProfileKind = Literal["prior", "calibrated", "ceiling"]
NONE_HELD_OUT = ", 0 held out)"
"""How a fitted profile's ``source`` (``core.serve.fit``) says that none of its runs was held out: its band is then
the fit's own error on the runs it was fitted to, not a held-out one."""
UNMEASURED_GPU = "; none on this GPU ("
"""How an engine generation's prior (``core.cost.priors.generation_prior``) says in its ``source`` that its GPU had
no measurement fitted (its vendor's constants stand in): the band, from the generation's held-out measurements, then
says none was on this GPU (``core.cost.serving``)."""
OWN_GPU_BAND = "; its band from "
"""How an engine generation's prior says in its ``source`` whose held-out measurements its band is the 80th
percentile of: ``this GPU's 14 held-out figures`` (5 or more on its own GPU: trial 402 #3), or a GPU its vendor's
set was measured on (``mi300x's 24 held-out figures``: review 403 #4); absent: the generation's on every GPU."""

TOKENS_PER_S_ONLY = "fitted on tokens/s alone"
"""In the source of a generation's prior whose vendor set was fitted on throughput tables alone (vLLM V1's AMD set:
MI300X max-load tokens/s; ``core.cost.priors.THROUGHPUT_ONLY`` holds it)."""
FITTED_SOURCE = "calibrated from "
"""How the ``source`` of a profile ``mha calibrate --from`` fitted to a server's runs begins (``core.serve.fit``);
a profile measured on the machine (``mha calibrate``) begins ``mha calibrate on``."""


def measured_within(relative: float, kind: str, source: str) -> tuple[float, float]:
    """(low, high): a measured latency / the predicted one is expected within them, as the band's error ``relative``
    was measured. A calibration on this machine (``kind`` calibrated, not ``FITTED_SOURCE``) takes r = max |measured /
    predicted - 1| of its times (``calibrate.run``): [1 - r, 1 + r]; so does a set fitted on tokens/s alone
    (``TOKENS_PER_S_ONLY`` in ``source``: a latency is inverse to them). The priors (|predicted - measured| /
    measured over latencies and tokens/s, ``fit_priors.py``) and a fit to a server's runs (simulated / measured - 1,
    ``core.serve.fit``, the same figures) hold a latency within [1 / (1 + r), 1 / (1 - r)] of its prediction where
    the figure was a latency, [1 - r, 1 + r] where it was tokens/s: the band is both, [1 - r, 1 / (1 - r)], no upper
    bound from r = 1 (inf). Trial 406 #6, reviews 408 #3 and 409 #1: "+/- 44%" was printed beside prediction / 1.44
    .. x 1.44, which matched no definition."""
    low = max(0.0, 1 - relative)
    if (kind == "calibrated" and not source.startswith(FITTED_SOURCE)) or TOKENS_PER_S_ONLY in source:
        return low, 1 + relative
    return low, latency_within(relative)[1]


def latency_within(relative: float) -> tuple[float, float]:
    """(low, high) of a latency whose error |predicted - measured| / measured is ``relative``: measured within
    prediction / (1 + r) .. prediction / (1 - r), no upper bound from r = 1 (inf)."""
    return 1 / (1 + relative), (1 / (1 - relative) if relative < 1 else math.inf)


def band_words(low: float, high: float) -> str:
    """``measured_within``'s band in words: ``-44%/+79%`` for a prior's r = 0.44."""
    return f"-{1 - low:.0%}/" + (f"+{high - 1:.0%}" if math.isfinite(high) else "unbounded above")


class Curve(Record):
    """An achieved rate against an operation's size: log-linear between measured points, flat beyond them."""

    model_config = ConfigDict(frozen=True)  # ``log_sizes`` is kept: a curve is never changed once made

    sizes: list[PositiveFloat] = Field(min_length=1)
    """Increasing sizes (bytes, or rows)."""
    rates: list[PositiveFloat] = Field(min_length=1)
    """Achieved rate at each size (bytes/s or FLOP/s)."""

    @model_validator(mode="after")
    def _points(self) -> "Curve":
        if len(self.sizes) != len(self.rates):
            raise ValueError(f"{len(self.sizes)} sizes but {len(self.rates)} rates: give one rate per size")
        if any(b <= a for a, b in zip(self.sizes, self.sizes[1:], strict=False)):
            raise ValueError("sizes must increase")
        return self

    @cached_property
    def log_sizes(self) -> list[float]:
        """log(size) of each point, taken once: ``at`` is in the price of every operation of every step."""
        return [math.log(size) for size in self.sizes]

    def at(self, size: float) -> float:
        """The rate at ``size``: interpolated in log(size) between the two nearest points."""
        sizes, rates = self.sizes, self.rates
        if size <= sizes[0]:
            return rates[0]
        if size >= sizes[-1]:
            return rates[-1]
        i = bisect.bisect_right(sizes, size)
        log_sizes = self.log_sizes
        lo, hi = log_sizes[i - 1], log_sizes[i]
        share = (math.log(size) - lo) / (hi - lo)
        return rates[i - 1] + share * (rates[i] - rates[i - 1])

    @property
    def peak(self) -> float:
        return max(self.rates)

    @classmethod
    def flat(cls, rate: float) -> "Curve":
        return cls(sizes=[1.0], rates=[rate])

    @classmethod
    def saturating(cls, peak: float, half_size: float, sizes: list[float]) -> "Curve":
        """``peak x size / (size + half_size)`` sampled at ``sizes``: half the peak at ``half_size``."""
        return cls(sizes=sizes, rates=[peak * size / (size + half_size) for size in sizes])


class CollectiveCost(Record):
    """A ring all-reduce over ``ranks``: latency + 2 (n - 1) / n x bytes / bus bandwidth."""

    latency_s: NonNegativeFloat
    bandwidth_bytes_per_s: PositiveFloat
    """One direction of one link."""
    link: str
    """What carries it: nvlink, pcie, gloo (shared memory on one host)."""

    def all_reduce_s(self, n_bytes: float, ranks: int) -> float:
        """Seconds of a ring all-reduce of ``n_bytes`` (each rank's buffer) over ``ranks``."""
        if ranks <= 1:
            return 0.0
        return self.latency_s + 2 * (ranks - 1) / ranks * n_bytes / self.bandwidth_bytes_per_s

    def all_to_all_s(self, n_bytes: float, ranks: int) -> float:
        """Seconds of one rank sending ``n_bytes`` to the other ranks (an all-to-all's share leaving it; every rank
        sends as much at once, each over its own link)."""
        if ranks <= 1:
            return 0.0
        return self.latency_s + n_bytes / self.bandwidth_bytes_per_s

    def all_gather_s(self, n_bytes: float, ranks: int) -> float:
        """Seconds of a ring all-gather whose result is ``n_bytes``: each rank receives (n - 1) / n of it."""
        if ranks <= 1:
            return 0.0
        return self.latency_s + (ranks - 1) / ranks * n_bytes / self.bandwidth_bytes_per_s


class DeviceProfile(Record):
    """What a step costs on one device in one dtype (see the module docstring)."""

    name: str
    kind: ProfileKind
    source: str
    """Where the figures come from, in one line."""
    device: Literal["cuda", "cpu"]
    device_name: str
    dtype: str
    """The dtype the rates were measured (or are assumed) in: the activation and weight dtype of a bf16 model."""
    target_id: str | None = None
    weight_bandwidth: Curve
    cache_bandwidth: Curve
    matmul: Curve
    attention_flops: Curve
    decode_attention: DecodeAttention | None = None
    """The engine's decode attention kernels on this GPU (``core.cost.decode_tiles``); None: a measured profile
    (a calibrated profile's ``attention_flops`` holds what it measured)."""
    matmul_by_dtype: dict[str, Curve] = Field(default_factory=empty_dict)
    """The matmul curve of each dtype a step's matrices multiply in (``core.compute_dtype``: bf16, fp8, fp32), for a
    step whose layers differ from ``dtype`` (an fp8 checkpoint's bf16 attention, an fp32 router); a dtype missing (a
    calibrated profile measures one): ``matmul``."""
    matmul_tile: TileKernel | None = None
    """The M tile the engine's weight GEMMs pad a matmul's rows to on this GPU, at ``matmul``'s rate
    (``core.cost.gemm_tiles``); None: ``matmul`` read at the rows prices it (a measured profile, a ceiling)."""
    matmul_half_rows: NonNegativeFloat = 0.0
    """The padded rows at which the rows above a weight GEMM's first ``matmul_tile`` run at half ``matmul``'s rate
    (``core.cost.gemm_tiles``; 0: flat, every padded row at ``matmul``'s rate)."""
    kernel_overhead_s: NonNegativeFloat
    dispatch_overhead_s: NonNegativeFloat
    step_overhead_s: NonNegativeFloat
    collective: CollectiveCost | None = None
    constants: dict[str, str] = Field(default_factory=empty_dict)
    """Each fitted or measured constant -> its value and where it comes from, in words."""
    relative_error: NonNegativeFloat
    """The typical relative error of a prediction from this profile: its band is ``measured_within`` this."""
    ttft_relative_error: NonNegativeFloat | None = None
    """The 80th percentile of the held-out TTFT errors alone (|predicted - measured| / measured), where the prior's
    fit has 5 or more (an engine generation's); None: the band of ``relative_error`` stands for the TTFT too
    (trial 404 #1: vLLM V1's TTFT p80 is 55% where its ITL and tokens/s give 29%)."""
    sequence_overhead_s: NonNegativeFloat = 0.0
    """An engine step's host cost per sequence it runs (scheduling, input preparation, sampling, detokenising and
    streaming each one's token): 0 in the priors (inside their step overhead); ``mha calibrate --from`` fits it."""
    prefill_dispatch_overhead_s: NonNegativeFloat = 0.0
    """The host's launch time per kernel of a step that holds a prompt chunk, in an engine whose prefill can run
    outside CUDA graphs (``core.engine.prefill_graphs``): the device waits where the launches outrun its work. 0:
    graphed always, or not priced (the default prior)."""
    prefill_graphs: str | None = None
    """The SGLang release whose piecewise CUDA graphs run prompt steps (``core.engine.prefill_graphs.graphs_off``
    and ``graph_tokens`` say which do); None: every prompt step pays ``prefill_dispatch_overhead_s``."""

    request_overhead_s: NonNegativeFloat = 0.0
    """A served request's fixed cost outside the engine's steps: from the client's send to the engine's queue (HTTP,
    tokenising) and the first token's way back, in every TTFT. An engine generation's prior holds its front end
    (``core.engine.front_end``), the default prior none; ``mha calibrate --from`` fits it from benchmark results."""
    created: str | None = None

    @property
    def unstable_reason(self) -> str | None:
        """Why this measured profile was kept unstable (``mha calibrate --allow-unstable``, recorded in
        ``constants["stability"]``), as "measured unstable (...): ..."; None for a stable or unmeasured one."""
        stability = str(self.constants.get("stability", ""))
        if not stability.startswith("UNSTABLE"):
            return None
        return f"measured unstable (kept by --allow-unstable): {stability.partition(': ')[2]}"

    def matmul_in(self, dtype: str | None) -> Curve:
        """The matmul curve of a matrix that multiplies in ``dtype`` (None: the profile's own, ``matmul``)."""
        if dtype is None:
            return self.matmul
        return self.matmul_by_dtype.get(dtype, self.matmul)

    def ceiling(self) -> "DeviceProfile":
        """This profile's best rates everywhere and no fixed costs: the bound no prediction from it goes below."""
        collective = None
        if self.collective is not None:
            collective = self.collective.model_copy(update={"latency_s": 0.0})
        return self.model_copy(
            update={
                "name": f"{self.name} (ceiling)", "kind": "ceiling",
                "weight_bandwidth": Curve.flat(self.weight_bandwidth.peak),
                "cache_bandwidth": Curve.flat(self.cache_bandwidth.peak), "matmul": Curve.flat(self.matmul.peak),
                "attention_flops": Curve.flat(self.attention_flops.peak), "kernel_overhead_s": 0.0,
                "matmul_by_dtype": {dtype: Curve.flat(curve.peak) for dtype, curve in self.matmul_by_dtype.items()},
                "dispatch_overhead_s": 0.0, "step_overhead_s": 0.0, "collective": collective, "request_overhead_s": 0.0,
                "sequence_overhead_s": 0.0, "prefill_dispatch_overhead_s": 0.0,
                "decode_attention": self.decode_attention.unpadded() if self.decode_attention else None,
                "matmul_tile": None, "matmul_half_rows": 0.0,
            }
        )  # fmt: skip
