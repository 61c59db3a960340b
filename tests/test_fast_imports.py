"""The fast commands never import torch (it costs seconds); checked in a fresh interpreter."""

import subprocess
import sys

import pytest

FAST = [["--help"], ["kv", "llama-3-8b", "--json"], ["targets", "--json"], ["presets", "--json"], ["schema"]]


@pytest.mark.parametrize("args", FAST, ids=[" ".join(a) for a in FAST])
def test_fast_commands_do_not_import_torch(args):
    code = (
        "import sys; from mha_cli.cli.app import app\n"
        "try:\n    app(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
