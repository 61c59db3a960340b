"""Counting the operators a call dispatches: the eager work the cost model charges a fixed cost for.

``count_dispatches()`` installs a ``TorchDispatchMode`` that counts every ATen operator below autograd (views
and in-place ops included: each costs the dispatcher's fixed overhead, whatever its size). Counting slows the
call it watches, so it watches an untimed one (a warm-up).
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode


class DispatchCounter(TorchDispatchMode):
    """Counts operators by name while active."""

    def __init__(self) -> None:
        super().__init__()
        self.by_name: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.by_name[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))

    @property
    def total(self) -> int:
        return sum(self.by_name.values())


@contextmanager
def count_dispatches() -> Iterator[DispatchCounter]:
    """``with count_dispatches() as counter: step()`` then ``counter.total``."""
    counter = DispatchCounter()
    with counter:
        yield counter
