"""An output name the file system refuses to look at (longer than NAME_MAX) is exit 74 with the system's reason, as
docs/exit-codes.md says ("name too long"), before any work. Before (newuser4), ``plan --plot``, ``probe --out`` and
``experiment --out-dir`` with a 300-character name ended in "internal error: OSError: [Errno 36] File name too
long" (exit 70): their checks for an existing file asked ``Path.exists()``, which raises for such a name."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app
from mha_cli.core.errors import EXIT_OUTPUT_FAILED

LONG = "a" * 300


@pytest.mark.parametrize(
    "args",
    [["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--closed-form", "--plot", "{folder}/" + LONG + ".png"],
     ["probe", "the cat sat", "--out", "{folder}/" + LONG + ".png"],
     ["experiment", "mqa", "--quick", "--out-dir", "{folder}/" + LONG]],
    ids=["plan-plot", "probe-out", "experiment-out-dir"],
)  # fmt: skip
def test_a_name_too_long_is_exit_74(tmp_path, args):
    result = CliRunner().invoke(app, [arg.format(folder=tmp_path) for arg in args])
    assert result.exit_code == EXIT_OUTPUT_FAILED, result.output
    assert "File name too long" in result.output
    assert "internal error" not in result.output
    assert list(tmp_path.iterdir()) == []
