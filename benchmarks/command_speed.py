"""Wall time of the commands people wait on, each against its dependencies' floor and its target.

Every case runs as a user runs it (``python -m mha_cli ...`` in a fresh interpreter) and so does the floor
(``benchmarks/command_floor.py``: Python, typer, rich and pydantic imported, one model validated, one rich table
printed; with ``--plot``, matplotlib drawing two panels as well). Each case runs right after a run of its floor,
on each checkout back to back, in rounds, after one warm-up run each, so a load that comes and goes on a shared
machine weighs on all of them alike: read the medians' ratios, not the absolute times. Targets (issue 38): ``kv``
and ``recommend`` tables within 1.3x of the floor, every other command without torch under 1 s, a deployment
search under 2 s.

``--baseline DIR`` also runs every case on another checkout of the code (``PYTHONPATH=DIR``) in the same rounds, so
a before/after table is one run: ``git archive <commit> | tar -x -C /tmp/before`` gives one.

Python's bytecode cache is used as on a user's machine: ``PYTHONDONTWRITEBYTECODE`` is removed from the runs'
environment, so the warm-up run compiles our modules once.

``--markdown FILE`` also writes the table as Markdown, headed by the command line, the load averages before and
after the run and the floors (``outputs/speed/``).

    python benchmarks/command_speed.py [--quick] [--runs 7] [--only plan ...] [--baseline /tmp/before] [--markdown F]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
FLOOR_SCRIPT = Path(__file__).resolve().parent / "command_floor.py"
FLOOR_RATIO = 1.3
"""``kv`` and ``recommend`` tables: at most this multiple of the floor."""
COMMAND_S = 1.0
"""Any other command without torch: under this many seconds."""
SEARCH_S = 2.0
"""A deployment search (``plan`` without ``--tp``, ``recommend --ttft-ms``): under this many seconds."""
PLOT = "{plot}"
"""Stands for a fresh PNG path in a case's arguments."""


class Case(NamedTuple):
    label: str
    args: list[str]
    target: str
    """``floor`` (within ``FLOOR_RATIO`` of the floor), ``command`` (``COMMAND_S``) or ``search`` (``SEARCH_S``)."""
    plot: bool = False
    """Draws a PNG: its ratio is to the plot floor."""


SEARCH_70B = ["plan", "llama-3-70b", "--target", "8xh100", "--isl", "1024", "--osl", "128"]
RECOMMEND_7B = ["recommend", "--params", "7B", "--seq", "8192", "--target", "a100"]
CASES = [
    Case("kv llama-3-8b", ["kv", "llama-3-8b"], "floor"),
    Case("kv llama-3-8b --json", ["kv", "llama-3-8b", "--json"], "floor"),
    Case("kv llama-3-8b --target h100", ["kv", "llama-3-8b", "--target", "h100"], "floor"),
    Case("recommend 7B 8192 a100", RECOMMEND_7B, "floor"),
    Case("recommend 7B 8192 a100 --json", [*RECOMMEND_7B, "--json"], "floor"),
    Case(
        "recommend ... inference ttft 1000 itl 50",
        [*RECOMMEND_7B, "--priority", "inference", "--ttft-ms", "1000", "--itl-ms", "50"],
        "search",
    ),
    Case("plan 70B 8xh100 --tp 8 c64", [*SEARCH_70B, "--tp", "8", "--concurrency", "64"], "command"),
    Case("plan 70B 8xh100 search c64", [*SEARCH_70B, "--concurrency", "64"], "search"),
    Case("plan 70B 8xh100 search, every load", SEARCH_70B, "search"),
    Case("plan 70B 8xh100 search ttft 500 itl 30", [*SEARCH_70B, "--ttft-ms", "500", "--itl-ms", "30"], "search"),
    Case("plan 70B 8xh100 search, no pick", [*SEARCH_70B, "--ttft-ms", "100", "--itl-ms", "10"], "search"),
    Case(
        "kv llama-3-8b --target h100 --plot",
        ["kv", "llama-3-8b", "--target", "h100", "--plot", PLOT],
        "command",
        plot=True,
    ),
    Case("recommend 7B 8192 a100 --plot", [*RECOMMEND_7B, "--plot", PLOT], "command", plot=True),
    Case(
        "plan 70B --tp 8 c64 --plot",
        [*SEARCH_70B, "--tp", "8", "--concurrency", "64", "--plot", PLOT],
        "command",
        plot=True,
    ),
    Case("plan 70B search c64 --plot", [*SEARCH_70B, "--concurrency", "64", "--plot", PLOT], "search", plot=True),
]
FLOOR, PLOT_FLOOR = "floor", "floor --plot"


