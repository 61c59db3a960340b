"""What experiment ``heads`` records: its settings, each training run, the points per head count, the verdicts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mha_cli.core.record import Record
from mha_cli.experiments.common import Environment
from mha_cli.experiments.outputs import OutputFiles

Verdict = Literal["help", "plateau", "hurt", "help-then-hurt", "no-effect"]
HEAD_COUNTS = (1, 2, 4, 8, 16)
D_MODEL = 64


class HeadsSettings(Record):
    d_model: int = D_MODEL
    head_counts: list[int] = Field(default_factory=lambda: list(HEAD_COUNTS))
    copy_length: int = 16
    """L: symbols to copy; sequences are 2L + 1 tokens."""
    n_symbols: int = 16
    batch: int = 32
    steps: int = 300
    learning_rate: float = 3e-3
    seeds: list[int] = Field(default_factory=lambda: [0, 1])
    eval_sequences: int = 512
    tolerance_nats: float = 0.05
    """Held-out losses closer than this are treated as equal when judging."""
    solved_nats: float = 0.1
    """A run has learned the copy once its smoothed training loss falls below this."""
    speed_tolerance: float = 0.1
    """Step counts within this fraction of the fastest are treated as equal when judging."""

    @classmethod
    def for_run(cls, *, quick: bool, seed: int) -> HeadsSettings:
        if quick:
            return cls(steps=25, batch=16, seeds=[seed], eval_sequences=64)
        return cls(seeds=[seed, seed + 1])


class HeadsRun(Record):
    n_heads: int
    head_dim: int
    seed: int
    n_parameters: int
    train_loss: list[float]
    """Training loss (nats per scored token) at each step."""
    eval_loss: float
    """Held-out loss after training (nats per scored token)."""
    eval_accuracy: float
    """Fraction of held-out copy tokens predicted exactly (argmax)."""
    steps_to_solve: int | None
    """First step whose 10-step trailing mean training loss is below ``solved_nats``; None if never."""


class HeadsPoint(Record):
    n_heads: int
    head_dim: int
    mean_eval_loss: float
    min_eval_loss: float
    max_eval_loss: float
    mean_eval_accuracy: float
    mean_steps_to_solve: float | None
    """None when a seed never got below ``solved_nats``."""


class HeadsJudgement(Record):
    verdict: Verdict
    best_heads: int
    """Head count with the lowest value."""
    enough_heads: int
    """Fewest heads within the tolerance of the best."""
    sentence: str


class HeadsResult(Record):
    experiment: Literal["heads"] = "heads"
    command: str
    environment: Environment
    settings: HeadsSettings
    quick: bool = False
    """A --quick smoke run: tiny sizes and few steps, its verdicts are not evidence."""
    chance_loss: float
    """ln(n_symbols): the loss of guessing uniformly."""
    runs: list[HeadsRun]
    points: list[HeadsPoint]
    judgement: HeadsJudgement
    """On the held-out loss after training."""
    speed_judgement: HeadsJudgement | None
    """On the steps to learn the copy; None when some head count never learned it."""
    files: OutputFiles
