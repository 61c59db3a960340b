"""Ranks leave the process group in an order that cannot cut a collective message (``parallel.group``).

``leave_together``'s handshake runs on the rendezvous store: every rank posts "left" after a barrier and waits for
all; rank 0, which serves the store outside torchrun, then waits for every other rank's "released" before it may
exit. The order is checked with a store that records what each rank does; a real tp 2 run then shows every rank got
through the handshake and closed its group (its last stage file) before rank 0 wrote the result.
"""

from __future__ import annotations

import threading

import torch.distributed as dist

from mha_cli.parallel.group import leave_together
from mha_cli.parallel.launch import STAGE_FILE, run_ranks
from mha_cli.parallel.report import TpBatch
from mha_cli.parallel.worker import RESULT_FILE
from tests.test_parallel_run import _job

WORLD = 3


class SharedStore:
    """A key-value store shared by threads standing in for ranks; ``wait`` blocks until every key is set."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}
        self.events: list[tuple[int, str]] = []
        self.changed = threading.Condition()
        self.rank = threading.local()

    def set(self, key: str, value: str) -> None:
        with self.changed:
            self.keys[key] = value
            self.events.append((self.rank.value, f"set {key}"))
            self.changed.notify_all()

    def wait(self, keys: list[str]) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: all(key in self.keys for key in keys), timeout=10), keys
            self.events.append((self.rank.value, f"waited {len(keys)}"))


def _leave_as_ranks(monkeypatch, store: SharedStore) -> None:
    barrier = threading.Barrier(WORLD)
    monkeypatch.setattr(dist, "get_rank", lambda: store.rank.value)
    monkeypatch.setattr(dist, "get_world_size", lambda: WORLD)
    monkeypatch.setattr(dist, "barrier", lambda: barrier.wait(timeout=10))

    def rank_thread(rank: int) -> None:
        store.rank.value = rank
        leave_together(store)  # type: ignore[arg-type]
        store.events.append((rank, "gone"))

    threads = [threading.Thread(target=rank_thread, args=(rank,)) for rank in range(WORLD)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert not any(thread.is_alive() for thread in threads)


def test_no_rank_goes_before_every_rank_left_and_rank_0_goes_last(monkeypatch):
    store = SharedStore()
    _leave_as_ranks(monkeypatch, store)
    order = [(rank, what) for rank, what in store.events]
    last_left = max(i for i, (_, what) in enumerate(order) if what.startswith("set mha/leaving/left/"))
    gone = {rank: order.index((rank, "gone")) for rank in range(WORLD)}
    assert all(index > last_left for index in gone.values()), order  # nobody leaves while a peer is still working
    released = [order.index((rank, f"set mha/leaving/released/{rank}")) for rank in range(1, WORLD)]
    assert gone[0] > max(released), order  # the store's host stays until every peer is done with it
    assert sorted(store.keys) == sorted(
        [f"mha/leaving/left/{rank}" for rank in range(WORLD)] + [f"mha/leaving/released/{rank}" for rank in (1, 2)]
    )


def test_rank_0_cannot_go_while_a_peer_has_not_released(monkeypatch):
    """Rank 2 stalls between "left" and "released": rank 0 must still be there when it comes back."""
    store = SharedStore()
    original_set = store.set
    stalled = threading.Event()

    def slow_release(key: str, value: str) -> None:
        if key == "mha/leaving/released/2":
            stalled.wait(timeout=0.3)  # rank 0 would be gone by now without its wait
        original_set(key, value)

    store.set = slow_release  # type: ignore[method-assign]
    _leave_as_ranks(monkeypatch, store)
    order = store.events
    assert order.index((0, "gone")) > order.index((2, "set mha/leaving/released/2")), order


def test_a_real_tp2_run_closes_every_rank_before_the_result(tmp_path):
    job_file = tmp_path / "job.json"
    job_file.write_text(TpBatch(jobs=[_job("gqa", 2, n_kv_heads=4)]).model_dump_json())
    run_ranks(job_file, tmp_path, 2, timeout_s=120)
    stages = [(tmp_path / STAGE_FILE.format(rank=rank)).read_text() for rank in range(2)]
    assert stages == ["closed the process group"] * 2
    assert (tmp_path / RESULT_FILE).exists()
