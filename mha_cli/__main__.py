"""The ``mha`` console entry and ``python -m mha_cli``.

Signal handlers go in before anything else is imported (typer, rich and pydantic take a few hundred
milliseconds), so Ctrl-C at any moment of start-up exits 130 with one line, never a traceback. ``main``
pauses the cycle collector for start-up (``mha_cli.cli.collector``: it frees nothing then), the app resumes it
before the command runs, and ``main`` keeps the collection at exit off what the run made.
"""

from mha_cli.cli import collector
from mha_cli.cli.signals import install_quiet_exit

install_quiet_exit()


def main() -> None:
    collector.pause()  # until the command is built: app.main resumes it
    from mha_cli.cli.app import main as run_app

    try:
        run_app()
    finally:
        collector.finish()


if __name__ == "__main__":
    main()