def environment(checkout: Path) -> dict[str, str]:
    """The runs' environment: ``checkout``'s code, the bytecode cache on, a fixed terminal width."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(checkout), "COLUMNS": "120"}


def command_line(case: Case, png: Path) -> list[str]:
    """``case`` as ``python -m mha_cli ...``, drawing to ``png`` (replaced each run: ``--force``)."""
    args = [str(png) if a == PLOT else a for a in case.args]
    return [sys.executable, "-m", "mha_cli", *args, *(["--force"] if case.plot else [])]


def timed(command: list[str], env: dict[str, str], folder: str) -> float:
    """Seconds of one run in ``folder`` (not a checkout: ``python -m`` puts the working directory first on the path,
    before ``PYTHONPATH``); a failed run stops the benchmark with its error (a broken case times nothing)."""
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:])} exited {result.returncode}: {result.stderr.strip()[-500:]}")
    return seconds


def check_imports_from(checkout: Path, folder: str) -> None:
    """Stop unless ``python -m mha_cli`` run as the cases run imports ``checkout``'s code (an installed copy, or the
    working directory, would time the wrong code)."""
    where = subprocess.run([sys.executable, "-c", "import mha_cli; print(mha_cli.__file__)"], capture_output=True,
                           text=True, env=environment(checkout), cwd=folder, check=True).stdout.strip()  # fmt: skip
    if not Path(where).resolve().is_relative_to(checkout.resolve()):
        raise SystemExit(f"mha_cli comes from {where}, not from {checkout}")


def measure(cases: list[Case], checkouts: dict[str, Path], runs: int) -> dict[tuple[str, str], list[float]]:
    """Seconds of each (checkout, case label) run and of the floors, interleaved: every round runs each case's floor
    (the plot floor before a ``--plot`` case) and then the case on each checkout, back to back, the checkouts' order
    swapped every other round (a load that comes and goes weighs on the floor, before and after alike)."""
    floors = {FLOOR: [sys.executable, str(FLOOR_SCRIPT)], PLOT_FLOOR: [sys.executable, str(FLOOR_SCRIPT), "--plot"]}
    with tempfile.TemporaryDirectory(prefix="mha-speed-") as folder:
        for checkout in checkouts.values():
            check_imports_from(checkout, folder)
        floor_jobs = {name: (("", name), command, environment(ROOT)) for name, command in floors.items()}
        case_jobs = [
            (floor_jobs[PLOT_FLOOR if case.plot else FLOOR],
             [((name, case.label), command_line(case, Path(folder) / f"{name}-{i}.png"), environment(checkout))
              for name, checkout in checkouts.items()])
            for i, case in enumerate(cases)
        ]  # fmt: skip
        every_job = list({job[0]: job for floor, pair in case_jobs for job in (floor, *pair)}.values())
        for _, command, env in every_job:  # warm-up: the bytecode cache written, the files in the page cache
            timed(command, env, folder)
        times: dict[tuple[str, str], list[float]] = {key: [] for key, _, _ in every_job}
        for round_ in range(runs):
            for floor, pair in case_jobs:
                for key, command, env in (floor, *(pair if round_ % 2 == 0 else pair[::-1])):
                    times[key].append(timed(command, env, folder))
    return times


def verdict(case: Case, median: float, floor: float) -> tuple[str, bool]:
    if case.target == "floor":
        return f"<= {FLOOR_RATIO}x floor", median / floor <= FLOOR_RATIO
    limit = COMMAND_S if case.target == "command" else SEARCH_S
    return f"< {limit:g} s", median < limit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each command (default 7)")
    parser.add_argument("--quick", action="store_true", help="3 runs each instead of --runs")
    parser.add_argument("--only", action="append", help="only the cases whose label contains this text (repeatable)")
    parser.add_argument("--baseline", type=Path, help="another checkout to time in the same rounds (before)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this Markdown file")
    args = parser.parse_args()
    load_before = os.getloadavg()
    runs = 3 if args.quick else args.runs
    cases = [c for c in CASES if args.only is None or any(text in c.label for text in args.only)]
    checkouts = {"after": ROOT} if args.baseline is None else {"before": args.baseline.resolve(), "after": ROOT}
    times = measure(cases, checkouts, runs)
    medians = {key: statistics.median(t) for key, t in times.items()}
    floor, plot_floor = medians.get(("", FLOOR), 0.0), medians.get(("", PLOT_FLOOR), 0.0)  # --only: maybe one
    shown_floors = ", ".join(f"{name} {value * 1e3:.0f} ms" for name, value in (("floor", floor), ("plot floor", plot_floor))
                             if value)  # fmt: skip
    print(f"{runs} interleaved runs each; {shown_floors} (medians)")
    before = f"{'before ms':>9} {'after/before':>12} " if args.baseline else ""
    print(f"{'case':42} {before}{'median ms':>9} {'spread':>7} {'x floor':>7} {'target':>15}  ok")
    failed = 0
    rows = []
    for case in cases:
        runs_after = times[("after", case.label)]
        median, spread = medians[("after", case.label)], max(runs_after) - min(runs_after)
        own_floor = plot_floor if case.plot else floor
        target, ok = verdict(case, median, floor)
        failed += not ok
        shown, was = "", None
        if args.baseline:
            was = medians[("before", case.label)]
            shown = f"{was * 1e3:9.0f} {median / was:12.2f} "
        print(f"{case.label:42} {shown}{median * 1e3:9.0f} {spread * 1e3:7.0f} {median / own_floor:7.2f}"
              f" {target:>15}  {'yes' if ok else 'NO'}")  # fmt: skip
        rows.append((case, was, median, spread, median / own_floor, target, ok))
    print("x floor: the median over the floor's (a --plot case's over the plot floor's)")
    if args.markdown:
        loads = (load_before, os.getloadavg())
        args.markdown.write_text(markdown(rows, runs, shown_floors, loads, args.baseline is not None))
    return 1 if failed else 0


def markdown(rows: list, runs: int, floors: str, loads: tuple, baseline: bool) -> str:
    """The table as Markdown, headed by the command that made it and the machine's load around the run."""
    command = shlex.join(["python", "benchmarks/command_speed.py", *sys.argv[1:]])
    load = " to ".join(", ".join(f"{x:.1f}" for x in pair) for pair in loads)
    lines = [
        f"    {command}", "",
        f"{runs} interleaved runs each (medians); {floors}. Load averages (1, 5, 15 min) {load}.", "",
        "| case | " + ("before ms | after / before | " if baseline else "") + "ms | spread ms | x floor | target | met |",
        "| --- | " + ("---: | ---: | " if baseline else "") + "---: | ---: | ---: | --- | --- |",
    ]  # fmt: skip
    for case, was, median, spread, ratio, target, ok in rows:
        before = f"{was * 1e3:,.0f} | {median / was:.2f} | " if baseline else ""
        lines.append(f"| `{case.label}` | {before}{median * 1e3:,.0f} | {spread * 1e3:,.0f} | {ratio:.2f} | {target} |"
                     f" {'yes' if ok else 'no'} |")  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
