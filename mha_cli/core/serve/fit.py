"""``mha calibrate --from``: a device profile fitted to measured benchmark runs through the simulated serving loop.

Every run (``core.serve.bench_results``) is replayed in the simulator (``core.serve.simulate``): its requests'
lengths, its closed loop of N users or its measured send times, the engine's scheduler and pool from the memory
plan. Six constants of the profile are fitted so that the simulated runs match the measured ones: a factor on
the memory bandwidths, a factor on the matmul and attention FLOP/s, the engine's step overhead, the fixed cost of a
kernel, the host's cost per sequence in a step, and a request's overhead outside the steps (HTTP, tokenising). The fit minimises the mean squared log
error of the mean and median TTFT and TPOT and the output throughput over the fitted runs, by a coordinate search in
log space (each constant scaled by 2, 1.4, 1.15, 1.05 in turn while that lowers the error). The held-out runs
(never fitted) give the profile's band: the 80th percentile of their absolute relative errors. Beside each run the
closed-form model's figures on the same profile (``core.cost.serving``) are the floor the simulation must beat.
Pure Python.
"""

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from pydantic import Field

from mha_cli.core.cost.profile import FITTED_SOURCE, NONE_HELD_OUT, CollectiveCost, Curve, DeviceProfile
from mha_cli.core.cost.serving import predict_serving
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.engine.plan import EnginePlan
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record, empty_list
from mha_cli.core.serve.bench_results import MeasuredRun
from mha_cli.core.serve.simulate import EngineLimits, Simulation, engine_limits, simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload

if TYPE_CHECKING:
    from mha_cli.core.schemas import DeploymentSpec, ModelSpec
    from mha_cli.core.targets import ResolvedTarget

FIGURES = ("ttft_mean", "ttft_median", "ttft_p99", "tpot_mean", "tpot_median", "tpot_p99", "output_tokens_per_s")
FITTED_FIGURES = ("ttft_mean", "ttft_median", "tpot_mean", "tpot_median", "output_tokens_per_s")
"""What the fit matches; the p99s are reported, not fitted."""
BAND_FIGURES = ("ttft_mean", "tpot_mean", "output_tokens_per_s")
"""The held-out errors the profile's band is the 80th percentile of."""
STEPS = (2.0, 1.4, 1.15, 1.05)
"""The factors the coordinate search tries on each constant, coarse to fine."""
MAX_ROUNDS = 4
"""Passes over the constants at each step size at most."""
FLOOR_S = 1e-7
"""The smallest fixed cost the search tries (a constant at 0 would stay there)."""


class Constants(NamedTuple):
    """What the fit moves: factors on the base profile's rates, and three fixed costs in seconds."""

    bandwidth: float = 1.0
    compute: float = 1.0
    step_overhead_s: float = 1e-3
    kernel_overhead_s: float = 1e-6
    sequence_overhead_s: float = 1e-5
    request_overhead_s: float = 1e-3


def apply(base: DeviceProfile, constants: Constants) -> DeviceProfile:
    """``base`` with its rates scaled and its fixed costs set to ``constants``."""

    def scaled(curve: Curve, factor: float) -> Curve:
        return Curve(sizes=curve.sizes, rates=[rate * factor for rate in curve.rates])

    return base.model_copy(
        update={
            "weight_bandwidth": scaled(base.weight_bandwidth, constants.bandwidth),
            "cache_bandwidth": scaled(base.cache_bandwidth, constants.bandwidth),
            "matmul": scaled(base.matmul, constants.compute),
            "matmul_by_dtype": {dtype: scaled(curve, constants.compute) for dtype, curve in base.matmul_by_dtype.items()},
            "attention_flops": scaled(base.attention_flops, constants.compute),
            "decode_attention": base.decode_attention.scaled(constants.compute) if base.decode_attention else None,
            "step_overhead_s": constants.step_overhead_s, "kernel_overhead_s": constants.kernel_overhead_s,
            "sequence_overhead_s": constants.sequence_overhead_s, "request_overhead_s": constants.request_overhead_s,
        }
    )  # fmt: skip


