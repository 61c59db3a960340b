"""README's console excerpts of the commands that need no torch are what those commands print today.

The parsing, the run and the matching rule (the lines between ``...`` elisions printed together and in order,
whitespace collapsed) are ``tests/console_excerpts.py``'s, shared with ``tests/test_docs_excerpts.py``.
"""

import pytest

from tests.console_excerpts import NO_TORCH, REPO, excerpts, missing, run

README = REPO / "README.md"
README_COMMANDS = {"recommend", "kv", "check", "plan", "calibrate", "targets"}
"""The commands README shows an excerpt of (the reference-data commands are shown on their own pages)."""
CHECKED = [excerpt for excerpt in excerpts(README.read_text(encoding="utf-8")) if excerpt.subcommand in NO_TORCH]


def test_the_readme_has_excerpts_of_the_commands_without_torch():
    assert {excerpt.subcommand for excerpt in CHECKED} == README_COMMANDS


@pytest.mark.parametrize("excerpt", CHECKED, ids=[excerpt.command[:60] for excerpt in CHECKED])
def test_readme_excerpt_is_what_the_command_prints(excerpt, cli, tmp_path, monkeypatch):
    output, _, shown = run(excerpt, cli, tmp_path, monkeypatch)
    lost = missing(shown, output)
    assert not lost, f"README shows lines `{excerpt.command}` no longer prints:\n" + "\n".join(lost)
