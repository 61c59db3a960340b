"""Instructions each command runs (valgrind's callgrind ``Ir``), against the floor's: the work, which a shared machine's
load does not change (``command_speed.py`` times the same cases; on a loaded machine its absolute times move by 2x).

Every case of ``command_speed.py`` without ``--plot`` (matplotlib under callgrind takes minutes) runs once as a user
runs it, ``python -m mha_cli ...`` with the bytecode cache on (one run first writes it), under ``valgrind
--tool=callgrind``; so does the floor (``command_floor.py``). ``--baseline DIR`` counts another checkout's too. A
run under callgrind takes about 50 times its usual time: the no-pick search about two minutes.

    python benchmarks/command_instructions.py [--only plan ...] [--baseline /tmp/before]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from command_speed import CASES, FLOOR_RATIO, FLOOR_SCRIPT, ROOT, environment

COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(command: list[str], env: dict[str, str], folder: str) -> int:
    """Instructions one run of ``command`` executes (callgrind's total); a failed run stops the benchmark."""
    subprocess.run(command, capture_output=True, env=env, cwd=folder, check=True)  # writes the bytecode cache
    result = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True, text=True, env=env, cwd=folder,
    )  # fmt: skip
    found = COLLECTED.search(result.stderr)
    if result.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(command)} exited {result.returncode}: {result.stderr.strip()[-500:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="only the cases whose label contains this text (repeatable)")
    parser.add_argument("--baseline", type=Path, help="another checkout to count as well (before)")
    args = parser.parse_args()
    cases = [c for c in CASES if not c.plot and (args.only is None or any(text in c.label for text in args.only))]
    checkouts = {"after": ROOT} if args.baseline is None else {"before": args.baseline.resolve(), "after": ROOT}
    with tempfile.TemporaryDirectory(prefix="mha-instructions-") as folder:  # outside any checkout (command_speed)
        floor = instructions([sys.executable, str(FLOOR_SCRIPT)], environment(ROOT), folder)
        print(f"floor {floor / 1e6:,.0f} M instructions")
        before = f"{'before M':>9} {'after/before':>12} " if args.baseline else ""
        print(f"{'case':42} {before}{'M instr':>9} {'x floor':>7}")
        for case in cases:
            counted = {
                name: instructions([sys.executable, "-m", "mha_cli", *case.args], environment(checkout), folder)
                for name, checkout in checkouts.items()
            }
            after = counted["after"]
            shown = f"{counted['before'] / 1e6:9,.0f} {after / counted['before']:12.2f} " if args.baseline else ""
            mark = "" if case.target != "floor" else f"  (target <= {FLOOR_RATIO}x)"
            print(f"{case.label:42} {shown}{after / 1e6:9,.0f} {after / floor:7.2f}{mark}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
