"""Train the scaled copy and its 1-layer control on induction; score both on held-out sequences.

The copy (``layers`` deep) trains until its validation accuracy reaches the stop target or
``max_steps``; the control (1 layer) then trains on the same batch stream for as many steps. Both
are built by the project's decoder (``mha_cli.nn.build_model``) and trained by the experiments'
loop (``mha_cli.experiments.train``), inside ``deterministic_run`` (a seed gives the same result on
CPU). The reported accuracies are measured on a test set that plays no part in stopping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from mha_cli.core.rules.catalog import TEST_ACCURACY
from mha_cli.core.schemas import ModelSpec
from mha_cli.experiments.common import deterministic_run, seeded_generator
from mha_cli.experiments.data import IGNORE_INDEX
from mha_cli.experiments.train import TrainSettings, scored_accuracy, train
from mha_cli.hook.result import HookResult, hook_passed
from mha_cli.hook.scale import scaled_copy
from mha_cli.hook.sizes import DEFAULT_SIZE, HookSize
from mha_cli.hook.task import InductionTask
from mha_cli.nn.device import device_name, resolve_device
from mha_cli.nn.model import build_model

ProgressFn = Callable[[str, int, int], None]
"""on_progress(label, steps done, steps at most): called after every training step."""

STOP_ACCURACY = (1.0 + TEST_ACCURACY) / 2
"""Validation accuracy that ends training: halfway between the rule's threshold and 1, so that the separate
test set, measured after, does not fall just under the threshold when training stops at the threshold."""

# Seed offsets of the independent random streams (the weights use ``seed`` itself).
_TRAIN_STREAM, _VALIDATION_STREAM, _TEST_STREAM = 1, 2, 3


@dataclass(frozen=True)
class Trained:
    """One trained model's figures."""

    steps: int
    validation_accuracy: float
    test_accuracy: float
    omitted: list[str]
    """Family details of the spec the decoder does not reproduce (``DecoderLM.omitted``)."""
    scored_targets: int
    """Induction targets in the test set."""


def run_hook(
    design: ModelSpec,
    *,
    layers: int = 2,
    seed: int = 0,
    device: str = "cpu",
    size: HookSize | None = None,
    max_steps: int | None = None,
    on_progress: ProgressFn | None = None,
) -> HookResult:
    """Run the testability hook on ``design``: an N-layer copy and a 1-layer control, trained and scored.

    ``size`` defaults to ``DEFAULT_SIZE`` (what ``mha verify --hook`` runs; tests pass ``QUICK_SIZE``).
    ``max_steps`` overrides ``size.max_steps`` (tests use a few steps to force a failure).
    """
    size = size or DEFAULT_SIZE
    steps_cap = size.max_steps if max_steps is None else max_steps
    copy = scaled_copy(design, layers, size)
    control = scaled_copy(design, 1, size)
    target = resolve_device(device)
    started = time.perf_counter()
    common = {"seed": seed, "size": size, "device": str(target), "on_progress": on_progress}
    main = train_copy(copy.spec, max_steps=steps_cap, label=f"hook: {layers} layers", **common)
    control_run = train_copy(control.spec, max_steps=main.steps, label="control: 1 layer", **common)
    seconds = time.perf_counter() - started
    return HookResult(
        accuracy=main.test_accuracy,
        threshold=TEST_ACCURACY,
        passed=hook_passed(main.test_accuracy, control_run.test_accuracy, TEST_ACCURACY),
        layers=layers,
        control_accuracy=control_run.test_accuracy,
        control_below_threshold=control_run.test_accuracy < TEST_ACCURACY,
        steps=main.steps,
        max_steps=steps_cap,
        control_steps=control_run.steps,
        stop_accuracy=STOP_ACCURACY,
        validation_accuracy=main.validation_accuracy,
        seconds=round(seconds, 2),
        scaled=copy.changes + [f"not reproduced by the decoder: {detail}" for detail in main.omitted],
        size=size.name,
        task=_describe(size, mla=design.attention.mla is not None),
        scored_targets=main.scored_targets,
        seed=seed,
        device=str(target),
        device_name=device_name(target),
    )


def train_copy(
    spec: ModelSpec,
    *,
    seed: int = 0,
    size: HookSize | None = None,
    max_steps: int | None = None,
    device: str = "cpu",
    label: str = "copy",
    on_progress: ProgressFn | None = None,
) -> Trained:
    """Build ``spec`` with the project's decoder and train it on induction, seeded and deterministic.

    Stops once the validation accuracy reaches ``STOP_ACCURACY`` or after ``max_steps`` (default
    ``size.max_steps``); the test accuracy is measured after. ``run_hook`` calls this for the copy and
    the control, with the same ``seed``: the same initial draw, the same batches, the same held-out sets.
    """
    size = size or DEFAULT_SIZE
    steps = size.max_steps if max_steps is None else max_steps
    if steps < 1:
        raise ValueError(f"max_steps must be at least 1, not {steps}")
    task = InductionTask(size.vocab_size, size.seq_len, size.min_segment, size.max_segment)
    validation = task.batch(size.n_validation, seeded_generator(seed + _VALIDATION_STREAM))  # (n, s) x 2
    test = task.batch(size.n_test, seeded_generator(seed + _TEST_STREAM))  # (n, s) x 2
    target = resolve_device(device)
    report = on_progress or (lambda label, done, total: None)
    with deterministic_run(seed, target):
        model = build_model(spec, device=target)
        learning_rate = size.learning_rate_for(spec.attention.mla is not None)
        return _fit(model, task, size, seed, steps, learning_rate, validation, test, target, label, report)


def _fit(
    model: torch.nn.Module,
    task: InductionTask,
    size: HookSize,
    seed: int,
    steps: int,
    learning_rate: float,
    validation: tuple[torch.Tensor, torch.Tensor],
    test: tuple[torch.Tensor, torch.Tensor],
    device: torch.device,
    label: str,
    report: ProgressFn,
) -> Trained:
    """Train ``model`` for at most ``steps`` steps, checking the validation accuracy every ``eval_every``."""
    stream = seeded_generator(seed + _TRAIN_STREAM)  # the same batches for every model of a run
    done = 0
    last_validation = 0.0

    def should_stop(steps_done: int) -> bool:
        nonlocal done, last_validation
        done = steps_done
        report(label, steps_done, steps)
        if steps_done % size.eval_every and steps_done != steps:
            return False
        last_validation = scored_accuracy(model, *validation, device, batch_size=128)
        return last_validation >= STOP_ACCURACY

    settings = TrainSettings(steps=steps, learning_rate=learning_rate, warmup_steps=size.warmup_steps)
    train(model, lambda: task.batch(size.batch, stream), settings, device, should_stop=should_stop)
    return Trained(
        steps=done,
        validation_accuracy=last_validation,
        test_accuracy=scored_accuracy(model, *test, device, batch_size=128),
        omitted=list(getattr(model, "omitted", [])),
        scored_targets=int((test[1] != IGNORE_INDEX).sum()),
    )


def _describe(size: HookSize, *, mla: bool = False) -> str:
    return (
        f"{size.seq_len} distinct tokens of {size.vocab_size} per sequence, a segment of {size.min_segment}-"
        f"{size.max_segment} tokens repeated later at a random place; scored: the 2nd to last token of the repeat"
        f" (argmax), on {size.n_test} held-out sequences; trained on batches of {size.batch},"
        f" AdamW lr {size.learning_rate_for(mla):g}"
    )