def figures_of(run: MeasuredRun | Simulation) -> dict[str, float]:
    return {
        "ttft_mean": run.ttft_ms.mean, "ttft_median": run.ttft_ms.median, "ttft_p99": run.ttft_ms.p99,
        "tpot_mean": run.tpot_ms.mean, "tpot_median": run.tpot_ms.median, "tpot_p99": run.tpot_ms.p99,
        "output_tokens_per_s": run.output_tokens_per_s,
    }  # fmt: skip


class RunComparison(Record):
    """One measured run beside its simulation (and the closed form) on the fitted profile."""

    path: str
    load: str
    held_out: bool
    measured: dict[str, float]
    simulated: dict[str, float]
    closed_form: dict[str, float]
    """Mean TTFT, mean TPOT (the closed form's ITL) and output tokens/s of the closed-form model."""


class FitSummary(Record):
    """Median absolute relative error per figure, over the fitted or the held-out runs."""

    runs: int
    simulated: dict[str, float]
    closed_form: dict[str, float]


class CalibrationFit(Record):
    """``mha calibrate --from``'s result: the profile, every run compared, and the errors fitted and held out."""

    profile: DeviceProfile
    path: str | None = None
    engine: str
    model: str
    runs: list[RunComparison]
    fitted: FitSummary
    held_out: FitSummary | None
    notes: list[str] = Field(default_factory=empty_list)
    use: str | None = None
    """A command that predicts with the profile."""


class Replay(NamedTuple):
    """What a run needs to be simulated: the model on one replica, the engine's scheduler settings and pool."""

    case: ServingCase
    engine: EnginePlan

    def limits(self) -> EngineLimits:
        return engine_limits(self.engine, recv_interval=self.case.recv_interval)


def workload_of(run: MeasuredRun) -> Workload:
    """The run's requests as the simulator's client sends them: its lengths, its cap, its send times (open loop)."""
    return Workload(
        lengths=run.lengths, rate=run.rate, burstiness=run.burstiness, max_concurrency=run.max_concurrency,
        send_times=run.send_times if run.rate is not None else None,
    )  # fmt: skip


def simulate_run(run: MeasuredRun, replay: Replay, profile: DeviceProfile) -> Simulation:
    cost = StepCost(Stepper(replay.case, profile))
    simulated, _ = simulate(workload_of(run), replay.limits(), cost, request_overhead_s=profile.request_overhead_s)
    return simulated


def _error(simulated: float, measured: float) -> float:
    return simulated / measured - 1 if measured > 0 else 0.0


def _loss(runs: list[MeasuredRun], replay: Replay, profile: DeviceProfile) -> float:
    total = 0.0
    for run in runs:
        sim, measured = figures_of(simulate_run(run, replay, profile)), figures_of(run)
        for name in FITTED_FIGURES:
            if measured[name] > 0 and sim[name] > 0:
                total += math.log(sim[name] / measured[name]) ** 2
    return total / max(1, len(runs) * len(FITTED_FIGURES))


def factor_caps(base: DeviceProfile) -> tuple[float, float]:
    """The largest bandwidth and compute factors that keep ``base``'s rates at or below its GPU's datasheet peaks
    (``core.cost.priors.datasheet_profile``): a fit past them would price below the roofline bound the plan prints.
    No cap (inf) for a profile of no datasheet (a CPU, a target no row names)."""
    from mha_cli.core.cost.priors import datasheet_profile
    from mha_cli.core.targets import load_targets

    target = load_targets().get(base.target_id or "")
    if target is None:
        return math.inf, math.inf
    sheet = datasheet_profile(target, base.dtype)
    bandwidth = min(sheet.weight_bandwidth.peak / base.weight_bandwidth.peak,
                    sheet.cache_bandwidth.peak / base.cache_bandwidth.peak)  # fmt: skip
    ratios = [sheet.matmul.peak / base.matmul.peak, sheet.attention_flops.peak / base.attention_flops.peak]
    ratios += [sheet.matmul_by_dtype[d].peak / curve.peak for d, curve in base.matmul_by_dtype.items()
               if d in sheet.matmul_by_dtype and curve.peak > 0]  # fmt: skip
    return bandwidth, min(ratios)


