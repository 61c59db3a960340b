"""Count-based byte n-gram models: the floor a trained language model has to beat.

Interpolated Kneser-Ney (Chen and Goodman, 1998, section 3.5; one discount per order and count kind,
D = n1 / (n1 + 2 n2)). An order-N model predicts a byte from the N - 1 bytes before it:

    P_k(w | h) = max(c_k(h w) - D_k, 0) / C_k(h)  +  D_k * T_k(h) / C_k(h) * P_(k-1)(w | h[1:])

where the top order in use counts n-grams in the training bytes and the orders below it count
continuations (how many distinct bytes precede the gram), C_k(h) = sum_w c_k(h w), T_k(h) = how many w
have c_k(h w) > 0, and P_0 = 1/256. The top order in use is N, or fewer where the context is shorter
(the first bytes of a window). A context never seen (C_k(h) = 0) hands the whole mass to the order below.

Counted on CPU in plain Python: well under a second per order on the pydoc corpus.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import torch

from mha_cli.experiments.data import IGNORE_INDEX

VOCAB = 256
"""Byte vocabulary: P_0 is uniform over it."""


class GramCounts:
    """One kind of count for grams of one length: c(h w), C(h), T(h) and the discount."""

    def __init__(self, counts: dict[bytes, int]) -> None:
        self.counts = counts
        self.discount = _discount(counts.values())
        totals: defaultdict[bytes, int] = defaultdict(int)
        types: defaultdict[bytes, int] = defaultdict(int)
        for gram, count in counts.items():
            totals[gram[:-1]] += count
            types[gram[:-1]] += 1
        self.context_total, self.context_types = dict(totals), dict(types)


class KneserNey:
    """An interpolated Kneser-Ney byte model of ``order`` (2: the previous byte predicts the next)."""

    def __init__(self, train: torch.Tensor, order: int) -> None:
        if order < 1:
            raise ValueError(f"n-gram order ({order}) must be at least 1")
        self.order = order
        data = bytes(train.tolist())
        raw = [Counter(data[i : i + k] for i in range(len(data) - k + 1)) for k in range(order + 1)]
        self.raw = [GramCounts(dict(raw[k])) for k in range(order + 1)]  # index: gram length
        self.continuation = [GramCounts({}) for _ in range(order + 1)]
        for k in range(1, order):  # distinct bytes before each gram of length k
            self.continuation[k] = GramCounts(dict(Counter(gram[1:] for gram in raw[k + 1])))

    @property
    def discount(self) -> list[float]:
        """Discounts by gram length of the full-context model (continuation counts below the top order)."""
        return [0.0] + [self.continuation[k].discount for k in range(1, self.order)] + [self.raw[self.order].discount]

    def probability(self, context: bytes, byte: int) -> float:
        """P(byte | the last order - 1 bytes of ``context``)."""
        top = min(self.order, len(context) + 1)  # the longest gram the context allows
        probability = 1.0 / VOCAB
        for k in range(1, top + 1):
            table = self.raw[k] if k == top else self.continuation[k]
            h = context[len(context) - (k - 1) :] if k > 1 else b""
            total = table.context_total.get(h, 0)
            if total == 0:
                break  # unseen context: the order below keeps all the mass (and so do higher ones)
            count = table.counts.get(h + bytes([byte]), 0)
            d = table.discount
            probability = max(count - d, 0.0) / total + d * table.context_types[h] / total * probability
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
