"""The console entry point: one-line usage errors, exit codes, --version, lazy command loading."""

import json
import os
import subprocess
import sys

import pytest

from mha_cli import __version__


def run_mha(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mha_cli", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["kv"], "Missing argument"),
        (["kv", "llama-3-8b", "--batch", "x"], "Invalid value for '--batch'"),
        (["kv", "llama-3-8b", "--bogus"], "No such option: --bogus"),
        (["nosuch"], "No such command"),
        # one option twice with two values (an alias of it the second time): click would keep the last silently
        (["kv", "deepseek-v3", "--target", "8xh20", "--max-model-len", "131072", "--seq", "4096"],
         "--seq/--max-model-len given twice with different values (131072, then 4096): give it once"),
        (["kv", "llama-3-8b", "--target", "h100", "--target", "8xh200"],
         "--target given twice with different values (h100, then 8xh200)"),
        # one text, two numbers: --seq reads 8k as 8,192, --max-model-len as vLLM does, 8,000 (trial 304 #2)
        (["kv", "llama-3-8b", "--seq", "8k", "--max-model-len", "8k"],
         "--seq/--max-model-len given twice with different values (8k = 8,192, then 8k = 8,000): give it once"),
        # SGLang's --dp-size 1 beside --attn-dp-size N is one layout (tests/test_pasted_lines.py); 2 is not
        (["plan", "deepseek-v3", "--target", "8xh200", "--dp-size", "2", "--attn-dp-size", "8"],
         "--dp/--data-parallel-size/--dp-size/--attn-dp-size given twice with different values (2, then 8)"),
    ],
)  # fmt: skip
def test_usage_errors_are_one_line_exit_2(args, message):
    result = run_mha(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr and result.stdout == ""


def test_one_option_given_twice_with_the_same_value_is_accepted():
    result = run_mha("kv", "llama-3-8b", "--seq", "4096", "--max-model-len", "4096", "--json", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["kv"]["seq_len"] == 4096
    # two texts, one number: 8192, 8K to vLLM and 8k to --seq are 8,192 tokens (refused as two values before)
    result = run_mha("kv", "llama-3-8b", "--seq", "8192", "--max-model-len", "8K", "--seq", "8k", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["kv"]["seq_len"] == 8192


def test_version():
    result = run_mha("--version")
    assert (result.returncode, result.stdout.strip()) == (0, f"mha {__version__}")


def test_exit_code_of_a_command_passes_through():
    assert run_mha("kv", "llama-3-70b", "--target", "a100", "--fail-if-no-fit", "--json").returncode == 1


def test_only_the_invoked_command_module_is_imported():
    code = (
        "import sys; sys.argv = ['mha', 'kv', 'gpt2', '--json']\n"
        "from mha_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in sys.modules if m.startswith('mha_cli.cli.') and m.endswith('_cmd')]\n"
        "print(loaded, file=sys.stderr); assert loaded == ['mha_cli.cli.kv_cmd'], loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-1500:]


@pytest.mark.parametrize("args", [["presets", "--json"], ["targets"]], ids=["json", "tables"])
def test_a_closed_pipe_ends_quietly(args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte
    result = subprocess.run([sys.executable, "-m", "mha_cli", *args], stdout=write_end,
                            stderr=subprocess.PIPE, text=True, timeout=60)  # fmt: skip
    os.close(write_end)
    assert result.returncode == 0
    assert result.stderr == ""


@pytest.mark.parametrize("command", ["targets", "presets --json", "kv gpt2"])
def test_head_in_a_pipefail_script_succeeds(command):
    """Whether `head` leaves before or after the last byte, the pipeline exits 0 under `set -o pipefail`."""
    script = f"set -o pipefail; {sys.executable} -m mha_cli {command} | head -1 > /dev/null"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (0, "")


def test_a_group_without_its_sub_command_says_so():
    result = run_mha("experiment")
    assert result.returncode == 2
    assert "error: missing a command" in result.stderr


ADAPTERS_BUILT = (
    "import sys\n"
    "from typer import core\n"
    "from mha_cli.cli.app import main\n"
    "built = []\n"
    "real = core.build_runtime_param\n"
    "core.build_runtime_param = lambda descriptor: built.append(descriptor.annotation.__name__) or real(descriptor)\n"
    "sys.argv = ['mha', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit as exit_:\n    assert not exit_.code, exit_.code\n"
    "print(' '.join(built))\n"
)


def test_text_options_skip_typer_s_converter_and_other_values_keep_it():
    """Text given to a plain ``str`` option reaches the command as typed without a pydantic adapter (a few ms each);
    a number still goes through typer's (the control: ``--batch 4`` builds its int converter, and ``--batch x`` is
    refused by it, above)."""
    args = ["recommend", "--params", "7B", "--seq", "8192", "--target", "a100", "--batch", "4", "--json"]
    result = subprocess.run([sys.executable, "-c", ADAPTERS_BUILT, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "int"
    request = json.loads("\n".join(result.stdout.strip().splitlines()[:-1]))["request"]
    assert (request["params"], request["seq_len"], request["target"], request["batch"]) == (7e9, 8192, "a100", 4)


def test_a_usage_error_in_a_group_points_to_its_sub_commands_help():
    """`mha experiment heads --wrkers 2` pointed to `mha experiment --help`, which lists no --workers (trial 260 #7)."""
    done = subprocess.run([sys.executable, "-m", "mha_cli", "experiment", "heads", "--wrkers", "2"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().endswith("(see `mha experiment heads --help`)"), done.stderr
