"""How fast the serving simulator runs: simulated requests per second of wall time, per scenario.

The issue's target: 10,000 requests in well under a second, so that a search can simulate its candidates. Each
scenario simulates ``--requests`` requests of Llama-3-8B on one H100 (the shipped prior) and prints the median wall
time of ``--repeats`` runs, the requests per second, and the ratio to the target rate (10,000 requests a second:
above 1 is faster). The step cost is built afresh for every run (a plan pays for it too). Ratios from one run are
meaningful on a shared machine; absolute times are not.

    python benchmarks/serve_speed.py [--requests 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.presets import get_preset
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload, drawn_lengths
from mha_cli.core.targets import load_targets

TARGET_RATE = 10_000.0
"""Simulated requests per second of wall time the search needs."""


def scenarios(requests: int) -> list[tuple[str, Workload, str]]:
    fixed = drawn_lengths(1024, 128, requests)
    drawn = drawn_lengths(1024, 128, requests, range_ratio=0.5, seed=1)
    return [
        ("closed loop c64, fixed 1024/128", Workload(lengths=fixed, max_concurrency=64), "vllm"),
        ("closed loop c64, drawn 1024/128 +-50%", Workload(lengths=drawn, max_concurrency=64), "vllm"),
        ("closed loop c256, drawn", Workload(lengths=drawn, max_concurrency=256), "vllm"),
        ("open loop 20 req/s, burstiness 0.5, drawn", Workload(lengths=drawn, rate=20.0, burstiness=0.5), "vllm"),
        ("closed loop c64, drawn, SGLang", Workload(lengths=drawn, max_concurrency=64), "sglang"),
        ("closed loop c64, drawn, TensorRT-LLM", Workload(lengths=drawn, max_concurrency=64), "trtllm"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = get_preset("llama-3-8b")
    profile = prior_profile(load_targets()["h100-sxm"])
    print(f"{'scenario':44} {'steps':>7} {'median s':>9} {'requests/s':>11} {'x target':>9}")
    for label, workload, engine in scenarios(args.requests):
        limits = EngineLimits(engine, kv_blocks=27_000, block_size=16, max_num_batched_tokens=8192, max_num_seqs=256)
        times, steps = [], 0
        for _ in range(args.repeats):
            start = time.perf_counter()
            cost = StepCost(Stepper(ServingCase(model=model, isl=1024, osl=128, concurrency=1), profile))
            run, _ = simulate(workload, limits, cost)
            times.append(time.perf_counter() - start)
            steps = run.steps
        median = statistics.median(times)
        rate = args.requests / median
        print(f"{label:44} {steps:>7,} {median:>9.3f} {rate:>11,.0f} {rate / TARGET_RATE:>9.2f}")


if __name__ == "__main__":
    main()
