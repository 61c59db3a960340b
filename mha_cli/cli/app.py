"""The ``mha`` command: a typer app whose commands live one module each under ``mha_cli.cli``.

Error handling lives in one place, ``guarded``, which wraps every command at registration: an
``MhaError`` becomes one line on stderr and its exit code; anything unexpected becomes one line
and exit 70, with the traceback only when ``MHA_DEBUG=1``. Commands never import torch at
module level.
"""

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from mha_cli import __version__
from mha_cli.cli import collector
from mha_cli.cli.output import discard_stdout, print_error
from mha_cli.cli.repeated_options import refuse_repeated_options
from mha_cli.cli.signals import unwinding_signals
from mha_cli.cli.typed_spellings import record_typed_spellings
from mha_cli.core.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OUTPUT_FAILED,
    MhaError,
    Terminated,
    os_reason,
)


def guarded(command: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a command so known errors become one line and a documented exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with unwinding_signals():
                return command(*args, **kwargs)
        except MhaError as exc:
            print_error(str(exc))
            raise typer.Exit(code=exc.exit_code) from None
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:
            # The reader closed the pipe (`mha presets --json | head -1`): stop quietly with exit 0 (EXIT_BROKEN_PIPE).
            discard_stdout()
            raise typer.Exit(code=EXIT_BROKEN_PIPE) from None
        except KeyboardInterrupt:
            print_error("interrupted")
            raise typer.Exit(code=EXIT_INTERRUPTED) from None
        except Terminated as exc:  # SIGTERM or SIGHUP, after `finally` blocks removed any temporary file
            print_error(exc.name)
            raise typer.Exit(code=exc.exit_code) from None
        except Exception as exc:
            if os.environ.get("MHA_DEBUG"):  # the traceback here: re-raised, an OSError would read as stdout's
                import traceback

                traceback.print_exc()
                raise typer.Exit(code=EXIT_INTERNAL) from None
            print_error(f"internal error: {exc.__class__.__name__}: {exc} (rerun with MHA_DEBUG=1 for the traceback)")
            raise typer.Exit(code=EXIT_INTERNAL) from None

    return wrapper


class CommandRegistry:
    """What a command module's ``register`` receives: ``add(name, fn)`` registers ``fn`` guarded."""

    def __init__(self, app: typer.Typer) -> None:
        self.app = app

    def add(self, name: str, command: Callable[..., Any]) -> None:
        self.app.command(name)(guarded(command))


# Command name -> the module that registers it. Only the invoked command's module is imported
# (see ``main``): ``mha kv`` does not pay for the recommender, the torch-facing commands and so on.
COMMAND_MODULES: dict[str, str] = {
    "recommend": "mha_cli.cli.recommend_cmd",
    "kv": "mha_cli.cli.kv_cmd",
    "check": "mha_cli.cli.check_cmd",
    "verify": "mha_cli.cli.verify_cmd",
    "targets": "mha_cli.cli.targets_cmd",
    "presets": "mha_cli.cli.presets_cmd",
    "schema": "mha_cli.cli.schema_cmd",
    "skill": "mha_cli.cli.skill_cmd",
    "probe": "mha_cli.cli.probe_cmd",
    "bench": "mha_cli.cli.bench_cmd",
    "experiment": "mha_cli.cli.experiment_cmd",
    "calibrate": "mha_cli.cli.calibrate_cmd",
    "plan": "mha_cli.cli.plan_cmd",
    "families": "mha_cli.cli.families_cmd",
}


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"mha {__version__}")
        raise typer.Exit()


