"""Signals: Ctrl-C, SIGTERM and SIGHUP end a run with one line and a documented exit code, never a traceback.

Two phases. During start-up and shut-down (importing typer and rich, parsing options, exiting) there is
nothing to clean up, so ``install_quiet_exit`` makes each signal print one line and exit at once
(130 for Ctrl-C, 128 + the signal's number otherwise). While a command runs, ``unwinding_signals`` makes
them raise instead (``KeyboardInterrupt``, ``Terminated``), so ``finally`` blocks run: a temporary
``--out`` file is removed. Only the console entry installs the quiet handlers; in-process runs (tests,
library use) keep whatever handlers they have.

A library may catch the raised interrupt and wrap it in its own error (pydantic-core turns a Ctrl-C during a
schema build into ``SchemaError``). The handlers therefore also record each signal, and ``unwinding_signals``
raises an error that leaves the command after one arrived as the last signal's own exception: the caller
reports the signal, not an internal error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from mha_cli.core.errors import EXIT_SIGNALLED, Terminated

STOPPING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)  # no SIGHUP on Windows


def _signal_name(signum: int) -> str:
    return "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"


def _quiet_exit(signum: int, frame: FrameType | None) -> None:
    """Start-up or shut-down: one line on stderr and exit now (``os.write`` and ``os._exit`` are safe here)."""
    with contextlib.suppress(OSError):  # stderr closed: the exit code still says it
        os.write(2, f"error: {_signal_name(signum)}\n".encode())
    os._exit(EXIT_SIGNALLED + signum)  # 130 for Ctrl-C (SIGINT is 2)


_received: list[int] = []
"""The stopping signals that arrived while a command ran, in order (the unwinding handlers append)."""


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated(signum, _signal_name(signum))


def _as_raised(signum: int) -> BaseException:
    """The exception ``signum``'s unwinding handler raises."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum, _signal_name(signum))


def install_quiet_exit() -> None:
    """Called first thing by the console entry, before any heavy import."""
    for signum in STOPPING_SIGNALS:
        signal.signal(signum, _quiet_exit)


@contextmanager
def unwinding_signals() -> Iterator[None]:
    """While a command runs: Ctrl-C raises ``KeyboardInterrupt``, SIGTERM and SIGHUP raise ``Terminated``."""
    in_console = (
        threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is _quiet_exit
    )
    if not in_console:
        yield
        return
    _received.clear()
    for signum in STOPPING_SIGNALS:
        signal.signal(signum, _raise_interrupt if signum == signal.SIGINT else _raise_terminated)
    try:
        yield
    except Exception as exc:
        if _received:  # a library wrapped the signal's exception in its own: the last signal, as if raised itself
            raise _as_raised(_received[-1]) from exc
        raise
    finally:
        _received.clear()
        install_quiet_exit()
