"""One output sink: a result model rendered for people (rich) or printed as JSON for scripts.

The human table and the JSON are two renderings of the same pydantic object, so they cannot
disagree. Messages for people go to stderr, so stdout stays clean JSON under ``--json``.
rich is imported only when something is drawn: ``--json`` runs never pay for it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from mha_cli.core.errors import EXIT_BROKEN_PIPE, OutputError, one_line, os_reason

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

ResultT = TypeVar("ResultT", bound=BaseModel)


VISIBLE_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if chr(code) not in "\n\t"}
"""C0 and C1 control characters but the newline and the tab, each as its escape (``\\x1b``), for ``str.translate``."""


@cache
def stdout_console() -> Console:
    from rich.console import Console
    from rich.segment import Segment

    class TableConsole(Console):
        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            """Every text segment with its control characters escaped (``\\x1b``), as an error line shows them: a
            model name or a path read from a file must not clear the reader's screen or retitle their terminal.
            rich's own control segments (cursor moves) and styles pass as they are."""
            return super()._render_buffer(
                segment if segment.control else segment._replace(text=segment.text.translate(VISIBLE_CONTROLS))
                for segment in buffer
            )

        def on_broken_pipe(self) -> None:
            """The reader went away (`mha targets | head -1`): stop quietly with exit 0, as with --json
            (rich's own handler would exit 1, which docs/exit-codes.md reserves for failed checks)."""
            self.quiet = True
            discard_stdout()
            raise SystemExit(EXIT_BROKEN_PIPE)

    # emoji=False: rich would otherwise scan every cell for `:name:` codes (a few ms over a report's tables) and
    # turn one found in a model name or a path into a pictogram; no output of ours is meant to hold an emoji.
    return TableConsole(highlight=False, emoji=False)


@cache
def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


@contextlib.contextmanager
def stdout_failures() -> Iterator[None]:
    """A full or failing stdout (``> /dev/full``) inside the block is an ``OutputError`` (exit 74); a closed pipe is
    left to the CLI's own handling."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        discard_stdout()
        raise OutputError(f"cannot write to standard output: {os_reason(exc)}") from None


def write_stdout(text: str) -> None:
    """``text`` on stdout, flushed, as ``Output.emit`` prints (``mha schema``, ``mha skill``, ``mha targets --schema``
    print no result record)."""
    with stdout_failures():
        sys.stdout.write(text)
        sys.stdout.flush()


class Output:
    """Where a command's result goes: ``--json`` prints the model, otherwise ``render`` draws it."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode

    def emit(self, result: ResultT, render: Callable[[Console, ResultT], None]) -> None:
        """Print the result; a full or failing stdout (``> /dev/full``) is an ``OutputError`` (exit 74)."""
        if self.json_mode:
            write_stdout(result.model_dump_json(indent=2) + "\n")
            return
        with stdout_failures():
            render(stdout_console(), result)
            sys.stdout.flush()

    def notice(self, message: str) -> None:
        """A side remark for people (alias expanded, file written); never on stdout. Dim through rich on a terminal;
        a plain line otherwise (under --json, into a log), so a script's run never loads rich's console."""
        if not self.json_mode and sys.stderr.isatty():
            from rich.text import Text

            stderr_console().print(Text(message, style="dim"))  # Text: user input is never read as markup
            return
        printable = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in message)
        sys.stderr.write(printable + "\n")

    def wrote(self, path: Path) -> None:
        """The notice every command gives once a file it was asked for is written whole: ``wrote PATH``."""
        self.notice(f"wrote {path}")


MAX_ERROR_CHARS = 1000
"""The longest error line printed: messages quote short prefixes of the input; this is the backstop."""


def discard_stdout() -> None:
    """Point stdout's file descriptor at /dev/null, so what is still buffered can be flushed at exit quietly."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no real file behind sys.stdout (a capture)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def print_error(message: str) -> None:
    """The one line a failing command prints (printed as is, never as markup; newlines escaped, length capped)."""
    from rich.text import Text

    line = one_line(message, MAX_ERROR_CHARS)
    stderr_console().print(Text.assemble(("error:", "bold red"), " ", line), soft_wrap=True)
