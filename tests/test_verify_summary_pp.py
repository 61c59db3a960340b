"""``examples/ci/verify_summary.py`` (the CI action's summary step) on a ``mha verify --pp 2 --json`` report. Before
(newuser4) it ended in ``KeyError: 'variant'``: a pipeline report has no single-stack keys, and the action passes
``verify-args`` such as ``--pp 2`` through. The fixture is that run's report, unedited: ``mha verify
outputs/configs/125m-2k-4090.yaml --device cpu --pp 2 --json``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "tests" / "fixtures" / "verify_pp2_report.json"


def load_summary():
    spec = importlib.util.spec_from_file_location("verify_summary", ROOT / "examples" / "ci" / "verify_summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_pipeline_report_is_summarised_stage_by_stage():
    summary = load_summary()
    report = json.loads(REPORT.read_text())
    text = summary.summary("125m-2k-4090.yaml", None, "", report, "0")
    assert "recommended on cpu (bf16): seq 2,048 x batch 1, pp 2 x tp 1, 2 of 32 layers built." in text
    # hand count: embedding 50,257 x 512 x 2 B = 51,463,168 and one layer 6,031,360 B on stage 0; the last stage
    # also the tied head's copy of the embedding and the final norm (1,024 B): 57,495,552
    assert "| 0 | 0 | 0 (1) | yes | no | 54.8 MiB (= predicted) | 1.0 MiB (= predicted) | 2.40 ms |" in text
    assert "| 1 | 0 | 1 (1) | no | yes | 54.8 MiB (= predicted) | 1.0 MiB (= predicted) | 8.61 ms |" in text
    assert "| pp_matches_single_device | pass |" in text
    assert "prefill 901.04 ms, decode step 15.69 ms through every stage" in text


def test_no_report_says_so():
    summary = load_summary()
    assert summary.verify_section(None, "2")[-2] == "No report (see the step's log for the one-line error)."
