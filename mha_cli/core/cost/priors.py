"""Shipped device profiles (priors) for every GPU target: its datasheet, scaled by constants fitted on published
serving measurements.

A prior turns a target's datasheet (``core.targets``: bandwidth, dense bf16 and fp8 throughput, interconnect)
into a profile (``core.cost.profile``) with a handful of constants that hold across GPUs:

- the share of peak bandwidth and of peak FLOP/s large operations reach, and the size at which an operation
  reaches half of it (small transfers do not saturate memory, nor small attention kernels the tensor cores; a
  weight GEMM's few rows are padded to its kernel's M tile instead, ``core.cost.gemm_tiles``); a generation may
  hold its own share for the fp4 GEMMs of compute capability 10.x (``FP4_EFFICIENCY``) and its own half rows for
  prompt attention apart from the GEMMs' ramp (``ATTENTION_HALF_ROWS``);
- the fixed cost of a kernel, of an engine step, of an all-reduce (NVLink or PCIe).

The constants live in ``mha_cli/data/cost_priors.json``, written by ``benchmarks/fit_priors.py``: a fit on one
part of the published measurements in ``tests/fixtures/serving_benchmarks.yaml``, its error on the other part
recorded beside them (``holdout``), and the public measurement each starting value comes from. Pure Python.

Engines move the answer more than GPUs do, so ``cost_priors_generations.json`` holds constants per engine generation
(vllm-v1, sglang-0.5, trtllm-pytorch, ...), fitted on 2025-26 measurements of that generation
(``tests/fixtures/serving_benchmarks_2025.yaml``), per GPU vendor where the fit had both. A profile built for a
generation uses them, or those of the nearest earlier generation of its engine fitted for the GPU's vendor
(``fitted_generation_for``); without a generation, or for one before any fitted one, the default constants price it,
with no front end added (their fit carried it).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any, NamedTuple, get_args

from pydantic_core import from_json

from mha_cli.core.compute_dtype import ComputeDtype, compute_dtype, fp4_native
from mha_cli.core.cost.decode_tiles import DecodeAttention, decode_attention
from mha_cli.core.cost.gemm_tiles import weight_gemm_tile
from mha_cli.core.cost.profile import (
    OWN_GPU_BAND,
    TOKENS_PER_S_ONLY,
    UNMEASURED_GPU,
    CollectiveCost,
    Curve,
    DeviceProfile,
)
from mha_cli.core.engine.eager_launch import measured_launch
from mha_cli.core.engine.front_end import CARRIED_BY_DEFAULTS, FrontEnd, front_end
from mha_cli.core.engine.prefill_graphs import graphed_release, prefill_launch_s
from mha_cli.core.targets import Target

BANDWIDTH_SIZES = [float(4**k) for k in range(6, 19)]
"""4 KiB ... 64 GiB: where bandwidth curves are sampled."""
ROW_SIZES = [float(2**k) for k in range(0, 17)]
"""1 ... 65,536 rows: where matmul and attention curves are sampled."""
PCIE_GBS = 64.0
"""PCIe 4.0 x16, both directions (GB/s): the link of a part whose row states no interconnect."""


@cache
def fitted_constants() -> dict[str, Any]:
    """The shipped constants (``mha_cli/data/cost_priors.json``): values, sources, and the held-out error."""
    text = resources.files("mha_cli").joinpath("data/cost_priors.json").read_text(encoding="utf-8")
    return from_json(text)  # pydantic's parser, already loaded: the json module would add ~1.5 ms to a start-up


@cache
def generation_fits() -> dict[str, dict[str, Any]]:
    """Each engine generation's fitted constants (``mha_cli/data/cost_priors_generations.json``, written by
    ``benchmarks/fit_priors.py --set 2025``): per generation its constants, per vendor where fitted apart, the GPUs
    and sources fitted on, the sources held out and their errors. Read only when a generation is asked for."""
    text = resources.files("mha_cli").joinpath("data/cost_priors_generations.json").read_text(encoding="utf-8")
    return from_json(text)["generations"]


THROUGHPUT_ONLY = f"; {TOKENS_PER_S_ONLY}: no latency was measured on them, its ITL and TTFT extrapolate that fit"
"""In the source of a generation's prior whose vendor set was fitted on throughput tables alone (vLLM V1's AMD set:
MI300X max-load tokens/s; trial 402 #2)."""
MIN_GPU_FIGURES = 5
"""Held-out figures a GPU needs for its own band; with fewer, the band of every held-out figure."""


