"""A transient progress line on stderr for the long torch commands (``verify``, ``bench``).

Drawn only when stderr is a terminal, and erased when the work ends: a script or a CI log (stderr a file or
a pipe) sees nothing from it, so an error stays the one line on stderr.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mha_cli.cli.output import stderr_console

StageCallback = Callable[[str], None]
StepCallback = Callable[[str, int], None]


@contextmanager
def stage_progress(command: str, stages: tuple[str, ...]) -> Iterator[StageCallback]:
    """Yields ``on_stage(name)``: the bar shows ``name`` with the stages before it counted done."""
    console = stderr_console()
    if not console.is_terminal:
        yield lambda stage: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    width = max(len(stage) for stage in stages)
    columns = (TextColumn(f"{command}: {{task.description:<{width}}}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(stages[0], total=len(stages))

        def on_stage(stage: str) -> None:
            progress.update(task, description=stage, completed=stages.index(stage))

        yield on_stage
        progress.update(task, completed=len(stages))


@contextmanager
def step_progress(command: str, total: int, first: str) -> Iterator[StepCallback]:
    """Yields ``on_step(description, done)``: ``done`` of ``total`` steps finished, the current one described."""
    console = stderr_console()
    if not console.is_terminal:
        yield lambda description, done: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn(f"{command}: {{task.description}}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(first, total=total)
        yield lambda description, done: progress.update(task, description=description, completed=done)
