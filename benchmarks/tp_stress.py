"""How often a CPU tensor-parallel verify run fails, alone or beside CPU hogs.

    python benchmarks/tp_stress.py [--runs 20] [--tp 4] [--hogs 2] [--timeout 300]

Each run is ``mha verify <tiny config> --device cpu --tp N --json`` in a fresh process; ``--hogs`` busy-loop
processes (stopped when the runs end, and never outliving ``--timeout`` per run) load the machine meanwhile.
Prints each run's exit code and wall time, then the failure rate and the failures' first stderr line.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = """\
schema_version: 1
model: {name: tiny-gqa, d_model: 64, n_layers: 3, n_heads: 8, n_kv_heads: 4, vocab_size: 500, d_ff: 128}
deployment: {seq_len: 32, batch: 2, kv_dtype: fp32}
"""


def _hog(deadline: float) -> None:
    """Spin until ``deadline`` (time.monotonic seconds)."""
    while time.monotonic() < deadline:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tp", type=int, default=4)
    parser.add_argument("--hogs", type=int, default=2, help="busy-loop processes beside the runs")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "tiny.yaml"
        config.write_text(CONFIG)
        deadline = time.monotonic() + args.runs * args.timeout
        hogs = [multiprocessing.Process(target=_hog, args=(deadline,), daemon=True) for _ in range(args.hogs)]
        for hog in hogs:
            hog.start()
        failures: list[str] = []
        try:
            for run in range(args.runs):
                command = [sys.executable, "-m", "mha_cli", "verify", str(config), "--device", "cpu"]
                command += ["--tp", str(args.tp), "--json"]
                start = time.perf_counter()
                try:
                    done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
                    code, err = done.returncode, done.stderr.strip().splitlines()[:1]
                except subprocess.TimeoutExpired:
                    code, err = -1, [f"no result in {args.timeout:g} s"]
                print(f"run {run + 1:>3}: exit {code:>3}  {time.perf_counter() - start:6.1f} s", flush=True)
                if code != 0:
                    failures.append(err[0] if err else f"exit {code}")
        finally:
            for hog in hogs:
                hog.terminate()
                hog.join()
    print(
        f"failures: {len(failures)} of {args.runs} ({len(failures) / args.runs:.0%}) at tp {args.tp}, {args.hogs} hogs"
    )
    for line in failures:
        print(f"  {line}")


if __name__ == "__main__":
    main()