def _hide_flag_types() -> None:
    """Show flags in ``--help`` without a type: typer's rich help (0.2x) prints ``--json <bool>``, which reads as taking
    a value; click's plain help already omits the type of a flag. Options that take a value keep theirs."""
    from typer.core import TyperOption

    shown_type = getattr(TyperOption, "display_type_rich", None)
    if shown_type is None or getattr(shown_type, "hides_flag_types", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag or self.count else shown_type(self, ctx)

    display_type_rich.hides_flag_types = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _coerce_given_values_only() -> None:
    """Build a parameter's converter only for a value that was given: typer (0.2x) builds a pydantic TypeAdapter for
    every parameter of the invoked command before it looks at the value, and ``mha kv`` has 17 options, nearly all
    left unset (a few ms a run). A single-valued parameter left at None coerces to None (typer's
    ``RuntimeParam.coerce``), so it needs no adapter; nor does text given to a plain ``str`` parameter, which typer's
    adapter returns as it is (``str(value)``: a few ms a value, most of ``mha recommend``'s options); every other value
    still goes through typer's own."""
    from typer import core

    param_class = getattr(core, "_TyperParameter", None)
    build = getattr(core, "build_runtime_param", None)
    if param_class is None or build is None or getattr(param_class.get_runtime_param, "coerces_lazily", False):
        return

    class LazyRuntimeParam:
        """typer's runtime parameter for ``descriptor``, built on the first value that is not None."""

        def __init__(self, descriptor: Any) -> None:
            self.descriptor = descriptor
            self.built: Any = None
            self.plain_text = (
                descriptor.annotation is str
                and descriptor.parameter_info.parser is None
                and descriptor.file_annotation is None
            )

        def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
            if value is None and not (param.multiple or param.nargs == -1):
                return None
            if self.plain_text and type(value) is str:
                return value
            if self.built is None:
                self.built = build(self.descriptor)
            return self.built.coerce(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            self._runtime_param = LazyRuntimeParam(self.type_descriptor)
        return self._runtime_param

    get_runtime_param.coerces_lazily = True  # type: ignore[attr-defined]
    param_class.get_runtime_param = get_runtime_param  # type: ignore[method-assign]


def build_app(commands: list[str] | None = None) -> typer.Typer:
    """The typer app with ``commands`` (default: all) registered."""
    _hide_flag_types()
    _coerce_given_values_only()
    refuse_repeated_options()
    record_typed_spellings()
    app = typer.Typer(
        name="mha",
        help="Configure transformer attention (MHA, GQA, MQA, MLA) and price its KV cache.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)  # keeps `mha NAME ...` a sub-command even when one command is registered
    registry = CommandRegistry(app)
    for name in commands or COMMAND_MODULES:
        module_name = COMMAND_MODULES[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue  # a command not shipped in this build
        module.register(registry)
    return app


def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", is_eager=True, callback=_print_version)
    ] = False,
) -> None:
    """Configure transformer attention (MHA, GQA, MQA, MLA) and price its KV cache."""


def _invoked_command(argv: list[str]) -> str | None:
    """The sub-command named on the command line, if it is a known one."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first if first in COMMAND_MODULES else None


def _sub_command(app: typer.Typer, argv: list[str], command: str) -> str:
    """``command``, with the sub-command named after it where ``command`` is a group (``experiment heads``): the help
    that lists the option a usage error names."""
    for group in app.registered_groups:
        if group.name == command and group.typer_instance is not None:
            names = {sub.name for sub in group.typer_instance.registered_commands}
            words = [arg for arg in argv if not arg.startswith("-")]
            if len(words) > 1 and words[0] == command and words[1] in names:
                return f"{command} {words[1]}"
    return command


def __getattr__(name: str) -> typer.Typer:
    """``from mha_cli.cli.app import app``: the app with every command, built on first use."""
    if name == "app":
        globals()["app"] = full_app = build_app()
        return full_app
    raise AttributeError(name)


def main() -> None:
    """Console-script entry point: registers only the invoked command, or all of them for help.

    Usage errors (unknown option, missing argument, a value of the wrong type) are printed as one
    line, like every other error, with exit code 2. ``mha`` alone prints the help and exits 0, as
    ``mha --help`` does. A closed stdout (``mha kv gpt2 >&-``) is refused with exit 74 before any work:
    the result would go nowhere, or into the first file the command opens.
    """
    if not _standard_streams_open():
        sys.exit(EXIT_OUTPUT_FAILED)
    argv = sys.argv[1:] or ["--help"]
    command = _invoked_command(argv)
    app = build_app([command] if command else None)
    collector.resume()  # start-up is over (paused by the console entry, mha_cli.__main__)
    try:
        code = app(args=argv, prog_name="mha", standalone_mode=False)
    except typer.TyperException as exc:
        where = f"mha {_sub_command(app, argv, command)} --help" if command else "mha --help"
        message = exc.format_message() or "missing a command"  # a group run without its sub-command
        if type(exc).__name__ == "NoSuchOption":  # typer's own copy of click's: named, not imported
            from mha_cli.cli.option_hints import unknown_option_message

            message = unknown_option_message(command, exc.option_name, exc.message, list(exc.possibilities or []))
        message = plain_bounds(message.replace(PYDANTIC_NOT_AN_INTEGER, WHOLE_NUMBER_WANTED))
        print_error(f"{message} (see `{where}`)")
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print_error("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except OSError as exc:  # stdout full while typer prints the help or the version
        discard_stdout()
        print_error(f"cannot write to standard output: {os_reason(exc)}")
        sys.exit(EXIT_OUTPUT_FAILED)
    _flush_stdout()
    sys.exit(code if isinstance(code, int) else 0)


PYDANTIC_NOT_AN_INTEGER = "Input should be a valid integer, unable to parse string as an integer"
"""What typer's integer options say of ``--isl 8k`` (pydantic's words)."""
WHOLE_NUMBER_WANTED = "give a whole number in digits (such as 8192, not 8k or 1.5)"
"""Said instead: what to type (trial 304 #9). ``--seq``, whose values take 8k, says how it reads them."""


_PYDANTIC_BOUND = re.compile(r"Input should be (less|greater) than or equal to (-?\d+)")


def plain_bounds(message: str) -> str:
    """pydantic's ``Input should be less than or equal to 2147483647`` as the other options say a bound: ``must be at
    most 2,147,483,647`` (trial 350 #5)."""

    def said(match: re.Match[str]) -> str:
        return f"must be {'at most' if match.group(1) == 'less' else 'at least'} {int(match.group(2)):,}"

    return _PYDANTIC_BOUND.sub(said, message)


def _standard_streams_open() -> bool:
    """False when stdout was closed at start (Python then sets ``sys.stdout`` to None); file descriptors 1 and 2
    are reopened on /dev/null either way, so no file the command opens can take their place."""
    closed_out, closed_err = sys.stdout is None, sys.stderr is None
    for fd, closed in ((1, closed_out), (2, closed_err)):
        if closed and _fd_closed(fd):
            os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    if closed_err:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    if closed_out:
        print_error("standard output is closed: redirect it to a file or to /dev/null (> out.txt)")
        return False
    return True


def _fd_closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def _flush_stdout() -> None:
    """Flush before exit, so a full stdout (``> /dev/full``) is one line and exit 74, not Python's own complaint."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
        sys.exit(EXIT_BROKEN_PIPE)
    except OSError as exc:
        discard_stdout()
        print_error(f"cannot write to standard output: {os_reason(exc)}")
        sys.exit(EXIT_OUTPUT_FAILED)
