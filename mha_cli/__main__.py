"""The ``mha`` console entry and ``python -m mha_cli``.

Signal handlers go in before anything else is imported (typer, rich and pydantic take a few hundred
milliseconds), so Ctrl-C at any moment of start-up exits 130 with one line, never a traceback. Until they are in,
the stopping signals are held (blocked, not lost): one that arrives while mha's first modules load is delivered to
the quiet handler the moment it is installed. ``main`` pauses the cycle collector for start-up
(``mha_cli.cli.collector``: it frees nothing then), the app resumes it before the command runs, and ``main`` keeps
the collection at exit off what the run made.
"""

import signal

# a Ctrl-C during the imports below raised KeyboardInterrupt with a traceback (a clean-clone CI run caught one in
# mha_cli.core.errors' import); where the platform can hold signals (POSIX), they wait for the handlers
_HELD = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)}
_CAN_HOLD = hasattr(signal, "pthread_sigmask")
if _CAN_HOLD:
    signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)

from mha_cli.cli import collector  # noqa: E402
from mha_cli.cli.signals import install_quiet_exit  # noqa: E402

install_quiet_exit()
if _CAN_HOLD:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)  # a held signal is delivered now, to the quiet handler


def main() -> None:
    collector.pause()  # until the command is built: app.main resumes it
    from mha_cli.cli.app import main as run_app

    try:
        run_app()
    finally:
        collector.finish()


if __name__ == "__main__":
    main()
