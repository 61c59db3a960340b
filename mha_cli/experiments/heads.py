"""Experiment ``heads``: does splitting a fixed width into more heads help a one-layer model copy?

d_model stays 64; n_heads runs over 1, 2, 4, 8, 16 (head width 64 down to 4). Each model is a
one-layer decoder (``lm.build_lm``, MHA, learned positions) trained on the copy task of ``data.copy_task_batch``
with the same batches and settings, once per seed. Two verdicts (help, plateau, hurt...) are computed
by ``judge_head_counts`` with stated tolerances: one on the held-out loss after training, one on how
fast the task is learned (steps until the smoothed training loss falls below ``solved_nats``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from statistics import mean

import torch

from mha_cli.core.schemas import ModelSpec
from mha_cli.experiments.common import command_line, deterministic_run, progress_bar, seeded_generator
from mha_cli.experiments.data import copy_task_batch
from mha_cli.experiments.heads_models import (
    HEAD_COUNTS,
    HeadsJudgement,
    HeadsPoint,
    HeadsResult,
    HeadsRun,
    HeadsSettings,
    Verdict,
)
from mha_cli.experiments.heads_plot import heads_figure
from mha_cli.experiments.heads_report import heads_report
from mha_cli.experiments.lm import build_lm, n_parameters
from mha_cli.experiments.outputs import ExperimentOutputs
from mha_cli.experiments.train import TrainSettings, evaluate, scored_accuracy, trailing_mean, train
from mha_cli.nn.device import resolve_device

__all__ = ["HEAD_COUNTS", "HeadsResult", "HeadsSettings", "judge_head_counts", "run_heads", "steps_to_solve"]
EVAL_SEED_OFFSET = 10_000
"""The held-out copy sequences come from seed + this offset: never a training batch."""


def judge_head_counts(
    head_counts: list[int], values: list[float], tolerance: float, *, measure: str = "loss", unit: str = "nats"
) -> HeadsJudgement:
    """Classify how a lower-is-better ``measure`` responds to more heads (head_counts ascending).

    best: the lowest value; enough: the fewest heads within ``tolerance`` of it. More heads
    - help when enough is the largest count tried;
    - plateau when enough lies between and the largest count is still within tolerance;
    - help-then-hurt when enough lies between and the largest count is worse than best + tolerance;
    - hurt when one head is already within tolerance of the best and the largest count is not;
    - have no effect when every count is within tolerance of the best.
    """
    best_value = min(values)
    best = head_counts[values.index(best_value)]
    enough_index = next(i for i, value in enumerate(values) if value <= best_value + tolerance)
    enough = head_counts[enough_index]
    first, last = head_counts[0], head_counts[-1]
    last_worse = values[-1] > best_value + tolerance
    margin = f"{tolerance:.3g} {unit}"
    spread = f"{measure} {values[0]:.4g} {unit} at {first} head(s), best {best_value:.4g} at {best}" + (
        f", {values[-1]:.4g} at {last}" if best != last else ""
    )
    if enough_index == 0:
        if last_worse:
            verdict: Verdict = "hurt"
            text = f"More heads hurt: {first} head(s) are already within {margin} of the best, {last} are worse"
        else:
            verdict = "no-effect"
            text = f"The head count makes no difference beyond {margin}"
    elif enough == last:
        verdict = "help"
        text = f"More heads help all the way to {last}"
    elif last_worse:
        verdict = "help-then-hurt"
        text = f"More heads help up to {enough}, then hurt ({last} is worse than the best by more than {margin})"
    else:
        verdict = "plateau"
        text = f"More heads help up to {enough}, then plateau (within {margin} up to {last})"
    return HeadsJudgement(verdict=verdict, best_heads=best, enough_heads=enough, sentence=f"{text}: {spread}.")


def judge_speed(points: list[HeadsPoint], relative_tolerance: float) -> HeadsJudgement | None:
    """The verdict on learning speed, if every head count learned the copy."""
    steps = [p.mean_steps_to_solve for p in points]
    if any(value is None for value in steps):
        return None
    known = [float(value) for value in steps if value is not None]
    return judge_head_counts(
        [p.n_heads for p in points], known, relative_tolerance * min(known), measure="steps to learn", unit="steps"
    )


def steps_to_solve(losses: list[float], threshold: float) -> int | None:
    """First step (1-based) whose trailing 10-step mean loss is below ``threshold``."""
    return next((i + 1 for i, value in enumerate(trailing_mean(losses)) if value < threshold), None)


def copy_model_spec(settings: HeadsSettings, n_heads: int) -> ModelSpec:
    """One MHA layer of width d_model split into ``n_heads``; vocabulary = symbols + separator."""
    return ModelSpec(
        name=f"copy-{n_heads}h",
        d_model=settings.d_model,
        n_layers=1,
        n_heads=n_heads,
        variant="MHA",
        vocab_size=settings.n_symbols + 1,
        d_ff=4 * settings.d_model,
        position_embeddings=2 * settings.copy_length,
    )


def run_heads(
    *, quick: bool = False, seed: int = 0, device: str = "auto", out_dir: Path | None = None, force: bool = False
) -> HeadsResult:
    """Train every (head count, seed) model, judge, plot and write the outputs."""
    settings = HeadsSettings.for_run(quick=quick, seed=seed)
    outputs = ExperimentOutputs("heads", out_dir, force=force)
    torch_device = resolve_device(device)  # a bad --device is refused before the folder is created
    outputs.check_writable()
    started = time.perf_counter()
    runs: list[HeadsRun] = []
    with deterministic_run(seed, torch_device) as environment, progress_bar() as progress:
        total = len(settings.head_counts) * len(settings.seeds) * settings.steps
        task = progress.add_task("heads: training", total=total)
        for run_seed in settings.seeds:
            eval_inputs, eval_targets = copy_task_batch(
                settings.eval_sequences,
                settings.copy_length,
                settings.n_symbols,
                seeded_generator(run_seed + EVAL_SEED_OFFSET),
            )
            for n_heads in settings.head_counts:
                progress.update(task, description=f"heads: {n_heads:>2} head(s), seed {run_seed}")
                runs.append(
                    train_one(
                        settings,
                        n_heads,
                        run_seed,
                        torch_device,
                        (eval_inputs, eval_targets),
                        lambda: progress.advance(task),
                    )
                )
    environment.wall_seconds = round(time.perf_counter() - started, 1)
    points = summarise(settings, runs)
    judgement = judge_head_counts(
        [p.n_heads for p in points],
        [p.mean_eval_loss for p in points],
        settings.tolerance_nats,
        measure="held-out loss",
    )
    result = HeadsResult(
        command=command_line("heads", quick=quick, seed=seed, device=device, out_dir=out_dir, force=force),
        quick=quick,
        environment=environment,
        settings=settings,
        chance_loss=math.log(settings.n_symbols),
        runs=runs,
        points=points,
        judgement=judgement,
        speed_judgement=judge_speed(points, settings.speed_tolerance),
        files=outputs.files,
    )
    outputs.write(heads_report(result), heads_figure(result), result)
    return result


def train_one(
    settings: HeadsSettings,
    n_heads: int,
    seed: int,
    device: torch.device,
    evaluation: tuple[torch.Tensor, torch.Tensor],
    on_step: Callable[[], None],
) -> HeadsRun:
    torch.manual_seed(seed)  # same initialisation stream for every head count
    spec = copy_model_spec(settings, n_heads)
    model = build_lm(spec, device=device)
    batches = seeded_generator(seed)  # same batches for every head count
    losses = train(
        model,
        lambda: copy_task_batch(settings.batch, settings.copy_length, settings.n_symbols, batches),
        TrainSettings(steps=settings.steps, learning_rate=settings.learning_rate),
        device,
        on_step,
    )
    inputs, targets = evaluation
    return HeadsRun(
        n_heads=n_heads,
        head_dim=spec.dim_per_head,
        seed=seed,
        n_parameters=n_parameters(model),
        train_loss=losses,
        eval_loss=evaluate(model, inputs, targets, device),
        eval_accuracy=scored_accuracy(model, inputs, targets, device),  # the copy half
        steps_to_solve=steps_to_solve(losses, settings.solved_nats),
    )


def summarise(settings: HeadsSettings, runs: list[HeadsRun]) -> list[HeadsPoint]:
    points = []
    for n_heads in settings.head_counts:
        mine = [run for run in runs if run.n_heads == n_heads]
        losses = [run.eval_loss for run in mine]
        solved = [run.steps_to_solve for run in mine]
        points.append(
            HeadsPoint(
                n_heads=n_heads,
                head_dim=mine[0].head_dim,
                mean_eval_loss=mean(losses),
                min_eval_loss=min(losses),
                max_eval_loss=max(losses),
                mean_eval_accuracy=mean(run.eval_accuracy for run in mine),
                mean_steps_to_solve=None if None in solved else mean(step for step in solved if step is not None),
            )
        )
    return points