def band(target_id: str) -> float:
    """The relative band of ``target_id``'s prior: the 80th percentile of the held-out errors on that GPU (on all
    held-out GPUs when it has fewer than ``MIN_GPU_FIGURES``), so about four measurements in five fall inside."""
    holdout = fitted_constants()["holdout"]
    own = holdout.get("per_gpu", {}).get(target_id)
    if own is not None and own["figures"] >= MIN_GPU_FIGURES:
        return own["p80_abs_error"]
    return holdout["p80_abs_error"]


class GenerationPrior(NamedTuple):
    """The constants that price one engine generation on one vendor's GPUs, and where they come from."""

    constants: dict[str, float]
    source: str
    band: float
    """The relative band: the 80th percentile of the held-out errors of the fit that priced it (its GPU's own where it
    has 5 or more figures; the GPU's default band where the default constants price it)."""
    fitted: str | None
    """The generation whose fit priced it (itself, or the nearest earlier one of its engine); None: the default
    constants, whose fit carried the front end in its TTFT, so none is added (review 403 #2)."""


CARRIED = ", the nearest earlier generation of its engine fitted ("
"""How a generation's prior says in its ``source`` that another generation's fit prices it (``core.cost.serving``
then names that one's held-out measurements, not this generation's: review 403 #5)."""


def fitted_generation_for(generation: str, vendor: str, fits: dict[str, dict[str, Any]]) -> str | None:
    """The generation whose fitted constants price ``generation``'s steps on ``vendor``'s GPUs (``fits``:
    ``generation_fits()``): its own where fitted for that vendor, else the nearest earlier generation of the same
    engine fitted for it (vLLM 0.21 and later: vLLM V1's, whose release followed; trials 397 #1, 399 #2, 402 #1:
    the default constants, fitted on 2023-24 engines, priced them, and the held-out 2025-26 measurements put those
    2-3x further off than a generation's own fit), else None: the default constants (a generation before any fitted
    one is of their era; an id no generation has, as well)."""
    from mha_cli.core.engine.generations import earlier_generations

    def fitted_for(candidate: str) -> bool:
        entry = fits.get(candidate)
        return entry is not None and vendor.lower() in entry["fitted_vendors"]

    return next((g for g in [generation, *earlier_generations(generation)] if fitted_for(g)), None)


def generation_prior(generation: str, target: Target) -> GenerationPrior:
    """The constants of engine ``generation`` (an id of ``core.engine.generations``) on ``target``'s vendor: its
    vendor's own where the fit had both vendors, the generation's where it had this one; a generation without a fit
    for the vendor takes the nearest earlier one's (``fitted_generation_for``), else the default ones."""
    fits = generation_fits()
    priced_by = fitted_generation_for(generation, target.vendor, fits)
    devices = f"{target.vendor} {'GPUs' if target.vendor in ('NVIDIA', 'AMD') else 'devices'}"
    if priced_by is None:
        return GenerationPrior(
            fitted_constants()["constants"],
            f"no published measurement of {generation}, nor of an earlier generation of its engine, fitted on"
            f" {devices}: the default constants price them (cost_priors.json)",
            band(target.id),
            None,
        )
    own = _fitted_prior(priced_by, fits[priced_by], target)
    if priced_by == generation:
        return own
    carried = (
        f"no published measurement of {generation} fitted on {devices}: {priced_by}'s constants{CARRIED}{own.source})"
    )
    return GenerationPrior(own.constants, carried, own.band, priced_by)


