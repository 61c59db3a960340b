"""Where the shared prefixes' unreferenced blocks sit in vLLM's free block queue, and when its head reaches them.

vLLM V1's block pool (``vllm/v1/core/block_pool.py``, 0.11.0 to 0.21.0) keeps every free block in one queue, cached
or not: ``get_new_blocks`` takes new blocks from its head and evicts the cached ones it takes
(``_maybe_evict_cached_block``); ``free`` returns a finished request's blocks to its tail, its last block first
(``SingleTypeKVCacheManager.free``: ``reversed(req_blocks)``), so a prefix's blocks go in behind the request's own,
its first block last; a hit takes its blocks out of the queue's middle (``touch``). A prefix nobody links is
therefore evicted once the head has taken as many blocks as were queued before it, whatever the other prefixes
do: a first-in first-out order over every block, where an LRU over whole prefixes in the free blocks' room (the
simulator's model before) kept a prefix that fresh requests' blocks had already pushed out. SGLang's radix cache
evicts its least recently used leaves, finished requests' own tokens among them, which this order follows too.

Positions are counted in blocks taken from the head (``pops``: ``EngineState.queue_pops``): a run of a prefix's
blocks queued behind ``ahead`` blocks when ``pops`` was p is whole while the count is at most p + ``ahead`` (every
block ahead of it taken then) and loses its front block at the next; each block taken out of the middle ahead of a
run moves the run one block nearer. Pure Python.
"""

from typing import NamedTuple


class QueuedRun(NamedTuple):
    """A prefix's blocks ``start`` .. ``start + blocks - 1`` in the free queue, the last of them at its front."""

    prefix: int
    start: int
    blocks: int
    front: int
    """The head's pop count after which every block ahead of the run is taken: its front block goes at the next."""

    def taken(self, pops: int) -> int:
        """Of its blocks, those the head has taken (evicted) at ``pops``: its last ones first."""
        return min(self.blocks, max(0, pops - self.front))


class FreeQueue:
    """The queued runs of every shared prefix (module docstring)."""

    def __init__(self) -> None:
        self.runs: list[QueuedRun] = []

    def append(self, prefix: int, start: int, blocks: int, *, pops: int, ahead: int) -> None:
        """``prefix``'s blocks from ``start`` (``blocks`` of them) go to the tail, behind ``ahead`` queued blocks."""
        self.runs.append(QueuedRun(prefix, start, blocks, pops + ahead))

    def warm(self, prefix: int, blocks: int, pool: int) -> None:
        """``prefix``'s first ``blocks``, cached before the run, go to the tail of a ``pool``-block queue, behind the
        prefixes warmed before it (warmed in their order): every earlier run moves ahead by as many."""
        self.runs = [run._replace(front=run.front - blocks) for run in self.runs]
        self.append(prefix, 0, blocks, pops=0, ahead=pool - blocks)

    def reclaim(self, prefix: int, upto: int, pops: int) -> int:
        """A hit links ``prefix``'s blocks below ``upto``: those of its queued runs the head has not taken by ``pops``
        leave the queue (the runs' back, where the first blocks are), and every run behind them moves up by as many;
        a run left with none it still holds is dropped. The blocks taken out."""
        taken_out = 0
        for index in range(len(self.runs)):
            run = self.runs[index]
            held = run.blocks - run.taken(pops)
            if run.prefix != prefix or run.start >= upto or not held:
                continue
            removed = min(upto, run.start + held) - run.start
            self.runs = [
                other._replace(front=other.front - removed) if other.front > run.front else other for other in self.runs
            ]
            left = 0 if removed == held else run.blocks - removed
            self.runs[index] = run._replace(start=run.start + removed, blocks=left)
            taken_out += removed
        self.runs = [run for run in self.runs if run.blocks]
        return taken_out

    def settle(self, prefix: int, linked: int, pops: int) -> int:
        """Whole blocks of ``prefix`` still cached from its first: the ``linked`` ones running requests hold, then
        its queued runs in order while none of their blocks was taken; the runs no hit can reach any more (past the
        first gap, or wholly taken) are dropped from the record."""
        mine = sorted((run for run in self.runs if run.prefix == prefix), key=lambda run: run.start)
        reach, kept = linked, []
        for run in mine:
            taken = run.taken(pops)
            if run.start > reach or taken == run.blocks:
                break
            kept.append(run)
            reach = max(reach, run.start + run.blocks - taken)
            if taken:
                break
        self.runs = [run for run in self.runs if run.prefix != prefix] + kept
        return reach
