"""The markdown report of experiment ``heads``: setup, results table, what the data shows."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from mha_cli.experiments.common import markdown_table, report_header
from mha_cli.experiments.heads_models import HeadsPoint, HeadsResult


def heads_report(result: HeadsResult) -> str:
    s = result.settings
    rows = [
        [
            str(p.n_heads),
            str(p.head_dim),
            f"{p.mean_eval_loss:.4f}",
            f"{p.min_eval_loss:.4f} - {p.max_eval_loss:.4f}",
            f"{p.mean_eval_accuracy:.3f}",
            "never" if p.mean_steps_to_solve is None else f"{p.mean_steps_to_solve:.1f}",
        ]
        for p in result.points
    ]
    return (
        report_header(
            "Experiment: number of heads at fixed width (copy task)",
            result.command,
            result.environment,
            quick=result.quick,
        )
        + "## Setup\n\n"
        f"One-layer decoder (MHA, learned positions, pre-norm, gated MLP), d_model = {s.d_model}, head width ="
        f" d_model / n_heads. Copy task: {s.copy_length} random symbols out of {s.n_symbols}, a separator, then"
        f" the same symbols again; only the copy is scored (chance: {result.chance_loss:.3f} nats)."
        f" {s.steps} steps of AdamW (lr {s.learning_rate}, batch {s.batch}), seeds {s.seeds}; every head count"
        f" sees the same batches. Held-out loss on {s.eval_sequences} unseen sequences per seed.\n\n"
        "## Results\n\n"
        + markdown_table(
            [
                "n_heads",
                "head_dim",
                "held-out loss (nats)",
                "range over seeds",
                "copy accuracy",
                f"steps to < {s.solved_nats} nats",
            ],
            rows,
        )
        + "\n## What the data shows\n\n"
        f"- Final loss, **{result.judgement.verdict}**: {result.judgement.sentence} Differences under"
        f" {s.tolerance_nats} nats count as equal. {trend_sentence(result.points)}\n" + speed_line(result) + "\n"
        f"![loss curves and final loss]({Path(result.files.plot).name})\n"
    )


def trend_sentence(points: list[HeadsPoint]) -> str:
    """Whether the held-out loss moves one way as heads are added, however little."""
    losses = [p.mean_eval_loss for p in points]
    steps = [after - before for before, after in pairwise(losses)]
    if all(step < 0 for step in steps):
        direction = "falls"
    elif all(step > 0 for step in steps):
        direction = "rises"
    else:
        return "Below that tolerance the loss does not move one way as heads are added."
    change = (losses[-1] - losses[0]) / losses[0]
    return (
        f"Below that tolerance the loss {direction} with every doubling from {points[0].n_heads} to"
        f" {points[-1].n_heads} heads ({change:+.0%} overall)."
    )


def speed_line(result: HeadsResult) -> str:
    s = result.settings
    if result.speed_judgement is None:
        return f"- Speed: not judged, some head count never got below {s.solved_nats} nats in {s.steps} steps.\n"
    return (
        f"- Speed (steps until the smoothed training loss is below {s.solved_nats} nats),"
        f" **{result.speed_judgement.verdict}**: {result.speed_judgement.sentence} Step counts within"
        f" {s.speed_tolerance:.0%} of the fastest count as equal.\n"
    )
