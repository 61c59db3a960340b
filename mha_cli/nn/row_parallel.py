"""The output side of a tensor-parallel layer (Megatron's row-parallel linear).

Each rank holds the columns of the weight that match its slice of the input; the partial products
are summed across ranks by ``reduce`` (an all-reduce, the identity on one rank), and a bias is added
once, after the sum, so it is not counted ``tp`` times.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

Reduce = Callable[[torch.Tensor], torch.Tensor]
"""Sums a tensor over the tensor-parallel ranks (returns the sum)."""


def identity(x: torch.Tensor) -> torch.Tensor:
    """The reduce of a single rank."""
    return x


def row_parallel(linear: nn.Linear, x: torch.Tensor, reduce: Reduce | None) -> torch.Tensor:
    """reduce(x @ W.T) + b for x (..., in_local) and W (out, in_local); (..., out)."""
    if reduce is None or reduce is identity:
        return linear(x)  # (..., out)
    partial = F.linear(x, linear.weight)  # (..., out): this rank's share of the sum
    total = reduce(partial)  # (..., out)
    return total if linear.bias is None else total + linear.bias  # (..., out)
