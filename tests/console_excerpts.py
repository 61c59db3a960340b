"""The ```console excerpts of README.md and docs/: parsed, run in-process, and matched against what they show.

A block's ``$ mha ...`` line (with its ``\\`` continuations) is one command; the lines under it up to the next
``$ `` are what it shows. The lines between two ``...`` (an elision) must be printed together, word for word, and
in the order shown, whitespace collapsed (rich wraps text to the console's width); without a ``...`` first the excerpt
shows the output's start, without one last its end. The little shell an excerpt may use is read explicitly, and
anything else is refused rather than skipped:

- ``VAR=value mha ...``: ``VAR`` is set to a fresh temporary folder, and ``value`` in the shown lines reads as it;
- ``... | jq .key`` prints that key of the JSON, ``... | head -N`` the first N lines;
- ``$ echo $?`` after a command: the exit code it shows is the command's;
- ``/path/to/mha`` in a shown line is this repository's folder.

The torch commands' excerpts (verify, bench, experiment, probe) are timings or seeded weights of one machine and are
left out; every other command's are checked.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NO_TORCH = {"recommend", "kv", "check", "plan", "calibrate", "targets", "presets", "families", "schema", "skill"}
"""Subcommands whose excerpts are checked (``calibrate`` only as ``--from``, which fits without torch)."""
TORCH = {"verify", "bench", "experiment", "probe"}
"""Subcommands whose excerpts are left out: they import torch and show one machine's timings or seeded weights."""
BLOCK = re.compile(r"```console\n(.*?)```", re.S)
ASSIGNMENT = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")
EXIT_CODE = "echo $?"
ELISION = "..."
PLACEHOLDER_ROOT = "/path/to/mha"
"""How a page writes this repository's folder in a shown path (``mha skill --check``)."""
WIDTH = 200
"""Columns of the console the excerpts are run in: as wide as the widest table a page shows (``mha check``'s)."""


@dataclass(frozen=True)
class Excerpt:
    """One command of a console block, what it shows, and the exit code a following ``$ echo $?`` shows."""

    command: str
    shown: list[str]
    exit_code: int | None = None

    @property
    def pipeline(self) -> list[str]:
        """The command, then each stage it pipes into (``jq .key``, ``head -N``)."""
        return self.command.split(" | ")

    @property
    def words(self) -> list[str]:
        """The command's words, leading ``VAR=value`` assignments left out (``mha``, the subcommand, ...)."""
        words = shlex.split(self.pipeline[0])
        while words and ASSIGNMENT.match(words[0]):
            words = words[1:]
        return words

    @property
    def assignments(self) -> dict[str, str]:
        """The command's leading ``VAR=value`` assignments."""
        found = {}
        for word in shlex.split(self.pipeline[0]):
            if not (assignment := ASSIGNMENT.match(word)):
                break
            found[assignment[1]] = assignment[2]
        return found

    @property
    def subcommand(self) -> str:
        return self.words[1]


def _commands(block: str) -> list[tuple[str, list[str]]]:
    """(command line without ``$ ``, the lines shown under it) for every command of one console block."""
    found: list[tuple[str, list[str]]] = []
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


def excerpts(text: str) -> list[Excerpt]:
    """Every command of every console block of a page, a ``$ echo $?`` folded into the command before it."""
    found: list[Excerpt] = []
    for block in BLOCK.findall(text):
        for command, shown in _commands(block):
            if command.strip() == EXIT_CODE:
                last = found.pop()
                found.append(Excerpt(last.command, last.shown, int("".join(shown).strip())))
            else:
                found.append(Excerpt(command, shown))
    return found


def collapse(text: str) -> str:
    """``text`` with every run of whitespace one space."""
    return " ".join(text.split())


def _filter(output: str, stage: str) -> str:
    """``output`` through one pipeline stage after the command: ``jq .key`` or ``head -N``."""
    words = shlex.split(stage)
    if len(words) == 2 and words[0] == "jq" and re.fullmatch(r"\.\w+", words[1]):
        return json.dumps(json.loads(output)[words[1][1:]], indent=2) + "\n"
    if len(words) == 2 and words[0] == "head" and re.fullmatch(r"-\d+", words[1]):
        return "".join(output.splitlines(keepends=True)[: int(words[1][1:])])
    raise ValueError(f"an excerpt pipes into `{stage}`: teach tests/console_excerpts.py to read it")


def run(excerpt: Excerpt, cli, tmp_path: Path, monkeypatch) -> tuple[str, int, list[str]]:
    """Run ``excerpt`` in-process: (its output through its pipeline, its exit code, the shown lines as expected)."""
    from mha_cli.cli.output import stdout_console

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))  # calibrate --from writes its profile here
    monkeypatch.setattr(stdout_console(), "_width", WIDTH)  # rich's own field: the public setter has no undo
    shown = [line.replace(PLACEHOLDER_ROOT, str(REPO)) for line in excerpt.shown]
    for name, value in excerpt.assignments.items():
        monkeypatch.setenv(name, str(tmp_path))
        shown = [line.replace(value, str(tmp_path)) for line in shown]
    result = cli.run(*excerpt.words[1:])
    output = result.output  # stdout and stderr, as a terminal shows them; a pipe takes stdout alone
    for stage in excerpt.pipeline[1:]:
        output = _filter(result.stdout if output is result.output else output, stage)
    return output, result.exit_code, shown


def runs(shown: list[str]) -> list[tuple[bool, str, bool]]:
    """The shown lines between ``...`` elisions, each run as (elided before it, its text collapsed, elided after)."""
    found: list[tuple[bool, str, bool]] = []
    run_lines: list[str] = []
    elided = False
    for line in [*shown, ELISION]:
        if line.strip() != ELISION:
            run_lines.append(line)
            continue
        if run_lines:
            found.append((elided, collapse(" ".join(run_lines)), True))
            run_lines = []
        elided = True
    if shown and shown[-1].strip() != ELISION and found:
        found[-1] = (found[-1][0], found[-1][1], False)
    return found


def missing(shown: list[str], output: str) -> list[str]:
    """The runs of shown lines ``output`` does not print, whitespace collapsed.

    Each run (the lines between two ``...``) is printed whole, word for word, and the runs in the order shown; an
    excerpt that does not open with ``...`` shows the output's start, one that does not end with it its end."""
    printed = f" {collapse(output)} "
    lost, position = [], 0
    for elided_before, text, elided_after in runs(shown):
        found = printed.find(f" {text} ", position)
        starts, ends = found == 0, found + len(text) + 2 == len(printed)
        if found < 0 or (not elided_before and not starts) or (not elided_after and not ends):
            lost.append(text)
        else:
            position = found + len(text) + 1
    return lost
