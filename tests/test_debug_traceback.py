"""``MHA_DEBUG=1`` shows an internal error's traceback and keeps exit 70. Before (newuser4), an ``OSError`` a command
did not expect (``probe --out`` with a 300-character name) was re-raised into ``mha``'s handler for a full stdout
and printed "cannot write to standard output: File name too long" with exit 74: no traceback, and the wrong cause."""

from __future__ import annotations

import errno

import pytest
import typer

from mha_cli.cli.app import guarded
from mha_cli.core.errors import EXIT_INTERNAL


def failing() -> None:
    raise OSError(errno.ENAMETOOLONG, "File name too long", "x" * 300)


def test_debug_prints_the_traceback_and_exits_70(monkeypatch, capsys):
    monkeypatch.setenv("MHA_DEBUG", "1")
    with pytest.raises(typer.Exit) as stopped:
        guarded(failing)()
    assert stopped.value.exit_code == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in failing" in err
    assert "standard output" not in err


def test_without_debug_one_line(monkeypatch, capsys):
    monkeypatch.delenv("MHA_DEBUG", raising=False)
    with pytest.raises(typer.Exit) as stopped:
        guarded(failing)()
    assert stopped.value.exit_code == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "internal error: OSError" in err and "Traceback" not in err
