"""Maximum-load throughput against published engine tables: the cost model's total output tokens/s at the most
requests the engine's KV pool (and max batch) runs at once, against TensorRT-LLM's perf-overview rows.

    python benchmarks/max_load.py

The rows are ``tests/fixtures/serving_benchmarks.yaml`` entries with an ``mha.max_load`` block (TensorRT-LLM
v0.14 and v1.0 ``trtllm-bench`` runs: requests fed at an infinite rate, fixed lengths, "Total Output Throughput").
Each is planned with ``mha plan``'s code path (``core.cost.plan.plan_serving``, TensorRT-LLM's memory rules,
the target's shipped prior) with more users than any pool admits, so the engine runs full. These rows never
entered the priors' fit. Error per row: predicted / published - 1.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from mha_cli.core.cost.plan import plan_serving
from mha_cli.core.cost.priors import datasheet_profile, prior_profile
from mha_cli.core.presets import get_preset
from mha_cli.core.safe_yaml import load_yaml_file
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import resolve_target

ROOT = Path(__file__).parent.parent
USERS = 100_000
"""More than any KV pool here admits: every run is at the engine's own maximum."""


def rows() -> list[tuple[int, dict]]:
    raw = load_yaml_file(ROOT / "tests" / "fixtures" / "serving_benchmarks.yaml")
    return [(i, row["mha"]["max_load"]) for i, row in enumerate(raw) if "max_load" in row.get("mha", {})]


def predict(case: dict) -> tuple[float, int]:
    """(total output tokens/s, requests running per replica) at maximum load."""
    target = resolve_target(f"{case['tp']}x{case['target']}")
    context = case["isl"] + case["osl"]
    deployment = DeploymentSpec(seq_len=context, tp=case["tp"], engine=case["engine"],
                                weight_dtype=case["weight_dtype"], kv_dtype=case["kv_dtype"])  # fmt: skip
    plan = plan_serving(
        get_preset(case["preset"]), target, deployment, prior_profile(target.target, case["weight_dtype"]),
        datasheet_profile(target.target, case["weight_dtype"]), isl=case["isl"], osl=case["osl"], concurrency=USERS,
        tp=case["tp"],
    )  # fmt: skip
    return plan.output_tokens_per_s, plan.running_per_replica


def main() -> None:
    errors = []
    print(f"{'row':>4} {'model':14} {'target':15} {'tp':>2} {'w':5} {'isl/osl':>10} {'running':>7} {'predicted':>10}"
          f" {'published':>10} {'error':>7}")  # fmt: skip
    for index, case in rows():
        predicted, running = predict(case)
        published = case["measured"]["output_tokens_per_s"]
        errors.append(predicted / published - 1)
        print(f"{index:4} {case['preset']:14} {case['target']:15} {case['tp']:2} {case['weight_dtype']:5}"
              f" {case['isl']:>5}/{case['osl']:<4} {running:7} {predicted:10,.0f} {published:10,.0f}"
              f" {errors[-1]:+7.0%}")  # fmt: skip
    absolute = [abs(e) for e in errors]
    print(f"\n{len(errors)} rows: median |error| {statistics.median(absolute):.1%},"
          f" within 25%: {sum(a <= 0.25 for a in absolute) / len(absolute):.0%},"
          f" median signed {statistics.median(errors):+.1%}")  # fmt: skip


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
