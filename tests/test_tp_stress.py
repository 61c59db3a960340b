"""Tensor-parallel ranks survive load: ``mha verify --tp 4`` runs beside a CPU hog, every one exits 0.

Before the ranks left the process group together (``parallel.group.leave_together``), about one run in four died
with "rank N failed (killed by SIGABRT): terminate called without an active exception" even on an idle 2-core
machine: a rank tore its gloo connections down while rank 0 still read its gathered results. A barrier alone left
a rarer abort (one CI run in many, at stage "leaving the process group"); the ranks now also agree on leaving over
the rendezvous store and exit without the interpreter's teardown (``worker.exit_at_once``). The release check
with more runs and hogs is ``python benchmarks/tp_stress.py --runs 20 --hogs 2``."""

from __future__ import annotations

import importlib.util
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

RUNS = 1  # CI's share, about 20 s beside the hog, which also takes a core from the other test worker (3 runs made
# this the suite's second-slowest test, about 120 core-seconds, with CI over its 15 minutes); the release check above
# runs 20
_SPEC = importlib.util.spec_from_file_location(
    "tp_stress", Path(__file__).parent.parent / "benchmarks" / "tp_stress.py"
)
assert _SPEC is not None and _SPEC.loader is not None
tp_stress = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(tp_stress)  # the benchmark's own config and hog, so the two cannot drift apart


def test_tp4_runs_beside_a_cpu_hog_all_pass(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(tp_stress.CONFIG)
    hog = multiprocessing.get_context("fork").Process(
        target=tp_stress._hog, args=(time.monotonic() + 600,), daemon=True
    )
    hog.start()
    failures = []
    try:
        for _ in range(RUNS):
            command = [sys.executable, "-m", "mha_cli", "verify", str(config), "--device", "cpu", "--tp", "4", "--json"]
            done = subprocess.run(command, capture_output=True, text=True, timeout=240)
            if done.returncode != 0:
                failures.append(done.stderr.strip()[-300:])
    finally:
        hog.terminate()
        hog.join()
    assert not failures, failures