def fit_constants(
    runs: list[MeasuredRun], replay: Replay, base: DeviceProfile, start: Constants,
    on_step: Callable[[float], None] | None = None,
) -> tuple[Constants, float]:  # fmt: skip
    """The constants minimising ``_loss`` over ``runs`` (see the module docstring), and that loss; the rate factors
    held at or below the datasheet's (``factor_caps``)."""
    caps = factor_caps(base)
    best = start
    best_loss = _loss(runs, replay, apply(base, best))
    for step in STEPS:
        for _ in range(MAX_ROUNDS):
            improved = False
            for index in range(len(best)):
                for factor in (step, 1 / step):
                    trial_values = list(best)
                    trial_values[index] = max(FLOOR_S, trial_values[index] * factor)
                    if index < len(caps):  # bandwidth, compute: never past the datasheet
                        trial_values[index] = min(trial_values[index], caps[index])
                    trial = Constants(*trial_values)
                    loss = _loss(runs, replay, apply(base, trial))
                    if loss < best_loss - 1e-12:
                        best, best_loss, improved = trial, loss, True
                        break
            if on_step is not None:
                on_step(best_loss)
            if not improved:
                break
    return best, best_loss


def held_out_runs(runs: list[MeasuredRun], hold_out: list[str]) -> list[bool]:
    """Which runs are held out: those whose file name contains one of ``hold_out``; by default every third run
    in order of mean prompt length and load (the second, fifth, ...), so both ends of the grid stay fitted."""
    if hold_out:
        flags = [any(text in run.path for text in hold_out) for run in runs]
        if all(flags):
            raise BadInputError("--hold-out leaves no run to fit on: hold out fewer")
        unmatched = [text for text in hold_out if not any(text in run.path for run in runs)]
        if unmatched:  # a typo would hold nothing out, and the band would be the fit's own error (trial 260)
            names = sorted({run.path.rsplit("/", 1)[-1] for run in runs})
            raise BadInputError(
                f"--hold-out {', '.join(map(repr, unmatched))} is in no run's file name: give part of one (they are"
                f" {', '.join(names[:4])}{', ...' if len(names) > 4 else ''})"
            )
        return flags
    order = sorted(range(len(runs)), key=lambda i: _grid_key(runs[i]))
    flags = [False] * len(runs)
    if len(runs) >= 3:
        for position, index in enumerate(order):
            flags[index] = position % 3 == 1
    return flags


def _grid_key(run: MeasuredRun) -> tuple[float, float, float]:
    mean_in = sum(i for i, _ in run.lengths) / len(run.lengths)
    return mean_in, run.rate or 0.0, run.max_concurrency or 0


def closed_form(run: MeasuredRun, replay: Replay, profile: DeviceProfile) -> dict[str, float]:
    """The closed-form model's mean TTFT, TPOT and output tokens/s for a closed-loop run (open loops: by Little's
    law, the users in flight = rate x the measured mean end-to-end latency)."""
    mean_in = round(sum(i for i, _ in run.lengths) / len(run.lengths))
    mean_out = round(sum(o for _, o in run.lengths) / len(run.lengths))
    users = run.max_concurrency or len(run.lengths)
    if run.rate is not None:
        e2e_s = (run.e2e_ms.mean if run.e2e_ms is not None else run.ttft_ms.mean + mean_out * run.tpot_ms.mean) / 1e3
        users = max(1, min(users, math.ceil(run.rate * e2e_s)))
    case = replay.case._replace(isl=mean_in, osl=mean_out, concurrency=users)
    predicted = predict_serving(case, profile, profile.ceiling())
    return {
        "ttft_mean": predicted.ttft_ms, "tpot_mean": predicted.itl_ms,  # the request's overhead is in ttft_ms
        "output_tokens_per_s": predicted.output_tokens_per_s,
    }  # fmt: skip


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def summarise_errors(rows: list[RunComparison]) -> FitSummary:
    simulated = {
        name: _median([abs(_error(row.simulated[name], row.measured[name])) for row in rows]) for name in FIGURES
    }
    closed = {
        name: _median([abs(_error(row.closed_form[name], row.measured[name])) for row in rows])
        for name in ("ttft_mean", "tpot_mean", "output_tokens_per_s")
    }
    return FitSummary(runs=len(rows), simulated=simulated, closed_form=closed)


