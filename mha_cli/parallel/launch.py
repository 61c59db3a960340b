"""Start N worker processes, one per rank, and watch them until all succeed or one fails.

Each rank runs ``python -m mha_cli.parallel.worker --job JOB --run-dir DIR`` with torchrun's
variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT=a free port), its
output in ``DIR/rank{r}.log``. Each rank leads its own process group (a new session), killed whole,
and on Linux dies with the launcher (``die_with_parent``: PR_SET_PDEATHSIG), so nothing outlives the run.

The watchdog: the first rank to exit non-zero ends the run at once (every process group killed),
and so does a run still going after ``timeout_s`` seconds. Either way ``RankFailedError`` carries one
line naming the rank and its error (from ``DIR/rank{r}.error``, written by the worker, else the last
line of its log, else its exit code or signal). Torch is not imported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mha_cli.core.errors import EXIT_CHECK_FAILED, MhaError
from mha_cli.parallel.group import LOOPBACK, RankEnv, free_port

POLL_S = 0.05
"""How often the watchdog looks at the ranks."""
ERROR_FILE = "rank{rank}.error"
LOG_FILE = "rank{rank}.log"
STAGE_FILE = "rank{rank}.stage"
PARENT_ENV = "MHA_TP_LAUNCHER_PID"
"""Set for the ranks the launcher starts: its pid, for ``die_with_parent``."""
"""The last stage a rank reported (``mark_stage``), named when the run times out."""


class RankFailedError(MhaError):
    """A rank failed or hung: the run was stopped. Exit code: the rank's own when it reported one
    (2 bad input, 3 out of memory), else 1."""

    exit_code = EXIT_CHECK_FAILED

    def __init__(self, message: str, *, exit_code: int = EXIT_CHECK_FAILED, pids: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.pids = pids
        """The ranks' process ids (all ended when this is raised)."""


@dataclass
class Launch:
    """The processes of one run and where they write."""

    run_dir: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(process.pid for process in self.processes)


def worker_command(job_file: Path, run_dir: Path) -> list[str]:
    """The command line every rank runs."""
    return [sys.executable, "-m", "mha_cli.parallel.worker", "--job", str(job_file), "--run-dir", str(run_dir)]


