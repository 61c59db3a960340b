"""A rank's place in a run, read from the launcher's environment, and its process group.

The environment is torchrun's (and ``mha_cli.parallel.launch``'s): RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT. The backend follows the device: gloo for CPU tensors, NCCL for CUDA
ones (each rank on ``cuda:LOCAL_RANK``). Set-up and every collective time out after ``timeout_s``,
so a rank that dies or hangs cannot keep the others waiting for ever.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch.distributed import Store

LOOPBACK = "127.0.0.1"
_LEAVING = "mha/leaving"
"""Store keys of ``leave_together``'s handshake (beside the group's own, which torch prefixes)."""
ENV_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class RankEnv:
    """Where one process sits in the run: its rank among ``world_size`` and the rendezvous address."""

    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> RankEnv:
        """Read torchrun's variables; a process started alone is rank 0 of 1.

        Raises ``ValueError`` naming the variable when one is malformed or the rank is out of range.
        """
        env = os.environ if environ is None else environ

        def number(key: str, default: int) -> int:
            raw = env.get(key)
            if raw is None:
                return default
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"{key}={raw!r} is not a whole number") from None

        world_size = number("WORLD_SIZE", 1)
        rank = number("RANK", 0)
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"RANK ({rank}) must lie in [0, WORLD_SIZE={world_size})")
        return cls(
            rank=rank,
            world_size=world_size,
            local_rank=number("LOCAL_RANK", rank),
            master_addr=env.get("MASTER_ADDR", LOOPBACK),
            master_port=number("MASTER_PORT", 29500),
        )

    def as_environ(self) -> dict[str, str]:
        """The variables a child process needs to find this place in the run."""
        values = (self.rank, self.world_size, self.local_rank, self.master_addr, self.master_port)
        return dict(zip(ENV_KEYS, map(str, values), strict=True))


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on now (the OS picks it), for the rendezvous of a local run."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def backend_for(device_type: str) -> str:
    """gloo for CPU ranks, NCCL for CUDA ranks."""
    return "nccl" if device_type == "cuda" else "gloo"


def init_group(env: RankEnv, device_type: str, timeout_s: float) -> Store:
    """Join the run's default process group; set-up and every collective time out after ``timeout_s``.

    Returns the rendezvous store (rank 0's TCPStore, or torchrun's agent store), which ``leave_together`` uses
    to agree on leaving over a channel other than the collectives' own.
    """
    import torch
    import torch.distributed as dist

    device_id = None
    if device_type == "cuda":
        torch.cuda.set_device(env.local_rank)
        device_id = torch.device("cuda", env.local_rank)
    timeout = timedelta(seconds=timeout_s)
    url = f"tcp://{env.master_addr}:{env.master_port}"
    store, _, _ = next(dist.rendezvous(url, rank=env.rank, world_size=env.world_size, timeout=timeout))
    dist.init_process_group(
        backend=backend_for(device_type), store=store, rank=env.rank, world_size=env.world_size, timeout=timeout,
        device_id=device_id,
    )  # fmt: skip
    return store


def leave_together(store: Store) -> None:
    """Wait, after a successful run, until no rank has a collective message in flight, so that closing the
    group's connections cannot cut one.

    A barrier ends every rank's collectives, but its own last messages may still be on the wire when the
    fastest rank closes its gloo connections; a rank whose connection is cut mid-message is aborted by gloo
    ("terminate called without an active exception", SIGABRT; about once in four ``--tp 4`` runs on a
    2-core machine with no barrier, still seen with one). So each rank then posts "left" on the rendezvous
    store and waits for every rank's: once all are there, every collective has finished on every rank. Rank 0
    hosts that store (outside torchrun), so it waits until every other rank has read the last key ("released")
    before it may exit and take the store down.
    """
    import torch.distributed as dist

    rank, world_size = dist.get_rank(), dist.get_world_size()
    dist.barrier()
    store.set(f"{_LEAVING}/left/{rank}", "1")
    store.wait([f"{_LEAVING}/left/{peer}" for peer in range(world_size)])
    if rank == 0:
        store.wait([f"{_LEAVING}/released/{peer}" for peer in range(1, world_size)])
    else:
        store.set(f"{_LEAVING}/released/{rank}", "1")


def close_group() -> None:
    """Leave the process group if this process joined one."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
