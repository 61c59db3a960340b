"""Speculative decoding on a pool far smaller than the load, simulated against the real vLLM on this CPU: what a
request's blocks hold when each step keeps T tokens and allocates vLLM's lookahead slots. None of it fitted.

The run (``spec_preempt_run.sh``): tiny-llama drafting for itself (k = 3, dummy weights, so greedy verification
accepts every draft: T is read from the server's "SpecDecoding metrics" lines, as ``spec_eval.py`` reads it), 24
blocks of 128 (the null block one of them), 8 users, 12 requests of 1,024 in / 512 out. The measured preemptions are
the server's ``vllm:num_preemptions_total`` over the run. Simulated three ways with the profile fitted on
tiny-llama's plain runs (``evaluate.py``'s every-third split): as the simulator runs it (each decode keeps T tokens a
step, its blocks cover vLLM's 1 + k scheduled and k lookahead slots: ``core.serve.speculative``), without the
lookahead slots, and the control, the simulator before (the output counted in chunks of T tokens, one token of cache
each). Writes ``outputs/serving/vllm_cpu_spec_preempt.md`` (``--out``).

    bash benchmarks/vllm_cpu/spec_preempt_run.sh
    python benchmarks/vllm_cpu/spec_preempt_eval.py --results benchmarks/vllm_cpu/results_spec_preempt
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from evaluate import fit_split, served
from spec_eval import K, acceptance_length

from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.engine.window_blocks import NULL_BLOCKS
from mha_cli.core.serve.bench_results import collect
from mha_cli.core.serve.fit import figures_of, replay_for, workload_of
from mha_cli.core.serve.simulate import simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.serve.workload import Workload
from mha_cli.core.speculative import build_spec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BLOCKS = 24
"""The server's ``--num-gpu-blocks-override`` (the null block included)."""
PREEMPTIONS = re.compile(r"^vllm:num_preemptions_total(?:\{[^}]*\})? ([\d.e+]+)$", re.M)
FIGURES = [("ttft_mean", "TTFT mean ms"), ("tpot_mean", "TPOT mean ms"), ("output_tokens_per_s", "output tok/s")]


def preemptions(results: Path) -> int:
    """``vllm:num_preemptions_total`` after the run less before it."""
    counts = []
    for name in ("metrics_before.txt", "metrics_after.txt"):
        found = PREEMPTIONS.findall((results / name).read_text())
        if not found:
            raise SystemExit(f"{results / name}: no vllm:num_preemptions_total line")
        counts.append(sum(float(value) for value in found))
    return round(counts[1] - counts[0])


def chunked(workload: Workload, length: float) -> Workload:
    """The control: each output as the simulator counted it before, in chunks of T tokens, one token of cache each."""
    return workload._replace(lengths=[(p, 1 + math.ceil((o - 1) / length)) for p, o in workload.lengths])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=HERE / "results_spec_preempt")
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "serving" / "vllm_cpu_spec_preempt.md")
    args = parser.parse_args()
    (run,) = collect([args.results / f"spec_c8_i1024_o512_kv{BLOCKS}.json"])
    measured_preemptions = preemptions(args.results)
    length = acceptance_length(args.results / "server.log")
    fit = fit_split("tiny-llama", "every-third", [])
    model, target, deployment = served("tiny-llama")
    draft = str(HERE / "models" / "tiny-llama" / "config.json")
    spec = build_spec(model, origin="", kind="hf-config", draft=draft, num_speculative_tokens=K,
                      acceptance_length=length)  # fmt: skip
    replay = replay_for(model, target, deployment, fit.profile, [run], 1)
    cost = StepCost(Stepper(replay.case._replace(speculative=spec), fit.profile))
    pool = replay.limits()._replace(kv_blocks=BLOCKS - NULL_BLOCKS, prefix_caching=False, caches_preempted_blocks=False)
    workload = workload_of(run)
    ways = {
        "simulated (T a step, lookahead slots)": (
            workload,
            pool._replace(acceptance_length=length, lookahead_tokens=K),
        ),
        "without the lookahead slots": (workload, pool._replace(acceptance_length=length)),
        "control: output in chunks of T, a token of cache each (before)": (chunked(workload, length), pool),
    }
    rows = []
    for label, (load, limits) in ways.items():
        sim, times = simulate(load, limits, cost, request_overhead_s=fit.profile.request_overhead_s)
        figures = figures_of(sim)
        if label.startswith("control"):  # its outputs are chunks: TPOT and tokens/s over the real tokens
            outputs = [o for _, o in workload.lengths]
            tpot = [(e2e - ttft) / (o - 1) for e2e, ttft, o in zip(times.e2e, times.ttft, outputs, strict=True)]
            figures["tpot_mean"] = 1000 * sum(tpot) / len(tpot)
            figures["output_tokens_per_s"] = sum(outputs) / sim.duration_s
        rows.append((label, sim.preemptions, figures))
    measured = figures_of(run)
    lines = [
        "# Speculative decoding on a small pool: the simulated serving loop against the real vLLM on this CPU",
        "",
        "Commands: `bash benchmarks/vllm_cpu/spec_preempt_run.sh`, then `python benchmarks/vllm_cpu/spec_preempt_eval.py"
        " --results benchmarks/vllm_cpu/results_spec_preempt`.",
        "",
        f"tiny-llama (`benchmarks/vllm_cpu/models`) served by vLLM 0.32 (CPU) drafting for itself (`draft_model`, k ="
        f" {K}; T = {length:.2f}, the server's own mean acceptance length) on {BLOCKS} blocks of 128"
        f" (`--num-gpu-blocks-override {BLOCKS}`, {BLOCKS - NULL_BLOCKS} usable), prefix caching off; `vllm bench serve`"
        f" random 1,024 in / 512 out, {len(workload.lengths)} requests, {run.max_concurrency} users. Measured"
        " preemptions: the server's `vllm:num_preemptions_total` over the run. Nothing here was fitted: the profile is"
        " tiny-llama's plain runs'.",
        "",
        "| | preemptions | " + " | ".join(label for _, label in FIGURES) + " |",
        "| --- | ---: |" + " ---: |" * len(FIGURES),
        f"| measured | {measured_preemptions} | " + " | ".join(f"{measured[k]:,.1f}" for k, _ in FIGURES) + " |",
    ]
    lines += [f"| {label} | {count} | " + " | ".join(f"{figures[k]:,.1f}" for k, _ in FIGURES) + " |"
              for label, count, figures in rows]  # fmt: skip
    lines += [
        "",
        "By hand: near its end a request holds its computed tokens (1,532 at its last step) + 1 + 2k slots, 1,539"
        " tokens, 13 blocks (the drafter's layers share each block: vLLM's log says 3,072 tokens for the 24 blocks);"
        " counted in chunks of T, at most 1,151 computed + 1, 9 blocks. The first comparison gave 10 simulated"
        " preemptions: the simulator then gave an admitted request no lookahead slots, as vLLM 0.21-0.22 do; from"
        " 0.23.0 vLLM gives them at admission (`core.engine.vllm_rule_releases.lookahead_at_admission`, read in the"
        " wheels with this run in view, review 331 #1), so this run is not held out for that rule. Read the preemptions,"
        " not the times: this host has AVX2 only (bf16 matmuls fall back to torch's) and the profile's runs were"
        " measured on another (outputs/serving/vllm_cpu_preempt.md says the same of its runs). One run: the spread"
        " between repeats is not measured.",
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
