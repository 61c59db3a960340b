"""The one training loop the experiments share: AdamW, linear warm-up (then an optional cosine decay),
gradient clipping, next-token loss.

Every model of an experiment is trained by this loop with the same settings and the same batches
(the batch stream is re-seeded per model), so their losses are comparable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.experiments.data import IGNORE_INDEX

BatchFn = Callable[[], tuple[torch.Tensor, torch.Tensor]]
"""Returns (inputs (b, s), targets (b, s)) on the CPU; called once per step."""


@dataclass(frozen=True)
class TrainSettings:
    steps: int
    learning_rate: float
    warmup_steps: int = 20
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    final_lr_fraction: float = 1.0
    """Learning rate at the last step, as a fraction of ``learning_rate``: 1.0 keeps it constant after the
    warm-up; below 1 it follows a cosine from the end of the warm-up down to this fraction."""

    def lr_factor(self, step: int) -> float:
        """Multiplier of ``learning_rate`` at ``step`` (0-based)."""
        warmup = max(1, self.warmup_steps)
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, self.steps - warmup)  # 0 -> 1 over the rest of training
        cosine = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))  # 1 -> 0
        return self.final_lr_fraction + (1.0 - self.final_lr_fraction) * cosine


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy in nats over the scored targets; logits (b, s, v), targets (b, s)."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX)


def train(
    model: nn.Module,
    next_batch: BatchFn,
    settings: TrainSettings,
    device: torch.device,
    on_step: Callable[[], None] | None = None,
    should_stop: Callable[[int], bool] | None = None,
) -> list[float]:
    """Train ``model`` in place for ``settings.steps`` steps; returns the training loss (nats) of each step.

    ``should_stop(steps_done)``, called after every step, ends training early when it returns True.
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, settings.lr_factor)
    model.train()
    losses: list[float] = []
    for step in range(settings.steps):
        inputs, targets = next_batch()  # (b, s) each
        logits = model(inputs.to(device))  # (b, s, v)
        loss = next_token_loss(logits, targets.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step()
        if should_stop is not None and should_stop(step + 1):
            break
    return losses


@torch.no_grad()
def evaluate(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, device: torch.device, batch_size: int = 32
) -> float:
    """Mean next-token loss in nats over all scored targets of (inputs (n, s), targets (n, s))."""
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(inputs), batch_size):
        chunk_targets = targets[start : start + batch_size].to(device)  # (c, s)
        logits = model(inputs[start : start + batch_size].to(device))  # (c, s, v)
        scored = int((chunk_targets != IGNORE_INDEX).sum())
        total += next_token_loss(logits, chunk_targets).item() * scored
        count += scored
    model.train()
    return total / count


def nats_to_bits(nats: float) -> float:
    """A loss in nats per token as log2 perplexity (bits per token)."""
    return nats / math.log(2)


CURVE_EVERY = 10
"""Training curves are stored as the mean loss of each block of this many steps (results stay small)."""


def block_means(values: list[float], block: int = CURVE_EVERY) -> list[float]:
    """Mean of each consecutive block of ``block`` values (the last block may be shorter)."""
    return [sum(values[i : i + block]) / len(values[i : i + block]) for i in range(0, len(values), block)]


def trailing_mean(values: list[float], window: int = 10) -> list[float]:
    """Mean over the last ``window`` values at each step (the first steps average what there is)."""
    out, running = [], 0.0
    for i, value in enumerate(values):
        running += value - (values[i - window] if i >= window else 0.0)
        out.append(running / min(i + 1, window))
    return out


@torch.no_grad()
def scored_accuracy(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    device: torch.device,
    batch_size: int | None = None,
) -> float:
    """Fraction of scored targets (not ``IGNORE_INDEX``) that are the model's most likely next token, evaluated
    ``batch_size`` sequences at a time (``None``: all at once)."""
    was_training = model.training
    model.eval()
    batch_size = batch_size or len(inputs)
    correct, scored = 0, 0
    for start in range(0, len(inputs), batch_size):
        chunk_targets = targets[start : start + batch_size].to(device)  # (c, s)
        predicted = model(inputs[start : start + batch_size].to(device)).argmax(dim=-1)  # (c, s)
        mask = chunk_targets != IGNORE_INDEX  # (c, s)
        correct += int((predicted[mask] == chunk_targets[mask]).sum())
        scored += int(mask.sum())
    model.train(was_training)
    return correct / scored
