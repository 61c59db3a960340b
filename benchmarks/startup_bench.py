"""Startup cost of the fast commands against the bare imports they cannot avoid.

Prints the median wall time of ``mha kv``, ``mha targets``, ``mha recommend`` and of three floors measured in the
same run: ``python -c "import typer, rich, pydantic, yaml"``; the same plus one pydantic model validated (pydantic's
import is lazy: the bare import builds no schema); and that plus one rich table printed (what any command that
prints a table pays for rich's console). Each command's ratio is to its own floor: a ``--json`` run to the model
floor, a table run to the table floor (target: at most 1.3x). Ratios from one run are meaningful on a shared
machine; absolute times are not.

The runs use Python's bytecode cache as a user's machine does: ``PYTHONDONTWRITEBYTECODE`` is
removed from their environment (this workplace sets it), so the warm-up run compiles our modules
once, as the installed libraries were compiled by pip.

    python benchmarks/startup_bench.py [--runs 21] [--source llama-3-8b]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

TARGET_RATIO = 1.3
IMPORTS = "imports (typer, rich, pydantic, yaml)"
MODEL_FLOOR = "  + one pydantic model built"
TABLE_FLOOR = "  + one model + one rich table printed"


ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def median_seconds(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """Median and spread (max - min) of ``runs`` timed runs of each command, after one warm-up run each. The runs
    are interleaved (one of each command per round), so a load that comes and goes on a shared machine weighs on
    every command alike and the ratios stay meaningful."""
    for command in commands.values():
        subprocess.run(command, check=True, capture_output=True, env=ENV)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=ENV)
            times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(t), max(t) - min(t)) for name, t in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--source", default="llama-3-8b")
    args = parser.parse_args()
    model_floor = "import typer, rich, pydantic, yaml\nclass M(pydantic.BaseModel):\n    x: int = 0\nM()"
    table_floor = model_floor + (
        "\nfrom rich.console import Console\nfrom rich.table import Table\nt = Table('a', 'b')\nt.add_row('1', '2')"
        "\nConsole().print(t)"
    )
    mha = [sys.executable, "-m", "mha_cli"]
    commands = {
        IMPORTS: [sys.executable, "-c", "import typer, rich, pydantic, yaml"],
        # `import pydantic` is lazy: the floor above builds no model. Every result model needs BaseModel and one
        # schema build, which also imports importlib.metadata (pydantic's plugin loader); this row shows that part.
        MODEL_FLOOR: [sys.executable, "-c", model_floor],
        # a command that prints tables also pays for rich's console and table machinery: this floor prints one
        TABLE_FLOOR: [sys.executable, "-c", table_floor],
        f"mha kv {args.source} --json": [*mha, "kv", args.source, "--json"],
        f"mha kv {args.source} --target h100 --json": [*mha, "kv", args.source, "--target", "h100", "--json"],
        f"mha kv {args.source} --target h100 (tables)": [*mha, "kv", args.source, "--target", "h100"],
        "mha targets --json": [*mha, "targets", "--json"],
        "mha recommend --params 7B --json": [*mha, "recommend", "--params", "7B", "--json"],
        "mha recommend --params 7B --target a100 (tables)": [*mha, "recommend", "--params", "7B", "--target", "a100"],
    }
    results = median_seconds(commands, args.runs)
    print(f"{'command':52} {'median ms':>10} {'spread ms':>10} {'x imports':>9} {'x floor':>8}")
    worst = 0.0
    for name, (median, spread) in results.items():
        floor = None
        if name.startswith("mha"):
            floor = TABLE_FLOOR if name.endswith("(tables)") else MODEL_FLOOR
        versus = "" if floor is None else f"{median / results[floor][0]:8.2f}"
        if floor is not None:
            worst = max(worst, median / results[floor][0])
        print(f"{name:52} {median * 1e3:10.1f} {spread * 1e3:10.1f} {median / results[IMPORTS][0]:9.2f} {versus}")
    print(f"worst ratio to its floor {worst:.2f} (target <= {TARGET_RATIO}): --json commands against"
          f" '{MODEL_FLOOR.strip()}', table commands against '{TABLE_FLOOR.strip()}'")  # fmt: skip
    return 0 if worst <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