def band(rows: list[RunComparison]) -> float:
    """The 80th percentile of the absolute relative errors of ``BAND_FIGURES`` over ``rows``."""
    errors = sorted(abs(_error(row.simulated[name], row.measured[name])) for row in rows for name in BAND_FIGURES)
    return errors[min(len(errors) - 1, math.ceil(0.8 * len(errors)) - 1)] if errors else 0.0


def compare(runs: list[MeasuredRun], flags: list[bool], replay: Replay, profile: DeviceProfile) -> list[RunComparison]:
    rows = []
    for run, held in zip(runs, flags, strict=True):
        row = RunComparison(
            path=run.path, load=run.describe(), held_out=held, measured=figures_of(run),
            simulated=figures_of(simulate_run(run, replay, profile)), closed_form=closed_form(run, replay, profile),
        )  # fmt: skip
        rows.append(row)
    return rows


def start_constants(base: DeviceProfile) -> Constants:
    """Where the search starts: the base profile's rates and its fixed costs (small ones raised to a floor)."""
    return Constants(
        step_overhead_s=max(base.step_overhead_s, 1e-4), kernel_overhead_s=max(base.kernel_overhead_s, 1e-7),
        sequence_overhead_s=max(base.sequence_overhead_s, 1e-5), request_overhead_s=max(base.request_overhead_s, 1e-3),
    )  # fmt: skip


def describe_constants(constants: Constants, base: DeviceProfile, runs: int) -> dict[str, str]:
    how = f"fitted on {runs} measured run(s)"
    return {
        "bandwidth_factor": f"{constants.bandwidth:.4g} x {base.name}'s bandwidths ({how})",
        "compute_factor": f"{constants.compute:.4g} x {base.name}'s FLOP/s ({how})",
        "step_overhead_s": f"{constants.step_overhead_s:.4g} ({how})",
        "kernel_overhead_s": f"{constants.kernel_overhead_s:.4g} ({how})",
        "sequence_overhead_s": f"{constants.sequence_overhead_s:.4g} ({how})",
        "request_overhead_s": f"{constants.request_overhead_s:.4g} ({how})",
    }


def nominal_cpu_profile(dtype: str = "bf16") -> DeviceProfile:
    """A starting point for a CPU without a ``mha calibrate --device cpu`` profile: nominal rates the fit scales."""
    from mha_cli.core.machine import cpu_name
    from mha_cli.core.targets import NOMINAL_CPU_BANDWIDTH_GBS, NOMINAL_CPU_TFLOPS

    return DeviceProfile(
        name="cpu-nominal", kind="prior", source="nominal CPU rates (a starting point for a fit, not a measurement)",
        device="cpu", device_name=cpu_name(), dtype=dtype, weight_bandwidth=Curve.flat(NOMINAL_CPU_BANDWIDTH_GBS * 1e9),
        cache_bandwidth=Curve.flat(NOMINAL_CPU_BANDWIDTH_GBS * 1e9), matmul=Curve.flat(NOMINAL_CPU_TFLOPS * 1e12),
        attention_flops=Curve.flat(NOMINAL_CPU_TFLOPS * 1e12), kernel_overhead_s=5e-6, dispatch_overhead_s=5e-6,
        step_overhead_s=1e-3, collective=CollectiveCost(latency_s=1e-5, bandwidth_bytes_per_s=1e10, link="gloo"),
        relative_error=1.0,
    )  # fmt: skip


