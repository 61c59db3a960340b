"""All-reduce over ``ranks`` local processes (gloo on CPU, NCCL on CUDA): the ``all_reduce`` samples of a profile.

Each rank is a process (``python -m mha_cli.calibrate.collective``) in one group on 127.0.0.1; every size is all-reduced after a warm-up, ``REPS`` times
between barriers, and rank 0 keeps the median. The whole measurement has a deadline: a rank that hangs or dies ends
it with one line, and no process outlives it.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mha_cli.core.cost.calibration import Sample
from mha_cli.core.errors import MhaError
from mha_cli.parallel.group import LOOPBACK, free_port

SIZES = [4 * 2**10, 64 * 2**10, 1 * 2**20, 16 * 2**20]
REPS = 20
DEADLINE_S = 120.0


def _rank_main(rank: int, ranks: int, port: int, device_type: str, out: Path) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR=LOOPBACK, MASTER_PORT=str(port))
    torch.set_num_threads(1)
    backend = "nccl" if device_type == "cuda" else "gloo"
    device = torch.device("cuda", rank) if device_type == "cuda" else torch.device("cpu")
    if device_type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, rank=rank, world_size=ranks, timeout=datetime.timedelta(seconds=60))
    try:
        results = []
        for size in SIZES:
            x = torch.ones(size // 4, dtype=torch.float32, device=device)  # (n,)
            for _ in range(3):
                dist.all_reduce(x)
            times = []
            for _ in range(REPS):
                dist.barrier()
                if device_type == "cuda":
                    torch.cuda.synchronize(device)
                start = time.perf_counter()
                dist.all_reduce(x)
                if device_type == "cuda":
                    torch.cuda.synchronize(device)
                times.append(time.perf_counter() - start)
            results.append([size, statistics.median(times)])
        dist.barrier()
        if rank == 0:
            out.write_text(json.dumps(results))
    finally:
        dist.destroy_process_group()


def all_reduce_samples(ranks: int, device_type: str) -> list[Sample]:
    """Median all-reduce time at each of ``SIZES`` over ``ranks`` local processes."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="mha-allreduce-") as folder:
        out = Path(folder) / "result.json"
        command = [sys.executable, "-m", "mha_cli.calibrate.collective", str(ranks), str(port), device_type, str(out)]
        processes = [
            subprocess.Popen([*command, str(rank)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for rank in range(ranks)
        ]
        try:
            deadline = time.monotonic() + DEADLINE_S
            while any(p.poll() is None for p in processes):
                failed = [r for r, p in enumerate(processes) if p.poll() not in (None, 0)]
                if failed or time.monotonic() > deadline:
                    what = f"rank {failed[0]} exited {processes[failed[0]].returncode}" if failed else "it timed out"
                    raise MhaError(f"the all-reduce measurement over {ranks} local ranks failed: {what}")
                time.sleep(0.05)
            if any(p.returncode for p in processes) or not out.exists():
                raise MhaError(f"the all-reduce measurement over {ranks} local ranks failed (exit codes"
                               f" {[p.returncode for p in processes]})")  # fmt: skip
            results = json.loads(out.read_text())
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                process.wait()
                if process.stderr is not None:
                    process.stderr.close()
    return [Sample(kind="all_reduce", size=size, work=size, seconds=seconds, ranks=ranks) for size, seconds in results]


if __name__ == "__main__":  # one rank: RANKS PORT DEVICE OUT RANK
    _ranks, _port, _device, _out, _rank = sys.argv[1:6]
    _rank_main(int(_rank), int(_ranks), int(_port), _device, Path(_out))
