"""User-facing errors and the exit codes they map to.

Every error the core raises for bad input is an ``MhaError``: the CLI prints its message as one
line and exits with its ``exit_code``. Nothing else in the project decides exit codes.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # a lint rule, threshold or numeric check failed; a plan that does not fit
EXIT_BAD_INPUT = 2  # the input is wrong: fix the command line or the file
EXIT_OUT_OF_MEMORY = 3  # the device cannot hold what was asked for


class MhaError(Exception):
    """An error with a one-line message meant for the person at the terminal."""

    exit_code: int = EXIT_BAD_INPUT

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class BadInputError(MhaError):
    """Wrong option, value or file: exit 2."""

    exit_code = EXIT_BAD_INPUT


class OutOfMemoryError(MhaError):
    """The device has too little free memory for the request: exit 3."""

    exit_code = EXIT_OUT_OF_MEMORY