def _fitted_prior(generation: str, fitted: dict[str, Any], target: Target) -> GenerationPrior:
    """``generation``'s own fitted constants on ``target``'s vendor (fitted for it). Its band: the held-out figures'
    80th percentile on this GPU where it has 5 or more; else the wider of every GPU's and the widest of the GPUs its
    constants were measured on with 5 or more (MI355X: MI300X's 44%, not the 29% of every GPU, mostly H100s': review
    403 #4; never narrower than every GPU's: review 405 #5)."""
    family = fitted.get("vendors", {}).get(target.vendor.lower())
    constants = family["constants"] if family else fitted["constants"]
    measured_on = family["gpus"] if family else fitted["gpus"]
    held_out = fitted["holdout"]
    error = held_out["p80_abs_error"] if held_out.get("figures") else band(target.id)
    source = (
        f"constants fitted for {generation} on published measurements on {', '.join(measured_on)}"
        " (cost_priors_generations.json)"
    )
    measured = set(family.get("figures", []) if family else fitted.get("figures", []))
    if measured and not measured & {"itl_ms", "ttft_ms"}:  # trial 402 #2: AMD's vLLM V1 rows are throughput tables
        source += THROUGHPUT_ONLY
    if target.id not in measured_on:  # trial 367 #2: MI355X on MI300X's set
        whose = f"{target.vendor}'s set" if family else "the generation's constants"  # review 370 #11
        source += f"{UNMEASURED_GPU}{whose}, measured on other GPUs)"
    whose, figures, error = _band_by_gpu(held_out.get("per_gpu", {}), error, target.id, measured_on)
    if whose is not None:  # trial 402 #3: as the default constants' band
        source += f"{OWN_GPU_BAND}{whose}'s {figures} held-out figures"
    return GenerationPrior(constants, source, error, generation)


def _band_by_gpu(
    per_gpu: dict[str, Any], overall: float, target_id: str, measured_on: list[str]
) -> tuple[str | None, int, float]:
    """(whose, how many figures, band) of held-out errors read by GPU: this GPU's 80th percentile where it has
    ``MIN_GPU_FIGURES`` or more figures ("this GPU"); else the widest of ``measured_on``'s with as many, where wider
    than ``overall`` (every GPU's: never narrower, review 405 #5); else (None, 0, ``overall``)."""
    own = per_gpu.get(target_id)
    if own is not None and own["figures"] >= MIN_GPU_FIGURES:
        return "this GPU", own["figures"], own["p80_abs_error"]
    kin = [(gpu, per_gpu[gpu]) for gpu in measured_on if per_gpu.get(gpu, {}).get("figures", 0) >= MIN_GPU_FIGURES]
    widest = max(kin, key=lambda pair: pair[1]["p80_abs_error"], default=None)
    if widest is not None and widest[1]["p80_abs_error"] > overall:
        return widest[0], widest[1]["figures"], widest[1]["p80_abs_error"]
    return None, 0, overall


def _ttft_band(fitted: str | None, target: Target, source: str) -> float | None:
    """The 80th percentile of generation ``fitted``'s held-out TTFT errors (``holdout.per_figure.ttft_ms``), as
    ``relative`` is read (review 411 #2): this GPU's where it has ``MIN_GPU_FIGURES`` or more, else the wider of
    every GPU's and the widest of the GPUs its vendor's constants were measured on; None where the generation has
    fewer, where the default constants price it, or where its vendor's set was fitted on tokens/s alone (its TTFT
    figures are another vendor's: review 411 #3)."""
    if fitted is None or THROUGHPUT_ONLY in source:
        return None
    entry = generation_fits()[fitted]
    figures = entry["holdout"].get("per_figure", {}).get("ttft_ms")
    if not figures or figures.get("figures", 0) < MIN_GPU_FIGURES:
        return None
    family = entry.get("vendors", {}).get(target.vendor.lower())
    measured_on = family["gpus"] if family else entry["gpus"]
    return _band_by_gpu(figures.get("per_gpu", {}), figures["p80_abs_error"], target.id, measured_on)[2]


def _link(target: Target) -> tuple[str, float]:
    """(link name, one direction's bytes/s) between two devices of ``target``."""
    if target.interconnect_gbs is None:
        return "pcie", PCIE_GBS / 2 * 1e9
    name = "pcie" if target.interconnect_gbs <= PCIE_GBS * 2 else "nvlink"
    return name, target.interconnect_gbs / 2 * 1e9


