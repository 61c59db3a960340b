"""User-facing errors and every exit code the tool uses (README, "Exit codes").

Every error the core raises for bad input is an ``MhaError``: the CLI prints its message as one
line and exits with its ``exit_code``; the last three codes are set by the CLI's error handler.
"""

from __future__ import annotations

EXIT_CHECK_FAILED = 1  # a lint rule, threshold or numeric check failed; a plan that does not fit
EXIT_BAD_INPUT = 2  # the input is wrong: fix the command line or the file
EXIT_OUT_OF_MEMORY = 3  # the device cannot hold what was asked for
EXIT_INTERNAL = 70  # a bug: an exception nobody expected (MHA_DEBUG=1 shows the traceback)
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of the output went away


class MhaError(Exception):
    """An error with a one-line message meant for the person at the terminal."""

    exit_code: int = EXIT_BAD_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInputError(MhaError):
    """Wrong option, value or file: exit 2."""

    exit_code = EXIT_BAD_INPUT


class OutOfMemoryError(MhaError):
    """The device has too little free memory for the request: exit 3."""

    exit_code = EXIT_OUT_OF_MEMORY