def replay_for(
    model: "ModelSpec", target: "ResolvedTarget", deployment: "DeploymentSpec", base: DeviceProfile,
    runs: list[MeasuredRun], tp: int | None,
) -> Replay:  # fmt: skip
    """The engine's plan for the runs' longest request on ``target`` (one replica of ``tp``), and the case the cost
    model prices."""
    from mha_cli.core.cost.plan import plan_serving, serving_case
    from mha_cli.core.memory import expert_layout

    isl = max(i for run in runs for i, _ in run.lengths)
    osl = max(o for run in runs for _, o in run.lengths)
    plan = plan_serving(model, target, deployment, base, base.ceiling(), isl=isl, osl=osl, concurrency=1, tp=tp)
    d = plan.deployment
    if d.replicas != 1:
        raise BadInputError(
            f"the runs measured one server: give --target with its {d.tp * d.pp} device(s) (now {d.gpus} in"
            f" {d.replicas} replicas)"
        )
    experts = expert_layout(model, d.tp, d.replicas, deployment)
    case = serving_case(model, deployment, plan.memory, isl=isl, osl=osl, concurrency=1, pp=d.pp, replicas=1,
                        experts=experts)  # fmt: skip
    return Replay(case=case, engine=plan.memory.engine)


def calibrate_from(
    runs: list[MeasuredRun], replay: Replay, base: DeviceProfile, *, name: str, hold_out: list[str],
    on_step: Callable[[float], None] | None = None,
) -> CalibrationFit:  # fmt: skip
    """Fit a profile to ``runs`` (see the module docstring): the fitted runs' constants, every run compared, the
    held-out errors as the profile's band."""
    models = sorted({run.model for run in runs})
    if len(models) > 1:
        raise BadInputError(f"the runs measured {len(models)} models ({', '.join(models)}): calibrate on one model")
    flags = held_out_runs(runs, hold_out)
    fitted_runs = [run for run, held in zip(runs, flags, strict=True) if not held]
    constants, _ = fit_constants(fitted_runs, replay, base, start_constants(base), on_step)
    fitted_profile = apply(base, constants)
    rows = compare(runs, flags, replay, fitted_profile)
    fitted_rows = [row for row in rows if not row.held_out]
    held_rows = [row for row in rows if row.held_out]
    notes = []
    if not held_rows:
        notes.append("fewer than 3 runs: none held out, the band is the fit's own error (give more runs)")
    if base.unstable_reason is not None:  # a measured base kept by --allow-unstable (trial 258)
        notes.append(f"the profile it starts from, {base.name}, was {base.unstable_reason}")
    tools = sorted({run.tool for run in runs})
    from datetime import datetime, timezone

    profile = fitted_profile.model_copy(
        update={
            "name": name, "kind": "calibrated",
            "source": f"{FITTED_SOURCE}{len(runs)} run(s) of {', '.join(tools)} ({len(fitted_rows)} fitted"
            + (NONE_HELD_OUT if not held_rows else f", {len(held_rows)} held out)")
            + f" of {models[0]} on {replay.engine.name}, starting from {base.name}",
            "constants": describe_constants(constants, base, len(fitted_rows)),
            "relative_error": band(held_rows or fitted_rows),
            "ttft_relative_error": None,  # its own runs' band stands for the TTFT too, not the prior's it started from
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
    )  # fmt: skip
    return CalibrationFit(
        profile=profile, engine=replay.engine.name, model=models[0], runs=rows, fitted=summarise_errors(fitted_rows),
        held_out=summarise_errors(held_rows) if held_rows else None, notes=notes,
    )  # fmt: skip
