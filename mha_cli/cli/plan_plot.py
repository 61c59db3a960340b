"""``mha plan --plot FILE.png``: TTFT and ITL, and tokens/s per GPU, against concurrency, the asked one marked.

matplotlib is imported only here. The PNG is written whole or not at all, replaced only with ``--force``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from mha_cli.cli.plot import PANEL_INCHES
from mha_cli.core.config_io import write_bytes_atomic

if TYPE_CHECKING:
    from mha_cli.core.cost.plan import ServingPlan


def write_plan_plot(path: Path, result: ServingPlan, *, force: bool) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    points = result.sweep
    users = [p.concurrency for p in points]
    asked = result
    figure = Figure(figsize=(PANEL_INCHES[0] * 2, PANEL_INCHES[1]), layout="constrained")
    latency, throughput = figure.subplots(1, 2)
    latency.plot(users, [p.ttft_ms for p in points], marker="o", label="TTFT")
    latency.plot(users, [p.itl_ms for p in points], marker="o", label="ITL")
    latency.plot(users, [p.bounds.itl_ms for p in points], linestyle="--", color="grey", label="ITL roofline")
    latency.set_yscale("log")
    latency.set_ylabel("ms")
    throughput.plot(users, [p.output_tokens_per_s_per_gpu for p in points], marker="o", label="output tokens/s per GPU")
    throughput.set_ylabel("tokens/s per GPU")
    for axes in (latency, throughput):
        axes.set_xscale("log", base=2)
        axes.set_xlabel("concurrency (users)")
        axes.axvline(asked.concurrency, color="black", linewidth=0.8, label=f"asked: {asked.concurrency}")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    d = asked.deployment
    figure.suptitle(
        f"{result.model_name} on {d.gpus}x{result.target_id} (tp {d.tp}, pp {d.pp}), {asked.isl}/{asked.osl} tokens,"
        f" {result.engine}, profile {asked.profile.name}",
        fontsize=9, family="monospace",
    )  # fmt: skip
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer, metadata={"Software": None})
    write_bytes_atomic(path, buffer.getvalue(), force=force)
