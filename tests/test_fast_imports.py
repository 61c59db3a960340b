"""The fast commands never import torch (it costs seconds), and their --json runs never import rich.

Each run goes through the console entry point (``python -m mha_cli``), in a fresh interpreter, so
the lazy command registry is exercised as a user meets it.
"""

import subprocess
import sys

import pytest

RUN = (
    "import sys\n"
    "from mha_cli.cli.app import main\n"
    "sys.argv = ['mha', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit as exit_:\n    assert not exit_.code, exit_.code\n"
    "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'rich', 'matplotlib'})))\n"
)

FAST = [
    ["--help"],
    ["kv", "llama-3-8b", "--json"],
    ["kv", "meta-llama/Llama-3.1-8B", "--json"],  # an id: the Hugging Face cache, then the preset
    ["kv", "llama-3-8b", "--target", "a100"],
    ["targets", "--json"],
    ["presets", "--json"],
    ["schema"],
    ["recommend", "--params", "7B", "--json"],
    ["recommend", "--params", "7B", "--target", "a100"],
    ["check", "llama-3-8b", "--json"],
    ["skill"],
    ["families", "--json"],
]
JSON_WITHOUT_RICH = [["kv", "llama-3-8b", "--json"], ["targets", "--json"], ["presets", "--json"], ["schema"],
                     ["families", "--json"]]  # fmt: skip


def heavy_modules(args: list[str]) -> set[str]:
    result = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stdout.strip().splitlines()[-1].split())


@pytest.mark.parametrize("args", FAST, ids=[" ".join(a) for a in FAST])
def test_fast_commands_do_not_import_torch(args):
    assert heavy_modules(args).isdisjoint({"torch", "matplotlib"})


@pytest.mark.parametrize("args", JSON_WITHOUT_RICH, ids=[" ".join(a) for a in JSON_WITHOUT_RICH])
def test_json_runs_do_not_import_rich(args):
    assert "rich" not in heavy_modules(args)
