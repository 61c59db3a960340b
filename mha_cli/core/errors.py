"""User-facing errors and every exit code the tool uses (docs/exit-codes.md).

Every error the core raises for bad input is an ``MhaError``: the CLI prints its message as one
line and exits with its ``exit_code``; the last three codes are set by the CLI's error handler.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_CHECK_FAILED = 1  # a lint rule, threshold or numeric check failed; a plan that does not fit
EXIT_BAD_INPUT = 2  # the input is wrong: fix the command line or the file
EXIT_OUT_OF_MEMORY = 3  # the device cannot hold what was asked for
EXIT_INTERNAL = 70  # a bug: an exception nobody expected (MHA_DEBUG=1 shows the traceback)
EXIT_OUTPUT_FAILED = 74  # EX_IOERR: the output could not be written (--out: read-only, no permission, full disk,
#                          name too long; stdout closed or full)
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_SIGNALLED = 128  # plus the signal's number: 129 SIGHUP, 143 SIGTERM (a temporary --out file is removed first)
EXIT_BROKEN_PIPE = 0  # the reader of the output went away (`mha targets | head -1`): stop quietly with success, so a
#                      `set -o pipefail` script does not fail whether the reader left before or after the last byte


class MhaError(Exception):
    """An error with a one-line message meant for the person at the terminal."""

    exit_code: int = EXIT_BAD_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInputError(MhaError):
    """Wrong option, value or file: exit 2."""

    exit_code = EXIT_BAD_INPUT


class EngineRefusedError(BadInputError):
    """The engine would not start on a layout: exit 2. ``reason`` is the message without the layout's own figures
    (the weights' overflow names each layout's bytes a rank), the same for every layout one cause stops."""

    def __init__(self, message: str, reason: str, fitting_max_model_len: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.fitting_max_model_len = fitting_max_model_len
        """vLLM's "estimated maximum model length" where one request of max_model_len does not fit (a way out)."""


class NotPricedError(BadInputError):
    """A setting mha does not price whatever the layout (vLLM's Mamba 'all' mode, ``core.engine.mamba_cache_mode``):
    exit 2, raised through a search of layouts rather than leaving each out."""


class ReleaseBeforeGpuError(BadInputError):
    """An engine release that predates the GPU asked of it (``core.engine.blackwell_releases``): exit 2. Tables that
    price every generation on every GPU catch it by its class and say the generation does not run there."""


class UnpricedQuantizationError(BadInputError):
    """A checkpoint's quantization_config mha cannot price: exit 2. ``what`` names it ("quant_method 'hqq'"), for
    the assumption a ``--weight-dtype`` that prices every weight instead states."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


class OutOfMemoryError(MhaError):
    """The device has too little free memory for the request: exit 3."""

    exit_code = EXIT_OUT_OF_MEMORY


class OutputError(MhaError):
    """The result could not be written (an ``--out`` file or stdout): exit 74."""

    exit_code = EXIT_OUTPUT_FAILED


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C's KeyboardInterrupt (``finally`` blocks remove temporary
    files), and is not an ``Exception``, so no ``except Exception`` swallows it."""

    def __init__(self, signum: int, name: str) -> None:
        super().__init__(name)
        self.exit_code = EXIT_SIGNALLED + signum
        self.name = name


SHOWN_PREFIX = 40
"""The most characters of a user's input an error line quotes (``shown``)."""


def shown(value: object, limit: int = SHOWN_PREFIX) -> str:
    """``value`` quoted for an error line: a short prefix, control characters escaped, one line.

    ``shown("1" * 20000)`` is ``'11111111111111111111111111111111111111111'... (20,000 characters)``: an error
    message never echoes more than ``limit`` characters of what was typed, and never a newline. Integers are
    shown unquoted (``5``), or by their size when too long to print.
    """
    if isinstance(value, int) and not isinstance(value, bool):  # a number is shown as a number, not quoted
        if value.bit_length() > 3 * limit:  # str() of one past 4,300 digits raises; never print it
            return f"a {value.bit_length():,}-bit integer"
        return str(value)
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


KIND_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list",
              dict: "a mapping"}  # fmt: skip
"""What a parsed YAML or JSON value is, in the file's words (``value_kind``)."""


def value_kind(value: object) -> str:
    """What ``value`` is, as a YAML or JSON file writes it, with its article: ``an integer``, ``a string``, ``null``."""
    if value is None:
        return "null"
    return KIND_NAMES.get(type(value), f"a {type(value).__name__}")


