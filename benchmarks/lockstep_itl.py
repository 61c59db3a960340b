"""Diagnostic: the SGLang docs' Qwen3.6 fit rows' ITL, closed form against the benchmark's run simulated.

    python benchmarks/lockstep_itl.py   # about 40 s: eight simulated runs of 2,048 requests

The cells (``tests/fixtures/serving_benchmarks_2025.yaml``, source ``sglang-docs-qwen3.6/<gpu>``) were measured by
``sglang.bench_serving --dataset-name random --random-input-len 8192 --random-output-len 1024 --random-range-ratio
1.0``, 2,048 prompts at 1,024 users (the page's header, ``docs_new/src/snippets/configs/qwen/qwen3.6-benchmarks.jsx``
at 4b7077be): every request is 8,192 in and 1,024 out. SGLang runs a prefill batch whenever a waiting request can be
admitted, before any decode (``managers/scheduler.py`` ``get_next_batch_to_run``, 0.5.16: "Run prefill first if
possible"), so once the running-request cap is full the requests move in waves: a wave's prompts are prefilled one
after another, the wave decodes together and ends together, and the next wave's prompts run. A request's TPOT then
carries, on average, the prompts after its own in its wave, (running - 1) / 2. The closed form
(``core.cost.serving._latencies``) puts all (running - 1) other prompts in every request's life, as arrivals spread
out in time do. The simulated run (``core.serve.replica.simulate_deployment``: SGLang's scheduler,
``core.serve.schedulers``) follows the waves. Both on the shipped sglang-0.5 constants. Not fitted, not shipped:
the fit reads the closed form (``fit_priors.GenerationRow.predict``). The 4,096-user cells (8,192 prompts) measure
the same ITL and tokens/s and are left out for time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import fit_priors

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.serving import predict_serving
from mha_cli.core.serve.replica import simulate_deployment

SOURCE_PREFIX = "sglang-docs-qwen3.6/"
USERS = 1024
CLIENT = {"bench": "sglang", "random_input_len": 8192, "random_output_len": 1024, "num_prompts": 2048,
          "range_ratio": 1.0}  # fmt: skip
"""The page's client at 1,024 users (``fit_priors.row_client``'s ``client`` block)."""


def signed(predicted: float, measured: float) -> str:
    """``61.1 (+56%)``: a prediction and its error against ``measured``."""
    return f"{predicted:.1f} ({(predicted / measured - 1) * 100:+.0f}%)"


def main() -> None:
    client = fit_priors.row_client(CLIENT)
    print("| Row | GPU, weights | running | measured ITL / tok/s | closed form ITL / tok/s | simulated ITL / tok/s |")
    print("|---|---|---:|---|---|---|")
    for row in fit_priors.load_generation_rows():
        if not row.source.startswith(SOURCE_PREFIX) or row.max_concurrency != USERS:
            continue
        profile = prior_profile(
            row.target, row.weight_dtype, None, generation=row.generation, release=row.graph_release
        )
        closed = predict_serving(row.case, profile, row.ceiling, stepper=row.stepper.on(profile))
        run = simulate_deployment(row.case, profile, row.engine, client)
        gpus = row.case.tp * row.case.pp * row.case.replicas
        itl, tokens = row.measured["itl_ms"], row.measured["tokens_per_s_per_gpu"]
        print(
            f"| #{row.index} | {row.target.id} {row.weight_dtype} | {closed.running_per_replica} | {itl:.1f} /"
            f" {tokens:.0f} | {signed(closed.itl_ms, itl)} / {signed(closed.output_tokens_per_s_per_gpu, tokens)} |"
            f" {signed(run.tpot_ms.mean, itl)} / {signed(run.deployment_output_tokens_per_s / gpus, tokens)} |",
            flush=True,
        )


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