def peak_matmul_flops(target: Target, weight_dtype: str) -> float:
    """Dense FLOP/s of ``target`` for a matmul of weights in ``weight_dtype``, in the dtype it multiplies in
    (``core.compute_dtype``): fp4 tensor cores where the engines run the format as an fp4 GEMM on the device
    (``fp4_native``: NVFP4 on Blackwell, Quark MXFP4 on CDNA4; ``Target.fp4_tflops_dense``), fp8 tensor cores where
    the device computes fp8, the non-tensor fp32 rate where the target states one (``Target.fp32_tflops``), else
    the bf16 tensor cores."""
    computed = compute_dtype(weight_dtype)
    if fp4_native(computed, target.vendor, target.fp4_tflops_dense):
        return target.fp4_tflops_dense * 1e12
    if computed == "fp8" and target.fp8_native and target.fp8_tflops_dense:
        return target.fp8_tflops_dense * 1e12
    if computed == "fp32" and target.fp32_tflops:
        return target.fp32_tflops * 1e12
    return target.bf16_tflops_dense * 1e12


FP4_EFFICIENCY = "fp4_matmul_efficiency"
"""The constant that scales the datasheet fp4 rate of an fp4 GEMM on a datacenter Blackwell (``fp4_share_applies``),
fitted by ``benchmarks/fit_priors.py`` only for a generation whose fit rows hold such GEMMs (not read from any
source); absent, ``matmul_efficiency`` scales it as every other dtype's rate."""
FP4_SHARE_CAPABILITY = (10.0, 11.0)
"""Compute capabilities [low, high) whose fp4 GEMMs take ``FP4_EFFICIENCY``: 10.x, B200, GB200 (10.0), B300, GB300
(10.3). Public kernel measurements put the CUTLASS NVFP4 GEMM at a lower share of the fp4 datasheet there than on
12.0: on B200 (its bf16 at 1,421 TFLOP/s, so not Hopper) 3,904 TFLOP/s at M 16,384, N 6,144, K 4,096 without the
activations' quantisation, 0.43 of 9,000, while bf16 reached 0.63 of 2,250 (vllm-project/vllm PR #20646, "Before"
table); on an RTX 5090 (12.0) 1,343 TFLOP/s at 8,192 cubed, 0.80 of its 1,676 dense (Dao-AILab/quack PR #153,
torch._scaled_mm). The fit rows agree (priors_2025.md, fp4eff): TensorRT-LLM's NVFP4 rows on B200/GB200 price fast
where their fp4 GEMMs are compute-bound, its RTX PRO 6000 (12.0) ones do not."""


ATTENTION_HALF_ROWS = "attention_half_rows"
"""The constant at whose rows prompt attention's saturating rate (``DeviceProfile.attention_flops``: query tokens x the
query heads sharing one KV head, ``core.cost.work.attention_rows``) reaches half its peak, apart from the weight
GEMMs' ramp (``matmul_half_rows``, ``core.cost.gemm_tiles``); fitted by ``benchmarks/fit_priors.py`` for a generation
that carries it (not read from any source: no kernel's figure is taken). Absent, ``matmul_half_rows`` shapes both, as
it did before the ramp came to the weight GEMMs (gemmramp), so every shipped figure stays until a refit writes it."""


def attention_half_rows(constants: dict[str, Any]) -> float:
    """The rows (query tokens x query heads per KV head) at which prompt attention runs at half its peak:
    ``constants``' own ``ATTENTION_HALF_ROWS`` where it has one, else its ``matmul_half_rows``."""
    return constants.get(ATTENTION_HALF_ROWS, constants["matmul_half_rows"])


def fp4_share_applies(target: Target, dtype: str) -> bool:
    """Whether a matmul in ``dtype`` on ``target`` runs as an fp4 GEMM (``fp4_native``) on a GPU of compute
    capability in ``FP4_SHARE_CAPABILITY``: the GEMMs ``FP4_EFFICIENCY`` scales where a generation has it."""
    low, high = FP4_SHARE_CAPABILITY
    capability = target.compute_capability
    native = fp4_native(dtype, target.vendor, target.fp4_tflops_dense)
    return native and capability is not None and low <= capability < high


