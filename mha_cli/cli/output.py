"""One output sink: a result model rendered for people (rich) or printed as JSON for scripts.

The human table and the JSON are two renderings of the same pydantic object, so they cannot
disagree. Messages for people go to stderr, so stdout stays clean JSON under ``--json``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel
from rich.console import Console

ResultT = TypeVar("ResultT", bound=BaseModel)

stdout_console = Console(highlight=False)
stderr_console = Console(stderr=True, highlight=False)


class Output:
    """Where a command's result goes: ``--json`` prints the model, otherwise ``render`` draws it."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.console = stdout_console

    def emit(self, result: ResultT, render: Callable[[Console, ResultT], None]) -> None:
        if self.json_mode:
            sys.stdout.write(result.model_dump_json(indent=2) + "\n")
            sys.stdout.flush()
        else:
            render(self.console, result)

    def notice(self, message: str) -> None:
        """A side remark for people (alias expanded, file written); never on stdout."""
        stderr_console.print(f"[dim]{message}[/dim]")


def print_error(message: str) -> None:
    """The one line a failing command prints."""
    stderr_console.print(f"[bold red]error:[/bold red] {message}", soft_wrap=True)