def threads_per_rank(world_size: int) -> int:
    """CPU threads each rank may use so that N ranks do not oversubscribe the cores (at least 1)."""
    return max(1, (os.cpu_count() or 1) // world_size)


def die_with_parent() -> None:
    """Called first thing in a rank the launcher started: on Linux, ask the kernel to kill this process when
    the launcher dies (a launcher killed by SIGKILL cannot clean up), then exit if it is already gone."""
    parent = os.environ.get(PARENT_ENV)
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != int(parent):  # the launcher died before the request took effect
        os._exit(1)


def start_ranks(job_file: Path, run_dir: Path, world_size: int, extra_env: dict[str, str] | None = None) -> Launch:
    """Spawn the ``world_size`` ranks of one run; each writes ``run_dir/rank{r}.log``."""
    launch = Launch(run_dir)
    port = free_port()
    threads = str(threads_per_rank(world_size))
    try:
        for rank in range(world_size):
            place = RankEnv(rank=rank, world_size=world_size, local_rank=rank, master_addr=LOOPBACK, master_port=port)
            env = os.environ | {"OMP_NUM_THREADS": threads, PARENT_ENV: str(os.getpid())} | place.as_environ()
            env |= extra_env or {}
            with open(run_dir / LOG_FILE.format(rank=rank), "wb") as log:
                launch.processes.append(
                    subprocess.Popen(
                        worker_command(job_file, run_dir),
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
    except BaseException:
        stop_ranks(launch)
        raise
    return launch


def stop_ranks(launch: Launch) -> None:
    """Kill every rank's process group (the rank and anything it started) and reap the ranks."""
    for process in launch.processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    for process in launch.processes:
        process.wait()


def watch_ranks(launch: Launch, timeout_s: float) -> None:
    """Wait for every rank; on the first failure, or after ``timeout_s``, stop them all and raise ``RankFailedError``."""
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            codes = [process.poll() for process in launch.processes]
            failed = [rank for rank, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                stop_ranks(launch)
                raise _failure(launch, failed, codes)
            if all(code == 0 for code in codes):
                return
            if time.monotonic() > deadline:
                stop_ranks(launch)
                pending = [rank for rank, code in enumerate(codes) if code is None]
                where = ", ".join(f"rank {rank} at {_stage(launch.run_dir, rank)}" for rank in pending)
                raise RankFailedError(
                    f"parallel run stopped after {timeout_s:g} s with ranks still running ({where}):"
                    " all ranks were killed (raise --tp-timeout if the run is just slow)",
                    pids=launch.pids,
                )
            time.sleep(POLL_S)
    except BaseException:  # Ctrl-C or anything unexpected: never leave ranks behind
        stop_ranks(launch)
        raise


def run_ranks(
    job_file: Path, run_dir: Path, world_size: int, *, timeout_s: float, extra_env: dict[str, str] | None = None
) -> tuple[int, ...]:
    """Start and watch one run's ranks; returns their pids once every rank exited 0."""
    launch = start_ranks(job_file, run_dir, world_size, extra_env)
    watch_ranks(launch, timeout_s)
    return launch.pids


def _failure(launch: Launch, failed: list[int], codes: list[int | None]) -> RankFailedError:
    """The error for the rank that caused the failure: one whose own error is not a peer's collective failing."""
    reports = {rank: _read_error(launch.run_dir, rank) for rank in failed}
    causes = [rank for rank in failed if not reports[rank].get("collateral")]
    rank = (causes or failed)[0]
    report = reports[rank]
    what = report.get("message") or _last_log_line(launch.run_dir, rank) or "no error reported (killed or crashed)"
    exit_code = report.get("exit_code") if report.get("exit_code") in (2, 3) else EXIT_CHECK_FAILED
    cause = _likely_cause(codes[rank], what)
    return RankFailedError(
        f"parallel run stopped: rank {rank} failed ({_describe_exit(codes[rank])}) at stage"
        f" {_stage(launch.run_dir, rank)}: {what}{f' ({cause})' if cause else ''}; all ranks were killed",
        exit_code=exit_code,
        pids=launch.pids,
    )


def mark_stage(run_dir: Path, rank: int, stage: str) -> None:
    """Record the stage rank ``rank`` has reached (read by the watchdog to say where a hung run stopped)."""
    (run_dir / STAGE_FILE.format(rank=rank)).write_text(stage)


def _stage(run_dir: Path, rank: int) -> str:
    try:
        return repr((run_dir / STAGE_FILE.format(rank=rank)).read_text())
    except OSError:
        return "start-up"


def _read_error(run_dir: Path, rank: int) -> dict:
    try:
        return json.loads((run_dir / ERROR_FILE.format(rank=rank)).read_text())
    except (OSError, ValueError):
        return {}


def _last_log_line(run_dir: Path, rank: int) -> str:
    try:
        lines = (run_dir / LOG_FILE.format(rank=rank)).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


LIKELY_CAUSES = {
    "SIGKILL": "likely the kernel's out-of-memory killer: fewer ranks, --layers or --seq need less memory",
    "SIGABRT": "an abort inside torch or gloo (a native error, or a collective torn down while a peer still used it)",
    "SIGSEGV": "a crash inside a native library",
    "SIGTERM": "stopped from outside",
}
"""What a rank's death by a signal most often means here."""


def _likely_cause(code: int | None, what: str) -> str:
    """A short reading of a rank's death by a signal (empty for an ordinary exit)."""
    if code is None or code >= 0:
        return ""
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return ""
    return LIKELY_CAUSES.get(name, "")


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
