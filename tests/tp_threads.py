"""Tensor-parallel ranks as threads of one process: each builds its shard, loads its slice of a full model's
weights, and sums its row-parallel outputs with the others through ``ThreadAllReduce`` (no process group).

Shared by the decoder's and MLA/MoE's tensor-parallel tests: prefill 4 tokens, then decode one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch
from torch import nn


class ThreadAllReduce:
    """A sum over ``tp`` threads: each deposits its tensor, waits for all, and reads the total."""

    def __init__(self, tp: int) -> None:
        self.parts: list[torch.Tensor | None] = [None] * tp
        self.barrier = threading.Barrier(tp)
        self.calls = [0] * tp

    def for_rank(self, rank: int) -> Callable[[torch.Tensor], torch.Tensor]:
        def all_reduce(x: torch.Tensor) -> torch.Tensor:
            self.calls[rank] += 1
            self.parts[rank] = x
            self.barrier.wait()
            total = torch.stack(self.parts).sum(dim=0)  # type: ignore[arg-type]
            self.barrier.wait()  # nobody overwrites a part before all have summed
            return total

        return all_reduce


def run_ranks(
    build_rank: Callable[[int], nn.Module],
    shard: Callable[[dict[str, torch.Tensor], str, int, int], torch.Tensor],
    full: dict[str, torch.Tensor],
    ids: torch.Tensor,
    tp: int,
) -> tuple[list[torch.Tensor], ThreadAllReduce]:
    """Every rank's logits (b, s, v) of a 4-token prefill then one-token decodes of ``ids`` (b, s), and the reducer."""
    reducer = ThreadAllReduce(tp)
    results: list[torch.Tensor | None] = [None] * tp
    errors: list[BaseException] = []
    batch, seq = ids.shape

    def run(rank: int) -> None:
        try:
            model = build_rank(rank).eval()
            model.load_state_dict({name: shard(full, name, rank, tp) for name in model.state_dict()}, strict=True)
            model.all_reduce = reducer.for_rank(rank)
            caches = model.new_cache(batch=batch, max_seq=seq)
            with torch.no_grad():
                steps = [model(ids[:, :4], caches, start_pos=0)]
                steps += [model(ids[:, pos : pos + 1], caches, start_pos=pos) for pos in range(4, seq)]
            results[rank] = torch.cat(steps, dim=1)  # (b, s, v)
        except BaseException as exc:  # surfaced below; a dead rank would otherwise hang the others
            errors.append(exc)
            reducer.barrier.abort()

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(tp)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert all(logits is not None for logits in results)
    return results, reducer  # type: ignore[return-value]
