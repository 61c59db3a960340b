"""The induction task: random token sequences in which one segment occurs twice (A B ... A -> B).

A sequence of ``seq_len`` tokens is drawn without repetition from the vocabulary, then a segment of
it (``segment_len`` tokens, chosen per sequence) is copied to a later, non-overlapping place. Every
token of the second occurrence therefore appeared exactly once before, followed by the token that
follows it now: only an induction circuit (find the earlier copy of the current token, read the token
after it) predicts it. Positions differ per sequence, so no fixed offset does.

Scored positions: inside the second occurrence, predicting its 2nd .. last token. Its first token is
not scored (nothing before it announces the repeat), nor is the token after it (a fresh random token).
Every other target is ``IGNORE_INDEX``: the model is trained and scored on induction alone.

Shapes: ``b`` sequences, ``s`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mha_cli.experiments.data import IGNORE_INDEX


@dataclass(frozen=True)
class InductionTask:
    """Sizes of the task; ``vocab_size`` >= ``seq_len`` so a sequence can hold distinct tokens."""

    vocab_size: int
    seq_len: int
    min_segment: int
    max_segment: int

    def __post_init__(self) -> None:
        if self.vocab_size < self.seq_len:
            raise ValueError(f"vocab_size ({self.vocab_size}) must be >= seq_len ({self.seq_len})")
        if not 2 <= self.min_segment <= self.max_segment <= self.seq_len // 2:
            raise ValueError(
                f"need 2 <= min_segment ({self.min_segment}) <= max_segment ({self.max_segment})"
                f" <= seq_len / 2 ({self.seq_len // 2})"
            )

    def batch(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs (n, s), targets (n, s)): next tokens at the scored positions, ``IGNORE_INDEX`` elsewhere."""
        inputs = torch.empty(n, self.seq_len, dtype=torch.long)  # (b, s)
        targets = torch.full((n, self.seq_len), IGNORE_INDEX, dtype=torch.long)  # (b, s)
        for row in range(n):
            inputs[row], targets[row] = self._sequence(generator)
        return inputs, targets

    def _sequence(self, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.seq_len
        tokens = torch.randperm(self.vocab_size, generator=generator)[:s]  # (s,) distinct
        length = _randint(self.min_segment, self.max_segment, generator)
        first = _randint(0, s - 2 * length, generator)
        second = _randint(first + length, s - length, generator)
        tokens[second : second + length] = tokens[first : first + length].clone()
        targets = torch.full((s,), IGNORE_INDEX, dtype=torch.long)  # (s,)
        scored = slice(second, second + length - 1)  # predicting tokens second + 1 .. second + length - 1
        targets[scored] = tokens[second + 1 : second + length]
        return tokens, targets  # (s,), (s,)


def _randint(low: int, high: int, generator: torch.Generator) -> int:
    """An integer in [low, high], both included."""
    return int(torch.randint(low, high + 1, (1,), generator=generator))
