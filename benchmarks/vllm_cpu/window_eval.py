"""Sliding-window groups in the simulated serving loop against the real vLLM on this CPU: how many requests run at
once on a pool far smaller than the load, none of it fitted.

Each run (``run_grid.py --models gemma3 --only window --kv-blocks N --no-prefix-caching --max-num-batched-tokens
256``) serves the tiny Gemma 3 of ``models/gemma3`` (7 sliding-window layers of window 256, 1 full one: 8 KV cache
groups of one layer) with prompts of six windows. The server's ``vllm:num_requests_running`` gauge was sampled every
0.2 s through the run (``run_grid.sample_running``); its maximum is a floor of what ran at once. The run is simulated
three ways on the server's pool (its blocks less the null block) and settings: with the rule of
``core.engine.window_blocks`` (a windowed group frees the blocks its window left, and vLLM 0.21+ asks at admission
what the start-up sizer gave one request), and two controls that must lose: the old count (a block of tokens in
every group, the pool's blocks over the groups) and vLLM 0.19-0.20's uncapped ask. Times come from the nominal CPU
profile, not fitted on this model: read the requests at once and the preemptions, which the scheduler's order sets.
Writes ``outputs/serving/vllm_cpu_windows.md`` (``--out``).

    python3 benchmarks/vllm_cpu/run_grid.py --models gemma3 --only window --concurrency 8 --no-open-loop \\
        --kv-blocks 200 --no-prefix-caching --max-num-batched-tokens 256     # and --kv-blocks 120
    python benchmarks/vllm_cpu/window_eval.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.engine.window_blocks import NULL_BLOCKS  # the null block, out of the usable pool
from mha_cli.core.serve.bench_results import read_results
from mha_cli.core.serve.fit import nominal_cpu_profile, replay_for, workload_of
from mha_cli.core.serve.simulate import EngineLimits, Simulation, simulate
from mha_cli.core.serve.step_cost import StepCost
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WAYS = ("windowed (the rule)", "old count (control)", "0.19-0.20 ask (control)")


def window_runs(results: Path = HERE / "results") -> list[dict[str, Any]]:
    """The manifest's small-pool runs of a model with sliding-window layers, in file order."""
    manifest = json.loads((results / "manifest.json").read_text())
    return [entry for entry in manifest["runs"] if entry.get("kv_blocks_override") and "running_sampled" in entry]


def ways(limits: EngineLimits, blocks: int) -> dict[str, EngineLimits]:
    """The run's pool of ``blocks`` usable blocks as the rule counts it, and as the two controls do."""
    windowed = limits._replace(group_blocks=blocks)
    groups = len(limits.window_groups)
    old = limits._replace(window_groups=(), group_blocks=0, kv_blocks=blocks // groups)
    return {WAYS[0]: windowed, WAYS[1]: old, WAYS[2]: windowed._replace(caps_window_admission=False)}


def simulated(entry: dict[str, Any]) -> tuple[Any, dict[str, Simulation | str], Any]:
    """(the measured run, each way's simulation or why it refused the run, the engine's plan)."""
    settings = entry["server_settings"]
    source = load_source(str(ROOT / entry["model_config"]))
    deployment = merge_deployment(
        None, model=source.model, seq_len=settings["max_model_len"], target="cpu", engine="vllm",
        max_num_seqs=settings["max_num_seqs"], max_num_batched_tokens=settings["max_num_batched_tokens"],
        block_size=settings["block_size"], kv_cache_memory_bytes=settings["kv_space_gib"] * 2**30,
    )  # fmt: skip
    (run,) = read_results(HERE / "results" / entry["file"])
    profile = nominal_cpu_profile()
    replay = replay_for(source.model, resolve_target("cpu"), deployment, profile, [run], 1)
    limits = replay.limits()
    assert limits.window_groups, f"{entry['file']}: the plan has no windowed group"
    out: dict[str, Simulation | str] = {}
    for name, way in ways(limits, entry["kv_blocks_override"] - NULL_BLOCKS).items():
        try:
            out[name], _ = simulate(workload_of(run), way, StepCost(Stepper(replay.case, profile)))
        except Exception as refused:  # a way that never admits the prompt says so
            out[name] = str(refused)
    return run, out, replay.engine


def section(entry: dict[str, Any]) -> list[str]:
    run, sims, engine = simulated(entry)
    (inp, out), n = run.lengths[0], len(run.lengths)
    kinds = [group.kind for group in engine.groups]
    full = next(group for group in engine.groups if group.kind == "full")
    sliding = next(group for group in engine.groups if group.kind == "sliding")
    lines = [
        f"## `{entry['file']}`", "",
        f"{n} requests of {inp} + {out} tokens, {run.max_concurrency} users, a pool of"
        f" {entry['kv_blocks_override']} blocks of {entry['server_settings']['block_size']}"
        f" ({entry['kv_blocks_override'] - NULL_BLOCKS} usable), step budget"
        f" {entry['server_settings']['max_num_batched_tokens']}. The plan's groups: {kinds.count('full')} full,"
        f" {kinds.count('sliding')} sliding (window {sliding.window}); a request of {inp + out} tokens takes"
        f" {full.blocks_per_request} blocks in the full one, and the start-up sizer gives it"
        f" {sliding.blocks_per_request} in a sliding one.", "",
        "| | requests at once | preemptions | TTFT mean ms | output tok/s |", "| --- | --- | --- | --- | --- |",
        f"| measured | {entry['running_sampled']['max']:.0f} (most of {entry['running_sampled']['samples']} samples)"
        f" | {entry['metrics_delta']['vllm:num_preemptions_total']:.0f} | {run.ttft_ms.mean:,.0f}"
        f" | {run.output_tokens_per_s:,.0f} |",
    ]  # fmt: skip
    for name, sim in sims.items():
        if isinstance(sim, str):
            lines.append(f"| {name} | refused: {sim} | | | |")
        else:
            lines.append(f"| {name} | {sim.max_running} | {sim.preemptions} | {sim.ttft_ms.mean:,.0f}"
                         f" | {sim.output_tokens_per_s:,.0f} |")  # fmt: skip
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "serving" / "vllm_cpu_windows.md")
    args = parser.parse_args()
    entries = window_runs()
    if not entries:
        raise SystemExit("no sampled small-pool runs in benchmarks/vllm_cpu/results: run run_grid.py first")
    first = entries[0]
    lines = [
        "# Sliding-window groups: the simulated serving loop against the real vLLM on this CPU", "",
        "Command: `python benchmarks/vllm_cpu/window_eval.py` (its docstring: the runs, the rule and its two"
        " controls). Nothing here was fitted.", "",
        f"Server: `{first['server_cmd']}`; vLLM {first['versions']['vllm']} (vllm-cpu), torch"
        f" {first['versions']['torch']}, {first['machine']['nproc']} cores. Times: the nominal CPU profile, not"
        " fitted on this model (and other jobs shared the two cores): compare the requests at once and the"
        " preemptions.", "",
    ]  # fmt: skip
    for entry in entries:
        lines += section(entry)
    args.out.write_text("\n".join(lines))
    print(args.out.read_text())


if __name__ == "__main__":
    main()
