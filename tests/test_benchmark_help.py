"""Every ``benchmarks/`` script the docs tell users to run answers ``--help`` with its usage, at once, and refuses an
option it does not take: none of them starts its whole (minutes-long) run on ``--help``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("engine_logs", "vllm_logs", "max_load", "lockstep_itl", "field_defaults")
"""The scripts that read no options: before, ``--help`` ran each in full (engine_logs.py over 60 s, newuser4)."""


def run_script(name: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT,
    )  # fmt: skip


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_prints_usage_and_the_docstring(name: str) -> None:
    done = run_script(name, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {name}.py"), done.stdout[:200]
    assert f"python benchmarks/{name}.py" in done.stdout  # the docstring's own command line


def test_an_unknown_option_is_refused() -> None:
    done = run_script("engine_logs", "--no-such-option")
    assert done.returncode == 2
    assert "unrecognized arguments: --no-such-option" in done.stderr
    assert done.stdout == ""
