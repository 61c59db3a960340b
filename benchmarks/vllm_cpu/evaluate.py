"""The simulated serving loop against the real vLLM on this CPU: fit on some runs, predict the others.

Reads the runs ``run_grid.py`` saved (``benchmarks/vllm_cpu/results``, with the server's settings from
``manifest.json``), and for two splits fits a profile with ``mha calibrate --from``'s code (``core.serve.fit``) on
the fitted runs, then prints every run measured / simulated / closed form and the median errors of the held-out
ones, simulated and closed form (the floor that must lose):

- ``every-third``: every third run in order of prompt length and load held out (``calibrate --from``'s default);
- ``burst``: fitted on up to 8 users and the open-loop rates, held out at 16, 32 and 64 users (the burst the
  closed form cannot see: every user sends at once and the prompts queue behind each other).

Writes the tables to ``outputs/serving/vllm_cpu_evaluation.md`` (``--out``).

    python benchmarks/vllm_cpu/evaluate.py [--out outputs/serving/vllm_cpu_evaluation.md]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mha_cli.core.deployment import merge_deployment
from mha_cli.core.serve.bench_results import collect
from mha_cli.core.serve.fit import CalibrationFit, calibrate_from, nominal_cpu_profile, replay_for
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIGURES = [("ttft_mean", "TTFT mean"), ("ttft_median", "TTFT median"), ("ttft_p99", "TTFT p99"),
           ("tpot_mean", "TPOT mean"), ("tpot_median", "TPOT median"), ("tpot_p99", "TPOT p99"),
           ("output_tokens_per_s", "output tok/s")]  # fmt: skip


def result_files() -> list[Path]:
    """The runs ``run_grid.py`` recorded in the manifest (the folder holds other results too: start-up figures)."""
    manifest = json.loads((HERE / "results" / "manifest.json").read_text())
    return [HERE / "results" / run["file"] for run in manifest["runs"]]


def served(model_name: str):
    """(model, target, deployment) of ``model_name``'s server as the manifest records its settings."""
    manifest = json.loads((HERE / "results" / "manifest.json").read_text())
    entry = next(run for run in manifest["runs"] if run["model"] == model_name)
    settings = entry["server_settings"]
    source = load_source(str(ROOT / entry["model_config"]))
    deployment = merge_deployment(
        None, model=source.model, seq_len=settings["max_model_len"], target="cpu",
        max_num_seqs=settings["max_num_seqs"], max_num_batched_tokens=settings["max_num_batched_tokens"],
        block_size=settings["block_size"], kv_cache_memory_bytes=settings["kv_space_gib"] * 2**30,
    )  # fmt: skip
    return source.model, resolve_target("cpu"), deployment


def fit_split(model_name: str, name: str, hold_out: list[str]) -> CalibrationFit:
    """Fit ``model_name``'s runs without a shared prefix or a small pool, ``hold_out`` (file-name parts) held out
    (every third when empty)."""
    runs = [
        run for run in collect(result_files())
        if Path(run.path).stem.startswith(f"{model_name}_")
        and "_p" not in Path(run.path).stem  # no shared prefix (prefix_eval.py)
        and "_kv" not in Path(run.path).stem  # no pool cut to preempt (preempt_eval.py)
    ]  # fmt: skip
    model, target, deployment = served(model_name)
    base = nominal_cpu_profile()
    replay = replay_for(model, target, deployment, base, runs, 1)
    return calibrate_from(runs, replay, base, name=f"{model_name}-{name}", hold_out=hold_out)


def table(fit: CalibrationFit) -> list[str]:
    lines = [
        "| run | split | TTFT mean ms (measured / simulated / closed form) | TTFT p99 ms | TPOT mean ms | output tok/s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in sorted(fit.runs, key=lambda row: (row.held_out, row.load)):
        m, s, c = row.measured, row.simulated, row.closed_form
        lines.append(
            f"| {row.load} | {'held out' if row.held_out else 'fitted'} | {m['ttft_mean']:,.0f} / {s['ttft_mean']:,.0f}"
            f" / {c['ttft_mean']:,.0f} | {m['ttft_p99']:,.0f} / {s['ttft_p99']:,.0f} | {m['tpot_mean']:.2f} /"
            f" {s['tpot_mean']:.2f} / {c['tpot_mean']:.2f} | {m['output_tokens_per_s']:,.0f} /"
            f" {s['output_tokens_per_s']:,.0f} / {c['output_tokens_per_s']:,.0f} |"
        )
    lines += ["", "| median abs error | " + " | ".join(label for _, label in FIGURES) + " |",
              "| --- |" + " --- |" * len(FIGURES)]  # fmt: skip
    for label, summary in (("fitted, simulated", fit.fitted), ("held out, simulated", fit.held_out)):
        if summary is not None:
            lines.append(f"| {label} | " + " | ".join(f"{summary.simulated[k]:.0%}" for k, _ in FIGURES) + " |")
    if fit.held_out is not None:
        closed = fit.held_out.closed_form
        cells = [f"{closed[k]:.0%}" if k in closed else "-" for k, _ in FIGURES]
        lines.append("| held out, closed form | " + " | ".join(cells) + " |")
    lines += ["", "Fitted constants: " + "; ".join(f"{k} {v.split(' (')[0]}" for k, v in fit.profile.constants.items())]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "serving" / "vllm_cpu_evaluation.md")
    args = parser.parse_args()
    manifest = json.loads((HERE / "results" / "manifest.json").read_text())
    first = manifest["runs"][0]
    lines = [
        "# The simulated serving loop against the real vLLM on this CPU",
        "",
        "Command: `python benchmarks/vllm_cpu/evaluate.py` (runs: `python benchmarks/vllm_cpu/run_grid.py`).",
        "",
        f"vLLM {first['versions']['vllm']} (vllm-cpu), torch {first['versions']['torch']}, models with dummy weights"
        f" (`benchmarks/vllm_cpu/models`), `{first['server_cmd'].split(' -m ')[1]}`;"
        f" {first['machine']['nproc']} cores ({first['machine']['cpu_model']}). Each run's figures as"
        " `vllm bench serve` reported them; the closed form is the same profile's closed-form model. The runs were"
        " measured while other jobs shared the two cores (tests, other benchmarks): their low-load TTFT tails"
        " (100-500 ms spikes at one user) are that, not vLLM.",
    ]
    splits = [
        ("every-third", [], "every third run held out (calibrate --from's default)"),
        ("burst", ["_c16_", "_c32_", "_c64_"], "fitted on 1-8 users and the rates; 16, 32 and 64 users held out"),
    ]
    for model_name in sorted({run["model"] for run in manifest["runs"]}):
        for name, hold_out, what in splits:
            fit = fit_split(model_name, name, hold_out)
            lines += ["", f"## {model_name}, split `{name}`: {what}", "", *table(fit)]
            print(f"{model_name} {name}: held out {fit.held_out}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