def dtype_matmul_curves(
    target: Target, efficiency: float, half_rows: float, fp4_efficiency: float | None = None
) -> dict[str, Curve]:
    """The matmul curve of each dtype a step's matrices multiply in (``Op.compute``): ``target``'s datasheet rate for
    it (``peak_matmul_flops``) x the same ``efficiency``, half of it at ``half_rows`` rows (``half_rows`` 0: flat);
    an fp4 GEMM on a datacenter Blackwell (``fp4_share_applies``) x ``fp4_efficiency`` instead where given.

    fp32 runs on the non-tensor cores: its curve is the bf16 tensor-core curve capped at the fp32 peak x
    ``efficiency``. The rows-to-half-peak shape describes tensor-core tiles filled by few rows; applied to a peak 15
    times lower it would price a one-row fp32 matmul (a GEMV, bound by its bytes) 15 times slower than the bf16 one.
    """
    tensor = Curve.saturating(peak_matmul_flops(target, "bf16") * efficiency, half_rows, ROW_SIZES)
    curves: dict[str, Curve] = {}
    for dtype in get_args(ComputeDtype):
        share = efficiency
        if fp4_efficiency is not None and fp4_share_applies(target, dtype):
            share = fp4_efficiency
        peak = peak_matmul_flops(target, dtype) * share
        if not half_rows:
            curves[dtype] = Curve.flat(peak)
        elif dtype == "fp32":
            curves[dtype] = Curve(sizes=tensor.sizes, rates=[min(rate, peak) for rate in tensor.rates])
        else:
            curves[dtype] = Curve.saturating(peak, half_rows, ROW_SIZES)
    return curves


def prior_profile(
    target: Target,
    weight_dtype: str = "bf16",
    constants: dict[str, Any] | None = None,
    generation: str | None = None,
    release: str | None = None,
) -> DeviceProfile:
    """The shipped profile of ``target`` (``constants``: the fitted ones by default; the fit passes trial values;
    ``generation``: an engine generation's constants instead of the default ones, and its front end's time in every
    TTFT, ``core.engine.front_end``; ``release``: the engine release typed, which dates whether its prefill runs in
    CUDA graphs, ``core.engine.prefill_graphs``; None: the latest read)."""
    chosen = generation_prior(generation, target) if constants is None and generation is not None else None
    c = constants or (chosen.constants if chosen else fitted_constants()["constants"])
    ended = front_end(generation)  # the default constants carry a front end in their fit: none added beside them
    if chosen is not None and chosen.fitted is None:
        ended = FrontEnd(0.0, CARRIED_BY_DEFAULTS)
    bandwidth = target.bandwidth_bytes_per_s * c["bandwidth_efficiency"]
    # flat: the rows pad to ``matmul_tile``; fp4 GEMMs at their own fitted share where the generation has one
    matmuls = dtype_matmul_curves(target, c["matmul_efficiency"], 0.0, c.get(FP4_EFFICIENCY))
    link, link_bandwidth = _link(target)
    latency = c["all_reduce_latency_nvlink_s"] if link == "nvlink" else c["all_reduce_latency_pcie_s"]
    error = (chosen.band if chosen else band(target.id)) if constants is None else 0.0
    ttft_error = _ttft_band(chosen.fitted, target, chosen.source) if chosen is not None and constants is None else None
    name = f"{target.id}-prior@{generation}" if generation else f"{target.id}-prior"
    source = f"{target.name} datasheet x constants fitted on published serving measurements (cost_priors.json)"
    if chosen:
        source = f"{target.name} datasheet x {chosen.source}"
    if compute_dtype(weight_dtype) == "fp32" and not target.fp32_tflops:  # trial 366 #4: read as faster than bf16
        source += (
            "; fp32 matmuls at the bf16 tensor rate, the target stating no fp32 one (peak_matmul_flops): a floor on"
            " their time, several times too fast"
        )
    return DeviceProfile(
        name=name, kind="prior", device="cuda", device_name=target.name, dtype=weight_dtype,
        target_id=target.id, source=source,
        weight_bandwidth=Curve.saturating(bandwidth, c["bandwidth_half_bytes"], BANDWIDTH_SIZES),
        cache_bandwidth=Curve.saturating(bandwidth, c["bandwidth_half_bytes"], BANDWIDTH_SIZES),
        matmul=matmuls[compute_dtype(weight_dtype)], matmul_by_dtype=matmuls, matmul_tile=weight_gemm_tile(target),
        matmul_half_rows=c["matmul_half_rows"],
        attention_flops=Curve.saturating(
            target.bf16_tflops_dense * 1e12 * c["attention_efficiency"], attention_half_rows(c), ROW_SIZES
        ),
        decode_attention=decode_attention(target, _engine_of(generation), generation, c["attention_efficiency"]),
        kernel_overhead_s=c["kernel_overhead_s"], dispatch_overhead_s=c["dispatch_overhead_s"],
        step_overhead_s=c["step_overhead_s"], request_overhead_s=ended.seconds,
        prefill_dispatch_overhead_s=prefill_launch_s(generation, c, target.vendor),
        prefill_graphs=graphed_release(generation, release, target.vendor),
        collective=CollectiveCost(latency_s=latency, bandwidth_bytes_per_s=link_bandwidth * c["link_efficiency"],
                                  link=link),
        constants={name: f"{value:g}" for name, value in c.items()}
        | ({} if generation is None else {"request_overhead_s": f"{ended.seconds:g} ({ended.source})"})
        | _measured_launch_constant(generation, target.vendor),
        relative_error=error, ttft_relative_error=ttft_error,
    )  # fmt: skip


