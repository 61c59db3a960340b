"""The fast commands never import torch (it costs seconds), matplotlib or numpy, and their --json runs never import
rich; nor do a deployment search and a simulated plan (``plan``, ``recommend --ttft-ms``) without ``--plot``.

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
    "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'rich', 'matplotlib', 'numpy'})))\n"
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
SEARCHES = [
    ["plan", "llama-3-70b", "--target", "8xh100", "--concurrency", "64", "--isl", "1024", "--osl", "128"],
    ["plan", "llama-3-70b", "--target", "8xh100", "--tp", "8", "--concurrency", "64", "--isl", "1024", "--osl", "128"],
    ["recommend", "--params", "7B", "--seq", "8192", "--target", "a100", "--priority", "inference", "--ttft-ms", "1000",
     "--itl-ms", "50"],
]  # fmt: skip
HEAVY = {"torch", "matplotlib", "numpy"}
JSON_WITHOUT_RICH = [["kv", "llama-3-8b", "--json"], ["targets", "--json"], ["presets", "--json"], ["schema"],
                     ["families", "--json"]]  # fmt: skip


def heavy_modules(args: list[str]) -> set[str]:
    result = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stdout.strip().splitlines()[-1].split())


@pytest.mark.parametrize("args", FAST, ids=[" ".join(a) for a in FAST])
def test_fast_commands_do_not_import_torch(args):
    assert heavy_modules(args).isdisjoint(HEAVY)


@pytest.mark.parametrize("args", SEARCHES, ids=[" ".join(a[:4]) for a in SEARCHES])
def test_searches_and_simulations_import_no_numerical_library(args):
    assert heavy_modules(args).isdisjoint(HEAVY)


@pytest.mark.parametrize("args", JSON_WITHOUT_RICH, ids=[" ".join(a) for a in JSON_WITHOUT_RICH])
def test_json_runs_do_not_import_rich(args):
    assert "rich" not in heavy_modules(args)


def test_the_check_sees_a_heavy_import(tmp_path):
    """The control: ``--plot`` draws with matplotlib (and so numpy), and the check above reports both."""
    assert HEAVY - {"torch"} <= heavy_modules(["kv", "gpt2", "--plot", str(tmp_path / "kv.png")])
