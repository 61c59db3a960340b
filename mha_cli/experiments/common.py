"""What every experiment shares: a deterministic run, the environment it ran in, its output files.

An experiment runs inside ``deterministic_run(seed, device)`` (seeded, deterministic algorithms,
a fixed number of CPU threads; the previous global settings are restored afterwards), reports its
``Environment``, and writes three files into its output folder with ``ExperimentOutputs``: the
markdown report (command and environment at the top), the PNG plot and the JSON result.
"""

from __future__ import annotations

import os
import platform
import random
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from mha_cli import __version__
from mha_cli.core.record import Record
from mha_cli.experiments.outputs import DEFAULT_OUTPUT_ROOT
from mha_cli.nn.device import device_name

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.progress import Progress

CPU_THREADS = 1
"""Threads torch uses on CPU during an experiment: fixed, so a seed gives the same numbers everywhere.
One, because these models are tiny: a second thread gains little and, on a busy machine, spin-waiting
threads made steps up to 20 times slower."""


class Environment(Record):
    """Where and with what an experiment ran."""

    python: str
    torch: str
    mha_cli: str
    platform: str
    device: str
    device_name: str
    cpu_threads: int
    """Torch threads of each training process."""
    workers: int = 1
    """Processes that trained the models at once (results do not depend on it; ``jobs.run_jobs``)."""
    workers_asked: int | None = None
    """``--workers`` where it asked for more than ran (``jobs.workers_for``: capped at the usable cores or the
    trainings); None: as many ran as asked, or the default."""
    usable_cores: int | None = None
    """The cores the run's process could use (its CPU affinity); None in results written before it was recorded."""
    deterministic: bool
    started_at: str
    """UTC, ISO 8601."""
    wall_seconds: float = 0.0
    """Seconds the runs took (training and measuring; loading data and writing the outputs excluded)."""


@contextmanager
def deterministic_run(seed: int, device: torch.device) -> Iterator[Environment]:
    """Seed python and torch, turn on deterministic algorithms, fix CPU threads; restore them after.

    On CUDA a few kernels have no deterministic version; there they warn instead of failing, so a
    GPU run is reproducible only up to those kernels (CPU runs are bit-for-bit).
    """
    previous_threads = torch.get_num_threads()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    previous_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS's deterministic mode
    torch.set_num_threads(CPU_THREADS)
    torch.use_deterministic_algorithms(True, warn_only=device.type == "cuda")
    random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    environment = Environment(
        python=platform.python_version(),
        torch=torch.__version__,
        mha_cli=__version__,
        platform=platform.platform(),
        device=str(device),
        device_name=device_name(device),
        cpu_threads=CPU_THREADS,
        deterministic=True,
        started_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
    )
    try:
        yield environment
    finally:
        torch.set_num_threads(previous_threads)
        torch.use_deterministic_algorithms(previous_deterministic, warn_only=previous_warn_only)


def train_all(
    name: str, work: Callable[[Any], Any], jobs: Sequence[Any], *, seed: int, device: torch.device, workers: int | None
) -> tuple[list[Any], Environment]:
    """Every job's ``work`` (one model, one seed each) in ``workers`` processes (default ``jobs.default_workers``),
    with a progress bar, inside ``deterministic_run``; returns the results in job order and the environment,
    its wall seconds and worker count filled in."""
    from mha_cli.experiments.jobs import run_jobs, workers_for

    count = workers_for(workers, device, len(jobs))  # the processes started
    started = time.perf_counter()
    with deterministic_run(seed, device) as environment, progress_bar() as progress:
        task = progress.add_task(f"{name}: {len(jobs)} trainings, {count.said}", total=len(jobs))
        results = run_jobs(work, jobs, workers=count.used, on_done=lambda _: progress.advance(task))
    environment.wall_seconds = round(time.perf_counter() - started, 1)
    environment.workers, environment.usable_cores = count.used, count.cores
    environment.workers_asked = None if workers is None or workers == count.used else workers
    return results, environment


def seeded_generator(seed: int) -> torch.Generator:
    """A CPU generator for data sampling, independent of the weights' initialisation stream."""
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