def _engine_of(generation: str | None) -> str:
    """The engine of ``generation`` (``vllm-v1`` -> ``vllm``); vLLM, the default engine, without one."""
    return "vllm" if generation is None else generation.partition("-")[0]


def _measured_launch_constant(generation: str | None, vendor: str) -> dict[str, str]:
    """The generation's measured host launch time per eager prefill operator on ``vendor``'s GPUs as a profile
    constant, with its source, where it carries one (``core.engine.eager_launch``); none where it is fitted."""
    measured = measured_launch(generation, vendor)
    if measured is None:
        return {}
    return {"prefill_dispatch_overhead_s": f"{measured.seconds:g} ({measured.source})"}


def profile_generation(profile: DeviceProfile) -> str | None:
    """The engine generation whose constants ``prior_profile`` built ``profile`` with, read from the name it gave it
    (``h200-prior@sglang-0.5``); None: the default constants, or a measured profile."""
    if profile.kind != "prior":
        return None
    return profile.name.partition("@")[2] or None


def _unpadded(target: Target) -> DecodeAttention:
    """The datasheet's decode attention: no padding, fp8 MMAs on an fp8 cache, at the peaks (the roofline's)."""
    return decode_attention(target, "vllm", None, 1.0).unpadded()


def datasheet_profile(target: Target, weight_dtype: str = "bf16") -> DeviceProfile:
    """``target``'s datasheet as a profile: peak rates at every size, no fixed costs. The roofline bound."""
    link, link_bandwidth = _link(target)
    flops = peak_matmul_flops(target, weight_dtype)
    return DeviceProfile(
        name=f"{target.id}-datasheet", kind="ceiling", device="cuda", device_name=target.name, dtype=weight_dtype,
        target_id=target.id, source=f"{target.name} datasheet peaks ({target.source})",
        weight_bandwidth=Curve.flat(target.bandwidth_bytes_per_s), cache_bandwidth=Curve.flat(target.bandwidth_bytes_per_s),
        matmul=Curve.flat(flops), matmul_by_dtype=dtype_matmul_curves(target, 1.0, 0.0),
        attention_flops=Curve.flat(target.bf16_tflops_dense * 1e12), decode_attention=_unpadded(target),
        kernel_overhead_s=0.0,
        dispatch_overhead_s=0.0, step_overhead_s=0.0,
        collective=CollectiveCost(latency_s=0.0, bandwidth_bytes_per_s=link_bandwidth, link=link), relative_error=0.0,
    )  # fmt: skip
