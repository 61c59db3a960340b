"""The figure of experiment ``heads``: training curves, final loss per head count, learning speed if judged."""

from __future__ import annotations

from statistics import mean
from typing import TYPE_CHECKING

from mha_cli.experiments.common import new_figure, plain_log_ticks
from mha_cli.experiments.heads_models import HeadsResult
from mha_cli.experiments.train import trailing_mean

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def heads_figure(result: HeadsResult) -> Figure:
    """Training curves and final loss; a third panel, learning speed, only when the speed was judged."""
    judged = result.speed_judgement is not None
    figure, panels = new_figure(3 if judged else 2, width=4.6)
    curves, finals = panels[0], panels[1]
    for n_heads in result.settings.head_counts:
        mine = [run.train_loss for run in result.runs if run.n_heads == n_heads]
        averaged = [mean(step) for step in zip(*mine, strict=True)]
        curves.plot(range(1, len(averaged) + 1), trailing_mean(averaged), label=f"{n_heads} head(s)")
    curves.axhline(result.chance_loss, color="grey", linestyle=":", label="chance")
    curves.set_yscale("log")
    plain_log_ticks(curves.yaxis)
    curves.set(xlabel="step", ylabel="training loss (nats, 10-step mean)", title="Copy task, d_model = 64")
    curves.legend()
    x = [p.n_heads for p in result.points]
    y = [p.mean_eval_loss for p in result.points]
    errors = [
        [p.mean_eval_loss - p.min_eval_loss for p in result.points],
        [p.max_eval_loss - p.mean_eval_loss for p in result.points],
    ]
    finals.errorbar(x, y, yerr=errors, marker="o", capsize=3)
    tolerance = result.settings.tolerance_nats
    finals.axhspan(min(y), min(y) + tolerance, color="tab:green", alpha=0.15, label=f"best + {tolerance} nats")
    finals.set_yscale("log")
    plain_log_ticks(finals.yaxis)
    finals.legend()
    finals.set_xscale("log", base=2)
    finals.set_xticks(x, [str(h) for h in x])
    finals.set(xlabel="n_heads", ylabel="held-out loss (nats)", title=f"Final loss: {result.judgement.verdict}")
    if result.speed_judgement is not None:
        speed = panels[2]
        solved = [(p.n_heads, p.mean_steps_to_solve) for p in result.points if p.mean_steps_to_solve is not None]
        speed.plot([h for h, _ in solved], [steps for _, steps in solved], marker="o", color="tab:orange")
        speed.set_xscale("log", base=2)
        speed.set_xticks(x, [str(h) for h in x])
        speed.set(
            xlabel="n_heads", ylabel=f"steps to < {result.settings.solved_nats} nats",
            title=f"Speed: {result.speed_judgement.verdict}",
        )  # fmt: skip
    if result.quick:
        figure.suptitle("smoke run (--quick): not evidence", color="tab:red")
    return figure
