"""What experiment ``heads`` records: its settings, each training run, the spread per head count, the verdict."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, computed_field

from mha_cli.core.record import Record
from mha_cli.experiments.common import Environment
from mha_cli.experiments.outputs import OutputFiles
from mha_cli.experiments.seeds import MIN_SEEDS, SeedSpread

Verdict = Literal["help", "plateau", "hurt", "help-then-hurt", "no-effect", "mixed"]
HEAD_COUNTS = (1, 2, 4, 8, 16)
D_MODEL = 64


class HeadsSettings(Record):
    d_model: int = D_MODEL
    d_ff: int = 4 * D_MODEL
    """The gated MLP's hidden width."""
    head_counts: list[int] = Field(default_factory=lambda: list(HEAD_COUNTS))
    streams: int = 4
    """k: symbols each query must gather, one from each stream."""
    stream_length: int = 8
    """L: symbols per stream, and query positions; sequences are (k + 1) L tokens."""
    n_symbols: int = 4
    """n: symbols per stream position; a query's target is one of n**k tuples."""
    positions: Literal["rope"] = "rope"
    """RoPE (theta 10,000) on queries and keys: no learned positions, so values carry the token only."""
    batch: int = 64
    steps: int = 1500
    learning_rate: float = 3e-3
    warmup_steps: int = 20
    final_lr_fraction: float = 0.1
    """Cosine decay after the warm-up, down to this fraction of the learning rate."""
    seeds: list[int] = Field(default_factory=lambda: list(range(MIN_SEEDS)))
    eval_sequences: int = 512
    """Held-out sequences per seed (each with L scored queries)."""

    @property
    def half_steps(self) -> int:
        """The step after which the held-out loss is also measured: is a model still learning at the end?"""
        return max(1, self.steps // 2)

    @classmethod
    def for_run(cls, *, quick: bool, seed: int, device: str = "cpu") -> HeadsSettings:
        """``--quick``: a seconds-long smoke run; on CUDA more steps and seeds; else the 2-core CPU default."""
        if quick:
            return cls(steps=30, batch=16, seeds=[seed, seed + 1], eval_sequences=32, stream_length=4)
        if device == "cuda":
            return cls(steps=4000, batch=128, seeds=[seed + i for i in range(5)], eval_sequences=2048)
        return cls(seeds=[seed + i for i in range(MIN_SEEDS)])


class HeadsRun(Record):
    n_heads: int | None
    """None: the no-attention control (the same decoder, its attention branch zeroed)."""
    head_dim: int | None
    seed: int
    n_parameters: int
    train_curve: list[float]
    """Mean training loss (nats per scored token) of each block of ``train.CURVE_EVERY`` steps."""
    half_way_eval_loss: float
    """Held-out loss after half the steps (``HeadsSettings.half_steps``)."""
    eval_loss: float
    """Held-out loss after training (nats per scored query)."""
    eval_accuracy: float
    """Fraction of held-out queries whose whole tuple is predicted exactly (argmax)."""


class HeadsPoint(Record):
    """One head count over the seeds (values in the order of ``HeadsResult.seeds``)."""

    n_heads: int
    head_dim: int
    eval_loss: SeedSpread
    eval_accuracy: SeedSpread
    half_way_eval_loss: SeedSpread
    """Held-out loss after half the steps: a count whose final range lies wholly below it was still learning."""


class NoAttentionFloor(Record):
    """The no-attention control over the seeds: what a query's own token (and nothing else) predicts."""

    n_parameters: int
    eval_loss: SeedSpread
    eval_accuracy: SeedSpread


class HeadsJudgement(Record):
    verdict: Verdict
    best_heads: int
    """Head count with the lowest mean held-out loss."""
    enough_heads: int
    """Fewest heads whose seed range overlaps the best's (not clearly worse)."""
    worse_than_best: list[int]
    """Head counts clearly worse than the best: every seed above every seed of the best."""
    sentence: str


class HeadsResult(Record):
    experiment: Literal["heads"] = "heads"
    command: str
    environment: Environment
    settings: HeadsSettings
    quick: bool = False
    """A --quick smoke run: tiny sizes and few steps, its verdicts are not evidence."""
    seeds: list[int]
    """The seeds every model was trained with, in the order of every ``SeedSpread.values``."""
    chance_loss: float
    """k ln(n_symbols): the loss of guessing a tuple uniformly."""
    chance_accuracy: float
    """1 / n_symbols**k."""
    chance_some_worse: float
    """With no real difference between head counts, how often the rule calls at least one count worse than the
    best (Monte Carlo, ``heads.chance_of_a_worse_call``): the best is picked after looking."""
    runs: list[HeadsRun]
    """Every model trained: each head count and the no-attention control, once per seed."""
    points: list[HeadsPoint]
    no_attention: NoAttentionFloor
    judgement: HeadsJudgement
    """On the held-out loss after training."""
    attention_beats_floor: list[int]
    """Head counts whose seed range lies wholly below the no-attention control's; empty where the control is no
    floor (``floor_valid``)."""
    files: OutputFiles

    @computed_field  # type: ignore[prop-decorator]
    @property
    def floor_valid(self) -> bool:
        """The no-attention control is a floor: a seed of it reached chance's loss (trial 327 #3; a smoke run's
        control above chance on every seed is none, and beating it shows nothing: trial 400 #4)."""
        return control_is_floor(self.no_attention, self.chance_loss)


def control_is_floor(no_attention: NoAttentionFloor, chance_loss: float) -> bool:
    """A seed of the no-attention control reached ``chance_loss`` (nats): it is a floor at all."""
    return no_attention.eval_loss.low <= chance_loss
