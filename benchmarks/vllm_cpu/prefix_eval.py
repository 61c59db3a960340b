"""Prefix caching, simulated against the real vLLM on this CPU: runs whose prompts share a prefix, none of them fitted.

The profile is fitted on the model's runs without a shared prefix (``evaluate.py``'s every-third split); every
shared-prefix run (``run_grid.py --prefix-len N``, its server caching prefixes, and the control with the cache
off, ``--no-prefix-caching``) is then predicted two ways: simulated with the prefix cache as the run had it, and the
same simulation blind to the cache (every prompt computed whole: the floor that must lose on the cached runs). Writes ``outputs/serving/vllm_cpu_prefix.md`` (``--out``).

    python benchmarks/vllm_cpu/run_grid.py --models tiny-llama --only long --concurrency 1 4 16 --no-open-loop \\
        --prefix-len 512 [--no-prefix-caching]
    python benchmarks/vllm_cpu/prefix_eval.py
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from evaluate import fit_split, result_files, served

from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.serve.bench_results import MeasuredRun, collect
from mha_cli.core.serve.fit import figures_of, replay_for, workload_of
from mha_cli.core.serve.simulate import simulate
from mha_cli.core.serve.step_cost import StepCost

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIGURES = [("ttft_mean", "TTFT mean"), ("ttft_median", "TTFT median"), ("tpot_mean", "TPOT mean"),
           ("output_tokens_per_s", "output tok/s")]  # fmt: skip


def simulated(run: MeasuredRun, replay, profile, prefix_len: int, caching: bool) -> dict[str, float]:
    """The run simulated with its shared prefix, cached (warm: the benchmark's warm-up requests computed it) or
    not."""
    workload = workload_of(run)._replace(prefix_len=prefix_len if caching else 0, warm_prefix=caching)
    limits = replay.limits()._replace(prefix_caching=caching)
    sim, _ = simulate(workload, limits, StepCost(Stepper(replay.case, profile)),
                      request_overhead_s=profile.request_overhead_s)  # fmt: skip
    return figures_of(sim)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "serving" / "vllm_cpu_prefix.md")
    args = parser.parse_args()
    manifest = {run["file"]: run for run in json.loads((HERE / "results" / "manifest.json").read_text())["runs"]}
    runs = [run for run in collect(result_files()) if manifest.get(Path(run.path).name, {}).get("random_prefix_len")]
    if not runs:
        raise SystemExit("no shared-prefix runs in benchmarks/vllm_cpu/results: run run_grid.py --prefix-len first")
    lines = [
        "# Prefix caching: the simulated serving loop against the real vLLM on this CPU",
        "",
        "Commands: `python benchmarks/vllm_cpu/run_grid.py --models tiny-llama --only long --concurrency 1 4 16"
        " --no-open-loop --prefix-len 512` (and the same with `--no-prefix-caching`), then"
        " `python benchmarks/vllm_cpu/prefix_eval.py`.",
        "",
        "Every prompt is a 512-token prefix shared by the run's requests plus 1,024 tokens of its own (vLLM's random"
        " dataset, `--random-prefix-len 512`), 128 output tokens. The profile is fitted on the model's runs without a"
        " shared prefix (`evaluate.py`, every third held out): none of these runs was fitted on. Per run: measured /"
        " simulated with the cache as the server had it / simulated blind to the cache (every prompt computed whole).",
        "",
        "The runs shared the two cores with other jobs (load average 8-14), the profile's runs did not: absolute figures"
        " carry that; the second table compares what the cache changes, the same prompts with the server's prefix cache"
        " on over off, measured against simulated, which the load largely cancels.",
    ]
    for model_name in sorted({manifest[Path(run.path).name]["model"] for run in runs}):
        fit = fit_split(model_name, "every-third", [])
        own = [run for run in runs if manifest[Path(run.path).name]["model"] == model_name]
        replay = replay_for(*served(model_name), fit.profile, own, 1)
        lines += ["", f"## {model_name}", "",
                  "| run | cache | TTFT mean ms | TTFT median ms | TPOT mean ms | output tok/s |",
                  "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        errors: dict[str, dict[str, list[float]]] = {}
        pairs: dict[int | None, dict[bool, tuple[dict[str, float], dict[str, float]]]] = {}
        for run in sorted(runs, key=lambda r: r.path):
            entry = manifest[Path(run.path).name]
            if entry["model"] != model_name:
                continue
            caching, prefix = entry["prefix_caching"], entry["random_prefix_len"]
            measured = figures_of(run)
            with_cache = simulated(run, replay, fit.profile, prefix, caching)
            blind = simulated(run, replay, fit.profile, prefix, False)
            cells = [f"{measured[k]:,.1f} / {with_cache[k]:,.1f} / {blind[k]:,.1f}" for k, _ in FIGURES]
            lines.append(f"| c{run.max_concurrency} | {'on' if caching else 'off'} | " + " | ".join(cells) + " |")
            pairs.setdefault(run.max_concurrency, {})[caching] = (measured, with_cache)
            for label, figures in (("simulated", with_cache), ("blind to the cache", blind)):
                group = errors.setdefault(f"{label}, cache {'on' if caching else 'off'}", {k: [] for k, _ in FIGURES})
                for k, _ in FIGURES:
                    if measured[k] > 0:
                        group[k].append(abs(figures[k] / measured[k] - 1))
        lines += ["", "| median abs error | " + " | ".join(label for _, label in FIGURES) + " |",
                  "| --- |" + " --- |" * len(FIGURES)]  # fmt: skip
        for label, group in sorted(errors.items()):
            lines.append(f"| {label} | " + " | ".join(f"{statistics.median(group[k]):.0%}" for k, _ in FIGURES) + " |")
        lines += ["", "| users | " + " | ".join(f"{label}, cache on / off" for _, label in FIGURES) + " |",
                  "| --- |" + " --- |" * len(FIGURES)]  # fmt: skip
        for users, pair in sorted(pairs.items(), key=lambda item: item[0] or 0):
            if len(pair) < 2:
                continue
            (m_on, s_on), (m_off, s_off) = pair[True], pair[False]
            cells = [f"{m_on[k] / m_off[k]:.2f} measured, {s_on[k] / s_off[k]:.2f} simulated" for k, _ in FIGURES]
            lines.append(f"| {users} | " + " | ".join(cells) + " |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
