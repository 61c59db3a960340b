"""Tensor-parallel ranks survive load: ``mha verify --tp 4`` runs beside a CPU hog, every one exits 0.

Before the ranks left the process group together (``parallel.group.leave_together``), about one run in four died
with "rank N failed (killed by SIGABRT): terminate called without an active exception" even on an idle 2-core
machine: a rank tore its gloo connections down while rank 0 still read its gathered results. The release check
with more runs and hogs is ``python benchmarks/tp_stress.py --runs 20 --hogs 2``.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time

RUNS = 5
CONFIG = """\
schema_version: 1
model: {name: tiny-gqa, d_model: 64, n_layers: 3, n_heads: 8, n_kv_heads: 4, vocab_size: 500, d_ff: 128}
deployment: {seq_len: 32, batch: 2, kv_dtype: fp32}
"""


def _hog(deadline: float) -> None:
    while time.monotonic() < deadline:
        pass


def test_tp4_runs_beside_a_cpu_hog_all_pass(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    hog = multiprocessing.get_context("spawn").Process(target=_hog, args=(time.monotonic() + 600,), daemon=True)
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
