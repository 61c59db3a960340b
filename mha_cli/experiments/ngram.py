"""Count-based byte n-gram models: the floor a trained language model has to beat.

Interpolated Kneser-Ney (Chen and Goodman, 1998, section 3.5; one discount per order,
D = n1 / (n1 + 2 n2)). An order-N model predicts a byte from the N - 1 bytes before it:

    P_k(w | h) = max(c_k(h w) - D_k, 0) / C_k(h)  +  D_k * T_k(h) / C_k(h) * P_(k-1)(w | h[1:])

where c_N counts n-grams in the training bytes, lower orders count continuations (how many distinct
bytes precede the gram), C_k(h) = sum_w c_k(h w), T_k(h) = how many w have c_k(h w) > 0, and
P_0 = 1/256. A context never seen (C_k(h) = 0) hands the whole mass to the order below.

Counted on CPU in plain Python: about a second per order on the pydoc corpus.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import torch

from mha_cli.experiments.data import IGNORE_INDEX

VOCAB = 256
"""Byte vocabulary: P_0 is uniform over it."""


class KneserNey:
    """An interpolated Kneser-Ney byte model of ``order`` (2: the previous byte predicts the next)."""

    def __init__(self, train: torch.Tensor, order: int) -> None:
        if order < 1:
            raise ValueError(f"n-gram order ({order}) must be at least 1")
        self.order = order
        data = bytes(train.tolist())
        highest = Counter(data[i : i + order] for i in range(len(data) - order + 1))
        self.counts: list[dict[bytes, int]] = [{} for _ in range(order + 1)]  # by gram length
        self.counts[order] = dict(highest)
        for k in range(order - 1, 0, -1):  # continuation counts: distinct bytes before each gram
            continuation: Counter[bytes] = Counter(gram[1:] for gram in self.counts[k + 1])
            self.counts[k] = dict(continuation)
        self.discount = [0.0] * (order + 1)
        self.context_total: list[dict[bytes, int]] = [{} for _ in range(order + 1)]
        self.context_types: list[dict[bytes, int]] = [{} for _ in range(order + 1)]
        for k in range(1, order + 1):
            self.discount[k] = _discount(self.counts[k].values())
            totals: defaultdict[bytes, int] = defaultdict(int)
            types: defaultdict[bytes, int] = defaultdict(int)
            for gram, count in self.counts[k].items():
                totals[gram[:-1]] += count
                types[gram[:-1]] += 1
            self.context_total[k], self.context_types[k] = dict(totals), dict(types)

    def probability(self, context: bytes, byte: int) -> float:
        """P(byte | the last order - 1 bytes of ``context``)."""
        probability = 1.0 / VOCAB
        history = context[len(context) - (self.order - 1) :] if self.order > 1 else b""
        for k in range(1, self.order + 1):
            h = history[len(history) - (k - 1) :] if k > 1 else b""
            if len(h) < k - 1:  # the context is shorter than this order needs
                break
            total = self.context_total[k].get(h, 0)
            if total == 0:
                break  # unseen context: the order below keeps all the mass (and so do higher ones)
            count = self.counts[k].get(h + bytes([byte]), 0)
            d = self.discount[k]
            probability = max(count - d, 0.0) / total + d * self.context_types[k][h] / total * probability
        return probability

    def bits(self, inputs: torch.Tensor, targets: torch.Tensor) -> float:
        """Mean -log2 P over the scored targets of windows (inputs (n, s), targets (n, s)); a target sees the
        bytes of its own window up to it, as a language model evaluated on the same windows does."""
        total, scored = 0.0, 0
        for window, window_targets in zip(inputs.tolist(), targets.tolist(), strict=True):
            seen = bytes(window)
            for position, target in enumerate(window_targets):
                if target == IGNORE_INDEX:
                    continue
                total -= math.log2(self.probability(seen[: position + 1], target))
                scored += 1
        return total / scored


def _discount(counts: object) -> float:
    """D = n1 / (n1 + 2 n2) from how many grams occur once (n1) and twice (n2); 0.5 when undefined."""
    histogram = Counter(c for c in counts if c <= 2)  # type: ignore[attr-defined]
    n1, n2 = histogram[1], histogram[2]
    return n1 / (n1 + 2 * n2) if n1 + n2 else 0.5