def command_line(
    name: str, *, quick: bool, seed: int, device: str, out_dir: Path | None, force: bool = False,
    argv: list[str] | None = None,
) -> str:  # fmt: skip
    """The command that reproduces a run: as typed (``argv``, default ``sys.argv``, the program named ``mha``).

    When ``argv`` is not an ``experiment NAME`` command line (a Python caller, a test runner), the options
    that change the run are spelled out instead.
    """
    typed = typed_command(name, sys.argv if argv is None else argv)
    if typed is not None:
        return typed
    parts = ["mha", "experiment", name]
    if quick:
        parts.append("--quick")
    parts += ["--seed", str(seed), "--device", device]
    if out_dir is not None and out_dir != DEFAULT_OUTPUT_ROOT / name:
        parts += ["--out-dir", str(out_dir)]
    if force:
        parts.append("--force")
    return shlex.join(parts)


def typed_command(name: str, argv: list[str]) -> str | None:
    """``argv`` with its program (``/venv/bin/mha``, ``.../__main__.py``) written ``mha``, if it runs ``experiment NAME``."""
    words = argv[1:]
    if ("experiment", name) in pairwise(words):
        return shlex.join(["mha", *words])
    return None


SMOKE_CAVEAT = (
    "Smoke run (--quick): tiny sizes and a few dozen steps check that the pipeline works; the numbers and"
    " conclusions below are not evidence. Rerun without --quick for results."
)
MQA_QUICK_CAVEAT = (
    "Quick run (--quick): a smaller model than the experiment's; measured and computed figures are compared just"
    " as exactly, but the sizes and ratios are not the default model's."
)


def progress_bar() -> Progress:
    """A rich progress bar on stderr (stdout stays clean for ``--json``), drawn only when stderr is a terminal: a
    script or a CI log sees nothing from it, as with ``verify`` and ``bench`` (``cli.progress``)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    )


def report_header(
    title: str, command: str, environment: Environment, *, quick: bool = False, caveat: str = SMOKE_CAVEAT
) -> str:
    """The top of every report: the smoke-run ``caveat`` if ``quick``, how to reproduce it and where it ran."""
    env = environment
    caveat = f"> **{caveat}**\n\n" if quick else ""
    return (
        f"# {title}{' (smoke run)' if quick else ''}\n\n" + caveat + f"Command:\n\n```\n{command}\n```\n\n"
        "Environment:\n\n"
        f"- python {env.python}, torch {env.torch}, mha-cli {env.mha_cli}\n"
        f"- platform {env.platform}\n"
        f"- device {env.device} ({env.device_name}), CPU threads: {env.cpu_threads} per process,"
        f" {env.workers} worker process{'es' if env.workers > 1 else ''}{_workers_cap(env)},"
        f" deterministic algorithms {'on' if env.deterministic else 'off'}\n"
        f"- started {env.started_at}, took {env.wall_seconds:.1f} s\n\n"
    )


def _workers_cap(env: Environment) -> str:
    """`` (12 asked, 2 used: 2 usable cores)`` where fewer workers ran than ``--workers`` asked; empty otherwise."""
    if env.workers_asked is None:
        return ""
    from mha_cli.experiments.jobs import WorkerCount

    # fewer ran than asked: ``used`` is the cores or the trainings, whichever was fewer, so ``jobs=used`` says which
    return f" ({WorkerCount(env.workers_asked, env.workers, env.usable_cores or 0, env.workers).said})"


def new_figure(n_panels: int, *, width: float = 5.0, height: float = 3.8) -> tuple[Figure, list]:
    """A figure with ``n_panels`` side by side, drawn by the Agg backend (no display needed)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width * n_panels, height), layout="constrained")
    axes = [figure.add_subplot(1, n_panels, i + 1) for i in range(n_panels)]
    return figure, axes


def plain_log_ticks(axis: object) -> None:
    """Plain numbers (``2.86``, ``10``) on a log axis's major and minor ticks, not ``2.86x10^0``."""
    from matplotlib.ticker import FuncFormatter, LogFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))  # type: ignore[attr-defined]
    axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))  # type: ignore[attr-defined]


def count_unit(values: list[float]) -> tuple[float, str]:
    """(divisor, unit word) that puts the largest of ``values`` between 1 and 1000: '', thousands, millions."""
    largest = max(abs(v) for v in values)
    for divisor, unit in ((1e9, "billions"), (1e6, "millions"), (1e3, "thousands")):
        if largest >= divisor:
            return divisor, unit
    return 1.0, ""


def bytes_unit(values: list[float]) -> tuple[float, str]:
    """(divisor, unit) that puts the largest of ``values`` between 1 and 1024: B, KiB, MiB, GiB."""
    largest = max(abs(v) for v in values)
    for divisor, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if largest >= divisor:
            return divisor, unit
    return 1.0, "B"
