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


# --- what the table commands leave out, and the collector at start-up -----------------------------------------

RUN_OURS = RUN.replace(
    "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'rich', 'matplotlib', 'numpy'})))\n",
    "print(' '.join(sorted(m for m in sys.modules if m.startswith('mha_cli.'))))\n",
)
SIMULATOR = "mha_cli.core.serve."  # the serving simulator: `plan` and `recommend --ttft-ms` only
SEARCH = ("mha_cli.core.cost.search", "mha_cli.core.cost.plan")  # the deployment search and its plans
COST_MODEL = ("mha_cli.core.cost.stepper", "mha_cli.core.cost.priors")  # a step's price: needs a --target
OTHER_COMMANDS = ("mha_cli.cli.plan_cmd", "mha_cli.cli.check_cmd", "mha_cli.cli.verify_cmd", "mha_cli.nn.",
                  "mha_cli.verify.", "mha_cli.hook.")  # fmt: skip
TABLES = {
    "kv llama-3-8b": (["kv", "llama-3-8b"], (SIMULATOR, *SEARCH, *COST_MODEL, *OTHER_COMMANDS, "mha_cli.core.recommend")),
    "kv --target": (["kv", "llama-3-8b", "--target", "h100"], (SIMULATOR, *SEARCH, *OTHER_COMMANDS, "mha_cli.core.recommend")),
    "recommend": (["recommend", "--params", "7B", "--seq", "8192", "--target", "a100"], (SIMULATOR, *SEARCH, *OTHER_COMMANDS)),
}  # fmt: skip


def our_modules(args: list[str]) -> set[str]:
    result = subprocess.run([sys.executable, "-c", RUN_OURS, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stdout.strip().splitlines()[-1].split())


@pytest.mark.parametrize("case", TABLES, ids=list(TABLES))
def test_table_commands_leave_out_what_they_do_not_print(case):
    """``mha kv`` and ``mha recommend`` tables (issue 38: within 1.3x of their dependencies' floor) import neither the
    serving simulator nor the deployment search; ``kv`` without ``--target`` prices no step, so it leaves the cost
    model out too, and the recommender."""
    args, left_out = TABLES[case]
    imported = our_modules(args)
    assert {"mha_cli.core.schemas", "mha_cli.cli.output"} <= imported  # the check sees our modules at all
    assert not [m for m in imported if m.startswith(left_out)]


def test_the_check_sees_the_simulator_and_the_search_when_a_plan_runs_them():
    """The control: a deployment search imports all that the tables leave out, bar the other commands."""
    imported = our_modules(["plan", "llama-3-70b", "--target", "8xh100", "--isl", "1024", "--osl", "128", "--json"])
    for prefix in (SIMULATOR, *SEARCH, *COST_MODEL):
        assert [m for m in imported if m.startswith(prefix)], prefix


_COLLECTOR_AT_EXIT = """
import atexit, gc, sys
atexit.register(lambda: print(gc.isenabled(), gc.get_threshold()[0], gc.get_freeze_count(), len(gc.get_objects()),
                              file=sys.stderr))
sys.argv = ["mha", *sys.argv[1:]]
from mha_cli.__main__ import main
main()
"""
_DEPENDENCIES_OBJECTS = """
import gc
gc.disable()
before = len(gc.get_objects())
import pydantic, rich.console, rich.table, typer
pydantic.BaseModel  # pydantic imports its models' machinery on first use
print(len(gc.get_objects()) - before)
"""


def _last_line_words(code: str, *args: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return (result.stderr or result.stdout).strip().splitlines()[-1].split()


@pytest.mark.parametrize("args", [["kv", "llama-3-8b", "--json"], ["recommend", "--params", "7B", "--target", "a100"]])
def test_the_console_entry_keeps_the_collector_off_what_lives_until_exit(args):
    """``mha_cli.cli.collector``: the console entry's run ends with the collector on, its young generation
    ``YOUNG_OBJECTS``, and every object frozen (start-up's at ``resume``, the command's at ``finish``): more of them
    than importing the dependencies alone makes, and none left for the exit's collection to traverse."""
    from mha_cli.cli.collector import YOUNG_OBJECTS

    enabled, young, frozen, tracked = _last_line_words(_COLLECTOR_AT_EXIT, *args)
    dependencies = int(_last_line_words(_DEPENDENCIES_OBJECTS)[0])
    assert (enabled, int(young), int(tracked)) == ("True", YOUNG_OBJECTS, 0)
    assert int(frozen) > dependencies > 10_000


def test_resume_freezes_start_up_only_after_the_console_entry_paused():
    """Without ``pause`` (an in-process run) ``resume`` and ``finish`` change nothing; after it, ``resume`` freezes and
    turns the collector back on with the larger young generation."""
    code = ("import gc\nfrom mha_cli.cli import collector\n"
            "collector.resume(); collector.finish()\nstate = [gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()[0]]\n"
            "collector.pause()\nstate.append(gc.isenabled())\nmade = [{} for _ in range(100)]\ncollector.resume()\n"
            "print(*state, gc.isenabled(), gc.get_freeze_count() >= 100, gc.get_threshold()[0])")  # fmt: skip
    from mha_cli.cli.collector import YOUNG_OBJECTS

    assert _last_line_words(code) == ["True", "0", "700", "False", "True", "True", str(YOUNG_OBJECTS)]


def test_an_in_process_run_keeps_the_collector_as_it_finds_it():
    """Tests and library users call ``app.main`` without the console entry's pause: nothing is frozen."""
    code = ("import gc, sys\nfrom mha_cli.cli.app import main\nsys.argv = ['mha', 'kv', 'llama-3-8b', '--json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nprint(gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()[0],"
            " file=sys.stderr)")  # fmt: skip
    assert _last_line_words(code) == ["True", "0", "700"]
