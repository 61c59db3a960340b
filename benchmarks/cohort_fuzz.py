"""Where the serving simulator's shortcuts part from its exact loop: random runs of vLLM with one shared prefix in
pools near the longest request's size (so that prefix blocks are shared, evicted and preemptions happen), each run
both ways (``simulate(..., skip_repeated_steps=True)``: the pp 1 cohort or the pipelined groups; ``False``: the exact
step-by-step loop), counting the runs that differ and printing them.

The step cost is a hand formula priced exactly for decodes (``decode_seconds`` is ``seconds``), so a difference is
the shortcut's scheduling, not the context grid. A run differs when its steps, preemptions or hit rate differ, or a
time by more than one part in 10^9. Review 314 found the case shape. Of the 200 default seeds the pp 1 cohort
differed on 7 of 68 runs at ff6cb07f (in steps or preemptions): it grew a decode inside its last block, which
``_vllm`` does not (so an evicted prefix block was cached again), and did not cache a prompt chunk's prefix blocks
once computed, as the exact loop does. Mended, none of 1,000 seeds differs (334 runs at pp 1, 342 at pp 2, 324 at
pp 3); ``tests/test_serve_prefix_pool.py`` keeps seeds 130 and 41. Both loops share a gap of the model (review 317
#3): ``EngineState.evict_unreferenced`` may evict a prefix block whose copy a running prefill holds, which vLLM keeps
cached (a hash maps to every block holding it), and the caching after compute brings it back at the step's end; a
request admitted later in that step meets the smaller cache (7 of about 50 pp 1 runs of 150 seeds).

    python benchmarks/cohort_fuzz.py [--seeds 200]
"""

from __future__ import annotations

import argparse
import random

from mha_cli.core.serve.simulate import EngineLimits, RequestTimes, Simulation, simulate
from mha_cli.core.serve.workload import Workload


class HandCost:
    """1 ms of host a step, then on each of ``pp`` stages 1 ms, 2 us a token, 13 ns a decode per token of context
    and 3 ns per prompt token per token it attends to (the later stages 10% slower each)."""

    def __init__(self, pp: int) -> None:
        self.pp, self.per_decode, self.host_s = pp, 1, 1e-3

    def stage_seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> tuple[float, list[float]]:
        tokens = decodes + sum(size for size, _ in chunks)
        stage = 1e-3 + 2e-6 * tokens + 1.3e-8 * decodes * context + 3e-9 * sum(s * (s + c) for s, c in chunks)
        return self.host_s, [stage * (1 + 0.1 * index) for index in range(self.pp)]

    def decode_stages(self, rows: int, context: int) -> tuple[float, list[float]]:
        return self.stage_seconds(rows, context, [])

    def seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        host, stages = self.stage_seconds(decodes, context, chunks)
        return host + sum(stages)

    def decode_seconds(self, rows: int, context: int) -> float:
        return self.seconds(rows, context, [])

    exact_decode_seconds = decode_seconds


def case(seed: int) -> tuple[Workload, EngineLimits, int]:
    """One random run: a prefix of 2-4 blocks, prompts of it to a block past it, a pool of the longest request's
    blocks and 0-16 more, blocks shared; pp 1, 2 or 3."""
    draw = random.Random(seed)
    block = draw.choice([4, 16])
    prefix = block * draw.choice([2, 3, 4])
    lengths = [
        (draw.choice([prefix, prefix, prefix + 1, prefix + block]), draw.randint(2, 80))
        for _ in range(draw.randint(4, 40))
    ]
    longest = max(prompt + output for prompt, output in lengths)
    workload = Workload(
        lengths=lengths, max_concurrency=draw.choice([2, 4, 8, 16]), prefix_len=prefix, warm_prefix=draw.random() < 0.3
    )
    limits = EngineLimits(
        "vllm", kv_blocks=-(-longest // block) + draw.choice([0, 1, 2, 4, 8, 16]), block_size=block,
        max_num_batched_tokens=draw.choice([64, 512]), max_num_seqs=64, shares_prefix_blocks=True,
        whole_prompt_admission=draw.random() < 0.5, counts_lookups_at_admission=draw.random() < 0.5,
    )  # fmt: skip
    return workload, limits, draw.choice([1, 2, 3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200)
    seeds = parser.parse_args().seeds
    runs: dict[int, int] = {}
    differ: dict[int, int] = {}
    for seed in range(seeds):
        workload, limits, pp = case(seed)
        fast, fast_times = simulate(workload, limits, HandCost(pp))  # type: ignore[arg-type]
        exact, exact_times = simulate(workload, limits, HandCost(pp), skip_repeated_steps=False)  # type: ignore[arg-type]
        runs[pp] = runs.get(pp, 0) + 1
        parts = differences(fast, exact, fast_times, exact_times)
        if parts:
            differ[pp] = differ.get(pp, 0) + 1
            print(f"seed {seed} pp {pp}: " + "; ".join(parts))
    for pp in sorted(runs):
        print(f"pp {pp}: {differ.get(pp, 0)} of {runs[pp]} runs differ (steps, preemptions, hit rate, times)")


def differences(fast: Simulation, exact: Simulation, fast_times: RequestTimes, exact_times: RequestTimes) -> list[str]:
    """What the shortcut's run gives otherwise than the exact one: its counts exactly, its seconds within one part
    in 10^9 (the shortcut adds a step's time to a gap where the exact loop subtracts two clock readings)."""
    parts = [
        f"{name} {a} / {b} exact"
        for name, a, b in (
            ("steps", fast.steps, exact.steps),
            ("preemptions", fast.preemptions, exact.preemptions),
            ("hit rate", fast.prefix_cache_hit_rate, exact.prefix_cache_hit_rate),
        )
        if a != b
    ]
    for name, a, b in (
        ("duration s", [fast.duration_s], [exact.duration_s]),
        ("TTFTs s", fast_times.ttft, exact_times.ttft),
        ("TPOTs s", fast_times.tpot, exact_times.tpot),
        ("mean ITL ms", [fast.itl_ms.mean], [exact.itl_ms.mean]),
    ):
        worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b, strict=True))
        if worst > 1e-9:
            parts.append(f"{name} off by up to {worst:.1e} of the exact")
    return parts


if __name__ == "__main__":
    main()
