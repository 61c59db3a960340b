"""``mha plan --plot FILE.png``: one deployment's latency and throughput against concurrency, or a search's Pareto
front.

matplotlib is imported only here. The PNG is written whole or not at all, replaced only with ``--force``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from mha_cli.cli.plot import PANEL_INCHES
from mha_cli.core.config_io import write_bytes_atomic

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from mha_cli.core.cost.plan import ServingPlan
    from mha_cli.core.cost.search import SearchResult


def write_plan_plot(path: Path, result: ServingPlan, *, force: bool) -> None:
    """TTFT and ITL (with the ITL roofline), and tokens/s per GPU, against concurrency; the asked one marked."""
    from matplotlib.figure import Figure

    points = result.sweep
    users = [p.concurrency for p in points]
    asked = result
    trace = asked.simulated.trace if asked.simulated is not None else []
    panels = 3 if trace else 2
    figure = Figure(figsize=(PANEL_INCHES[0] * panels, PANEL_INCHES[1]), layout="constrained")
    latency, throughput, *over_time = figure.subplots(1, panels)
    simulated = asked.simulated_sweep
    closed = " (closed form)" if simulated else ""
    latency.plot(users, [p.ttft_ms for p in points], marker="o", label=f"TTFT{closed}")
    latency.plot(users, [p.itl_ms for p in points], marker="o", label=f"ITL{closed}")
    if simulated:
        label = "mean" if simulated[0].slo_percentile == 0 else f"p{simulated[0].slo_percentile:g}"
        latency.plot(users, [run.ttft_ms.at(run.slo_percentile) for run in simulated], marker="s",
                     color="tab:blue", linestyle=":", label=f"TTFT {label} (simulated)")  # fmt: skip
        latency.plot(users, [run.tpot_ms.mean for run in simulated], marker="s", color="tab:orange",
                     linestyle=":", label="TPOT mean (simulated)")  # fmt: skip
    latency.plot(users, [p.bounds.itl_ms for p in points], linestyle="--", color="grey", label="ITL roofline")
    latency.set_yscale("log")
    latency.set_ylabel("ms")
    throughput.plot(users, [p.output_tokens_per_s_per_gpu for p in points], marker="o",
                    label=f"output tokens/s per GPU{closed}")  # fmt: skip
    if simulated:
        gpus = asked.deployment.gpus
        throughput.plot(users, [run.deployment_output_tokens_per_s / gpus for run in simulated], marker="s",
                        linestyle=":", color="tab:blue", label="simulated")  # fmt: skip
    throughput.set_ylabel("tokens/s per GPU")
    for axes in (latency, throughput):
        axes.set_xscale("log", base=2)
        axes.set_xlabel("concurrency (users)")
        axes.axvline(asked.concurrency, color="black", linewidth=0.8, label=f"asked: {asked.concurrency}")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    if over_time:
        _draw_trace(over_time[0], asked)
    d = asked.deployment
    figure.suptitle(
        f"{result.model_name} on {d.gpus}x{result.target_id} (tp {d.tp}, pp {d.pp}), {asked.isl}/{asked.osl} tokens,"
        f" {result.engine}, profile {asked.profile.name}",
        fontsize=9, family="monospace",
    )  # fmt: skip
    _write(path, figure, force=force)


def _draw_trace(axes: Axes, plan: ServingPlan) -> None:
    """The simulated run over time: requests running and queued in the busiest replica, and its KV pool's use."""
    assert plan.simulated is not None
    trace = plan.simulated.trace
    seconds = [point.seconds for point in trace]
    axes.step(seconds, [point.running for point in trace], where="post", label="running")
    axes.step(seconds, [point.waiting for point in trace], where="post", label="queued in the engine")
    axes.set_xlabel("seconds into the simulated run")
    axes.set_ylabel("requests (busiest replica)")
    pool = axes.twinx()
    pool.plot(seconds, [100 * point.kv_used for point in trace], color="tab:red", linewidth=0.8, label="KV pool used")
    pool.set_ylabel("KV pool used (%)")
    pool.set_ylim(0, 105)
    axes.grid(True, alpha=0.3)
    lines, labels = axes.get_legend_handles_labels()
    more, more_labels = pool.get_legend_handles_labels()
    axes.legend(lines + more, labels + more_labels, fontsize=8, loc="upper right")
    axes.set_title(f"simulated: {plan.simulated.requests:,} requests, {plan.simulated.preemptions} preemption(s)",
                   fontsize=8)  # fmt: skip


def write_pareto_plot(path: Path, result: SearchResult, *, force: bool) -> None:
    """Every candidate (tokens/s per user against per GPU), the Pareto front joined, the pick marked."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=PANEL_INCHES, layout="constrained")
    axes = figure.subplots()
    points = result.candidates
    meets = [c for c in points if c.meets]  # the search's verdict: a simulated miss rules some closed-form passes out
    misses = [c for c in points if not c.meets]
    for group, colour, label in ((meets, "tab:green", "meets the targets"), (misses, "tab:grey", "misses one")):
        axes.scatter([c.tokens_per_s_per_user for c in group], [c.output_tokens_per_s_per_gpu for c in group],
                     s=12, color=colour, label=label)  # fmt: skip
    front = [points[i] for i in result.pareto]
    axes.plot([c.tokens_per_s_per_user for c in front], [c.output_tokens_per_s_per_gpu for c in front],
              color="black", linewidth=0.8, label="Pareto front")  # fmt: skip
    if result.chosen is not None:
        pick = points[result.chosen]
        d = pick.deployment
        axes.scatter([pick.tokens_per_s_per_user], [pick.output_tokens_per_s_per_gpu], s=80, marker="*", color="red",
                     label=f"pick: tp {d.tp} x pp {d.pp} x {d.replicas}, {pick.concurrency} users", zorder=3)  # fmt: skip
    axes.set_xlabel("tokens/s per user")
    axes.set_ylabel("output tokens/s per GPU")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.suptitle(f"{result.model_name} on {result.target}, {result.isl}/{result.osl} tokens", fontsize=9,
                    family="monospace")  # fmt: skip
    _write(path, figure, force=force)


def _write(path: Path, figure: Figure, *, force: bool) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer, metadata={"Software": None})
    write_bytes_atomic(path, buffer.getvalue(), force=force)
