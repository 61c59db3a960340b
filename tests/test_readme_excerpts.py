"""README's console excerpts of the commands that need no torch are what those commands print today.

Each ```console block's ``$ mha ...`` line (with its ``\\`` continuations) is run in-process; every line shown
under it but ``...`` must appear in the output, whitespace collapsed (rich wraps to the terminal's width). The torch
commands' excerpts (verify, bench, experiment) are timings of one machine and are left out.
"""

import re
import shlex
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
NO_TORCH = {"recommend", "kv", "check", "plan", "calibrate", "targets"}
"""Subcommands whose excerpts are checked (``calibrate`` only as ``--from``, which fits without torch)."""
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def excerpts(text: str) -> list[tuple[str, list[str]]]:
    """(command line without ``$ ``, the lines shown under it) for every command of every console block."""
    found: list[tuple[str, list[str]]] = []
    for block in BLOCK.findall(text):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            command = lines[i][2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            shown = []
            i += 1
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            found.append((command, shown))
    return found


def collapse(text: str) -> str:
    """``text`` with every run of whitespace one space."""
    return " ".join(text.split())


CHECKED = [(command, shown) for command, shown in excerpts(README.read_text(encoding="utf-8"))
           if shlex.split(command)[1] in NO_TORCH]  # fmt: skip


def test_the_readme_has_excerpts_of_the_commands_without_torch():
    assert {shlex.split(command)[1] for command, _ in CHECKED} == NO_TORCH


@pytest.mark.parametrize(("command", "shown"), CHECKED, ids=[command[:60] for command, _ in CHECKED])
def test_readme_excerpt_is_what_the_command_prints(command, shown, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))  # calibrate --from writes its profile here
    result = cli.run(*shlex.split(command)[1:])
    output = collapse(result.output)
    missing = [line for line in shown if line.strip() != "..." and collapse(line) not in output]
    assert not missing, f"README shows lines `{command}` no longer prints:\n" + "\n".join(missing)
