"""The figure of experiment ``heads``: training curves, held-out loss and accuracy per head count, floors marked."""

from __future__ import annotations

from statistics import mean
from typing import TYPE_CHECKING

from mha_cli.experiments.common import new_figure, plain_log_ticks
from mha_cli.experiments.heads_models import HeadsResult
from mha_cli.experiments.train import CURVE_EVERY, trailing_mean

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CURVE_BLOCKS = 3
"""Blocks of ``CURVE_EVERY`` steps averaged in the training curves (30 steps)."""


def heads_figure(result: HeadsResult) -> Figure:
    """Three panels: mean training curves; held-out loss per head count (every seed, mean, range); accuracy."""
    figure, (curves, losses, accuracy) = new_figure(3, width=4.6)
    s = result.settings
    for n_heads in [*s.head_counts, None]:
        mine = [run.train_curve for run in result.runs if run.n_heads == n_heads]
        averaged = [mean(block) for block in zip(*mine, strict=True)]
        label = "no attention" if n_heads is None else f"{n_heads} head(s)"
        style = {"color": "black", "linestyle": "--"} if n_heads is None else {}
        steps = [CURVE_EVERY * (i + 1) for i in range(len(averaged))]
        curves.plot(steps, trailing_mean(averaged, CURVE_BLOCKS), label=label, **style)
    curves.axhline(result.chance_loss, color="grey", linestyle=":", label="chance")
    curves.set_yscale("log")
    plain_log_ticks(curves.yaxis)
    curves.set(
        xlabel="step", ylabel=f"training loss (nats, {CURVE_EVERY * CURVE_BLOCKS}-step mean of {len(result.seeds)} seeds)",
        title=f"Gather {s.streams} streams, d_model {s.d_model}",
    )  # fmt: skip
    curves.legend(fontsize="small")
    x = [p.n_heads for p in result.points]
    for panel, field, floor, chance in (
        (losses, "eval_loss", result.no_attention.eval_loss, result.chance_loss),
        (accuracy, "eval_accuracy", result.no_attention.eval_accuracy, result.chance_accuracy),
    ):
        spreads = [getattr(p, field) for p in result.points]
        for count, spread in zip(x, spreads, strict=True):
            panel.scatter([count] * len(spread.values), spread.values, color="tab:blue", alpha=0.5, s=14)
        panel.errorbar(
            x,
            [sp.mean for sp in spreads],
            yerr=[[sp.mean - sp.low for sp in spreads], [sp.high - sp.mean for sp in spreads]],
            marker="o", capsize=3, color="tab:blue", label="mean, seed range",
        )  # fmt: skip
        panel.axhspan(floor.low, floor.high, color="black", alpha=0.15)
        panel.axhline(floor.mean, color="black", linestyle="--", label="no attention")
        panel.axhline(chance, color="grey", linestyle=":", label="chance")
        panel.set_xscale("log", base=2)
        panel.set_xticks(x, [f"{p.n_heads}\n({p.head_dim})" for p in result.points])
    losses.set_yscale("log")
    plain_log_ticks(losses.yaxis)
    losses.set(
        xlabel="n_heads (head_dim)", ylabel="held-out loss (nats)", title=f"Held-out loss: {result.judgement.verdict}"
    )
    losses.legend(fontsize="small")
    accuracy.set_ylim(0, 1.02)
    accuracy.set(xlabel="n_heads (head_dim)", ylabel="held-out tuple accuracy", title="Accuracy (whole tuple)")
    if result.quick:
        figure.suptitle("smoke run (--quick): not evidence", color="tab:red")
    return figure
