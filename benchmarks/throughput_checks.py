"""How a priced row's tokens/s per GPU is assembled, checked apart from the step cost (outputs/serving/vllm_v1_tput.md).

Two checks on ``fit_priors --set 2025``'s rows, priced with the shipped constants:

- ``latency_residual``, for a row that measured ITL, TTFT and tokens/s: the tokens/s error left once the error of
  the requests' own latency is taken out. A closed loop of N users finishes a request per e2e = TTFT + (osl - 1) x
  ITL, so its tokens/s is N x osl / e2e, less the run's ramp, tail and gaps. The residual is what the step cost
  cannot explain: the ramp, the tail, the gaps, how the source divides by its GPUs; 0 when only the steps are off.
  In a run of one wave the duration is the last request's, so how the prompts queue (the TTFTs' spread) enters too.
- ``reading_slope``, for a source that measured tokens/s alone over several prompt and output lengths: the slope of
  ln(predicted / measured) over ln((isl + osl) / osl). A figure of output tokens/s read as input + output (the
  fixture's output = figure x osl / (isl + osl)) gives slope 1, the reverse -1, a right reading 0 (with a step
  cost that scales right with the prompt).

Run: ``python benchmarks/throughput_checks.py --generation vllm-v1 [--split holdout]``. Pure Python.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import fit_priors


def e2e_ms(ttft_ms: float, itl_ms: float, osl: int) -> float:
    """One request's life in ms: its first token, then osl - 1 more, one ITL (the mean TPOT) apart."""
    return ttft_ms + (osl - 1) * itl_ms


def latency_residual(predicted: dict[str, float], measured: dict[str, float], osl: int) -> float:
    """The tokens/s error (predicted / measured - 1) the requests' latency leaves: the tokens/s ratio times the
    predicted over the measured e2e (``e2e_ms``), less 1. Both dicts hold ``ttft_ms``, ``itl_ms`` and
    ``tokens_per_s_per_gpu``."""
    tokens = predicted["tokens_per_s_per_gpu"] / measured["tokens_per_s_per_gpu"]
    life = e2e_ms(predicted["ttft_ms"], predicted["itl_ms"], osl) / e2e_ms(measured["ttft_ms"], measured["itl_ms"], osl)
    return tokens * life - 1


def reading_slope(points: list[tuple[int, int, float, float]]) -> float:
    """Least-squares slope of ln(predicted / measured) over ln((isl + osl) / osl), for (isl, osl, predicted,
    measured) tokens/s; at least two distinct (isl + osl) / osl."""
    xs = [math.log((isl + osl) / osl) for isl, osl, _, _ in points]
    ys = [math.log(predicted / measured) for _, _, predicted, measured in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        raise ValueError("reading_slope needs rows of at least two (isl + osl) / osl")
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generation", required=True, help="an engine generation of the 2025 rows (vllm-v1)")
    parser.add_argument("--split", choices=("fit", "holdout", "all"), default="all")
    args = parser.parse_args()
    rows = [
        row for row in fit_priors.load_generation_rows()
        if row.generation == args.generation and args.split in ("all", row.split)
        and "tokens_per_s_per_gpu" in row.measured
    ]  # fmt: skip
    if not rows:
        raise SystemExit(f"--generation {args.generation}: no row of it measured tokens/s")
    print(f"{'row':>5} {'split':7} {'label':50} {'ITL':>6} {'TTFT':>6} {'tok/s':>6} {'residual':>8}")
    alone: dict[str, list[tuple[int, int, float, float]]] = defaultdict(list)
    for row in rows:
        predicted = row.predict(None)
        error = predicted["tokens_per_s_per_gpu"] / row.measured["tokens_per_s_per_gpu"] - 1
        if {"itl_ms", "ttft_ms"} <= row.measured.keys():  # TTFT as fit_priors judges it: median where printed
            itl = predicted["itl_ms"] / row.judged["itl_ms"] - 1
            ttft = predicted["ttft_ms"] / row.judged["ttft_ms"] - 1
            residual = latency_residual(predicted, row.judged, row.case.osl)
            print(
                f"#{row.index:4} {row.split:7} {row.label:50} {itl:+6.0%} {ttft:+6.0%} {error:+6.0%} {residual:+8.1%}"
            )
        else:
            print(f"#{row.index:4} {row.split:7} {row.label:50} {'':6} {'':6} {error:+6.0%}")
            measured = row.measured["tokens_per_s_per_gpu"]
            alone[row.source.split("/")[0]].append(
                (row.case.isl, row.case.osl, predicted["tokens_per_s_per_gpu"], measured)
            )
    for source, points in sorted(alone.items()):
        if len({(isl + osl) / osl for isl, osl, _, _ in points}) > 1:
            print(f"{source}: {len(points)} rows of tokens/s alone, reading slope {reading_slope(points):+.2f}")


if __name__ == "__main__":
    main()
