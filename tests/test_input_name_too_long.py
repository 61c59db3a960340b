"""An input path the file system refuses to look at (a name longer than NAME_MAX) is bad input, exit 2, in one line,
as for SOURCE and --lengths-file. Before (newuser4), ``plan --profile``, ``plan --draft`` and ``calibrate --from``
with a 300-character name ended in "internal error: OSError: [Errno 36] File name too long" (exit 70)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app
from mha_cli.core.errors import EXIT_BAD_INPUT

LONG = "a" * 300
PLAN = ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--closed-form"]


@pytest.mark.parametrize(
    "args",
    [[*PLAN, "--profile", "{folder}/" + LONG + ".json"],
     [*PLAN, "--draft", "{folder}/" + LONG + ".json", "--acceptance-length", "2"],
     ["calibrate", "--from", "{folder}/" + LONG + ".json", "--model", "gpt2", "--target", "h100"]],
    ids=["plan-profile", "plan-draft", "calibrate-from"],
)  # fmt: skip
def test_a_name_too_long_is_bad_input(tmp_path, args):
    result = CliRunner().invoke(app, [arg.format(folder=tmp_path) for arg in args])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "File name too long" in result.output
    assert "internal error" not in result.output
