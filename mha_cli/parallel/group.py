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

LOOPBACK = "127.0.0.1"
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


def init_group(env: RankEnv, device_type: str, timeout_s: float) -> None:
    """Join the run's default process group; set-up and every collective time out after ``timeout_s``."""
    import torch
    import torch.distributed as dist

    device_id = None
    if device_type == "cuda":
        torch.cuda.set_device(env.local_rank)
        device_id = torch.device("cuda", env.local_rank)
    dist.init_process_group(
        backend=backend_for(device_type),
        init_method=f"tcp://{env.master_addr}:{env.master_port}",
        rank=env.rank,
        world_size=env.world_size,
        timeout=timedelta(seconds=timeout_s),
        device_id=device_id,
    )


def leave_together() -> None:
    """Wait, after a successful run, until every rank is done with every collective. Without it a rank whose last
    send was posted (``gather_object`` to rank 0) could tear its gloo connections down while rank 0 still reads
    them, and gloo aborts that rank ("terminate called without an active exception", SIGABRT), seen about once
    in four ``--tp 4`` runs on a 2-core machine."""
    import torch.distributed as dist

    dist.barrier()


def close_group() -> None:
    """Leave the process group if this process joined one."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
