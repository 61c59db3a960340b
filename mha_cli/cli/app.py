"""The ``mha`` command: a typer app whose commands live one module each under ``mha_cli.cli``.

Error handling lives in one place, ``guarded``, which wraps every command at registration: an
``MhaError`` becomes one line on stderr and its exit code; anything unexpected becomes one line
and exit 70, with the traceback only when ``MHA_DEBUG=1``. Commands never import torch at
module level.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import typer

from mha_cli.cli import (
    bench_cmd,
    check_cmd,
    kv_cmd,
    presets_cmd,
    probe_cmd,
    recommend_cmd,
    schema_cmd,
    skill_cmd,
    targets_cmd,
)
from mha_cli.cli.output import print_error
from mha_cli.core.errors import MhaError

EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


def guarded(command: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a command so known errors become one line and a documented exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except MhaError as exc:
            print_error(str(exc))
            raise typer.Exit(code=exc.exit_code) from None
        except (typer.Exit, typer.Abort):
            raise
        except KeyboardInterrupt:
            print_error("interrupted")
            raise typer.Exit(code=EXIT_INTERRUPTED) from None
        except Exception as exc:
            if os.environ.get("MHA_DEBUG"):
                raise
            print_error(f"internal error: {exc.__class__.__name__}: {exc} (rerun with MHA_DEBUG=1 for the traceback)")
            raise typer.Exit(code=EXIT_INTERNAL) from None

    return wrapper


class CommandRegistry:
    """What a command module's ``register`` receives: ``add(name, fn)`` registers ``fn`` guarded."""

    def __init__(self, app: typer.Typer) -> None:
        self.app = app

    def add(self, name: str, command: Callable[..., Any]) -> None:
        self.app.command(name)(guarded(command))


app = typer.Typer(
    name="mha",
    help="Configure transformer attention (MHA, GQA, MQA, MLA) and price its KV cache.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_registry = CommandRegistry(app)
for module in (kv_cmd, targets_cmd, presets_cmd, schema_cmd, probe_cmd, bench_cmd, recommend_cmd, check_cmd, skill_cmd):
    module.register(_registry)


def main() -> None:
    """Console-script entry point."""
    app()
