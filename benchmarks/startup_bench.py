"""Startup cost of the fast commands against the bare imports they cannot avoid.

Prints the median wall time of ``mha kv``, ``mha targets``, ``mha recommend`` and of ``python -c "import typer, rich, pydantic, yaml"``,
both measured in this run, and their ratio (target: at most 1.3x). Ratios from one run are
meaningful on a shared machine; absolute times are not.

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
    commands = {
        "imports (typer, rich, pydantic, yaml)": [sys.executable, "-c", "import typer, rich, pydantic, yaml"],
        # `import pydantic` is lazy: the floor above builds no model. Every result model needs BaseModel and one
        # schema build, which also imports importlib.metadata (pydantic's plugin loader); this row shows that part.
        "  + one pydantic model built": [
            sys.executable,
            "-c",
            "import typer, rich, pydantic, yaml\nclass M(pydantic.BaseModel):\n    x: int = 0\nM()",
        ],
        f"mha kv {args.source} --json": [sys.executable, "-m", "mha_cli", "kv", args.source, "--json"],
        f"mha kv {args.source} (tables)": [sys.executable, "-m", "mha_cli", "kv", args.source, "--target", "h100"],
        "mha targets --json": [sys.executable, "-m", "mha_cli", "targets", "--json"],
        "mha recommend --params 7B --json": [sys.executable, "-m", "mha_cli", "recommend", "--params", "7B", "--json"],
        "mha recommend --params 7B --target a100 (tables)": [
            sys.executable,
            "-m",
            "mha_cli",
            "recommend",
            "--params",
            "7B",
            "--target",
            "a100",
        ],
    }
    results = median_seconds(commands, args.runs)
    baseline = results["imports (typer, rich, pydantic, yaml)"][0]
    print(f"{'command':50} {'median ms':>10} {'spread ms':>10} {'ratio':>7}")
    for name, (median, spread) in results.items():
        print(f"{name:50} {median * 1e3:10.1f} {spread * 1e3:10.1f} {median / baseline:7.2f}")
    worst = max(median for median, _ in results.values()) / baseline
    print(f"worst ratio {worst:.2f} (target <= {TARGET_RATIO})")
    return 0 if worst <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