def one_line(text: str, limit: int = 200) -> str:
    """``text`` unquoted, with control characters escaped (one line) and cut after ``limit`` characters."""
    cut = text[:limit]
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    return escaped if len(text) <= limit else f"{escaped}... ({len(text):,} characters)"


SHOWN_PATH = 120
"""The characters of a path an error line aims to quote (``shown_path``); the file name and the first missing folder
are quoted whole beyond it."""
NAME_MAX, PATH_MAX = 255, 4096
"""The longest file name and path Linux allows (macOS and Windows allow less): longer ones name no file."""
FOLDERS_TRIED = 8
"""The folders nearest the file name, then nearest the root, that ``quoted_path`` tries to keep, each way."""


def shown_path(path: object, limit: int = SHOWN_PATH) -> str:
    """A path for an error line: as is when short and printable, else quoted (``quoted_path``)."""
    text = str(path)
    return text if len(text) <= limit and text.isprintable() else quoted_path(text, limit)


def quoted_path(path: object, limit: int = SHOWN_PATH) -> str:
    """``path`` quoted and escaped for an error line; longer than ``limit``, folders in the middle are left out
    (``...``), never the parts a typo is likely in: the file name and the first folder that does not exist.

    ``quoted_path("/data/" + "a" * 200 + "/llama-confgi.json")`` is ``'/data/.../llama-confgi.json' (224
    characters)``. A path no file can have (a name over ``NAME_MAX``, a path over ``PATH_MAX``) is cut as ``shown``
    cuts it."""
    text = str(path)
    parts = text.split("/")
    if len(text) <= limit or len(text) > PATH_MAX or len(parts[-1]) > NAME_MAX:
        return shown(text, limit)
    kept = {0, len(parts) - 1}
    missing = _first_missing_folder(parts)
    if missing is not None and len(parts[missing]) <= NAME_MAX:
        kept.add(missing)
    folders = range(1, len(parts) - 1)
    for index in [*reversed(folders[-FOLDERS_TRIED:]), *folders[:FOLDERS_TRIED]]:
        if len(_joined(parts, kept | {index})) <= limit:
            kept.add(index)
    shortened = _joined(parts, kept)
    return repr(text) if shortened == text else f"{shortened!r} ({len(text):,} characters)"


def _first_missing_folder(parts: list[str]) -> int | None:
    """The index of the first of ``parts``' folders (all but the first and last part) that is not a folder here."""
    for index in range(1, len(parts) - 1):
        if not os.path.isdir("/".join(parts[: index + 1])):
            return index
    return None


def _joined(parts: list[str], kept: set[int]) -> str:
    """``parts`` joined by ``/``, each run of parts not ``kept`` written once, as ``...``."""
    shown_parts = []
    for index, part in enumerate(parts):
        if index in kept:
            shown_parts.append(part)
        elif index - 1 in kept:
            shown_parts.append("...")
    return "/".join(shown_parts)


def os_reason(exc: OSError) -> str:
    """``Permission denied``, ``File name too long``: the system's words for an ``OSError``, never its arguments."""
    return os.strerror(exc.errno) if exc.errno else exc.__class__.__name__


STANDARD_STREAMS = ("-", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2")
"""Output names that mean the terminal's streams: mha writes whole files atomically, never to one of these."""


def refuse_standard_stream(path: object, option: str, kind: str, instead: str) -> None:
    """Refuse ``option``'s ``path`` where it names standard output or error (``-``): the option writes a ``kind``
    file, and ``instead`` says what prints (trial 334 #10: ``--out -`` was told to name the file .yaml)."""
    if str(path) in STANDARD_STREAMS:
        raise BadInputError(
            f"{option} {path}: {option} writes a {kind} file, not standard output: name one ({instead})"
        )


@contextmanager
def looking_at_output(path: object) -> Iterator[None]:
    """Checks of an output path before any work (does it exist, is it a folder): the system refusing to look at it
    (a name too long, a folder without search permission) is an ``OutputError`` (exit 74) with its reason, as
    writing it would be."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write {shown_path(path)}: {os_reason(exc)}") from None


@contextmanager
def looking_at_input(path: object) -> Iterator[None]:
    """Checks of an input path before it is read (is it a folder, does it exist): the system refusing to look at it
    (a name too long, a folder without search permission) is bad input (exit 2) with its reason."""
    try:
        yield
    except OSError as exc:
        raise BadInputError(f"cannot read {shown_path(path)}: {os_reason(exc)}") from None
