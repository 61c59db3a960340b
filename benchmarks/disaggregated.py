"""Published disaggregated-vs-aggregated measurements (``tests/fixtures/disaggregated_published.yaml``) beside what
``mha plan --disaggregated`` predicts for them on the shipped GPU priors (closed form, nothing fitted on these rows).

For each row: one prefill and one decode worker's goodput (requests/s within the row's targets), the aggregated
replica's and the best split's goodput per GPU, their ratio, and the split picked, with the relative error of each
figure the page publishes. A ``kind: worker`` row (wide expert parallelism, one pool measured alone) prices the page's
own worker layout over its nodes at the page's load: a prefill worker's input tokens/s per node at full load, a
decode worker's output tokens/s per node at the page's batch. Two predictions: the closed form (targets read
against means), and, for a row whose targets are percentiles (``slo_percentile``), the simulated loops judged at that percentile: the disaggregated one
(``core.serve.disaggregated``, 1,000 Poisson requests a run) and the aggregated one (``core.serve``), each rate
found by bisection.

    PYTHONPATH=. python benchmarks/disaggregated.py [--out outputs/serving/disaggregated.md]
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

from mha_cli.core.cost.disaggregated import DisaggregatedPlan, plan_disaggregated, pool_times, worker_steps
from mha_cli.core.cost.disaggregated_layouts import WorkerLayout
from mha_cli.core.cost.plan import plan_at_rate, simulate_plan
from mha_cli.core.cost.priors import datasheet_profile, prior_profile
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.safe_yaml import load_yaml_file
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.serve.disaggregated import simulate_split
from mha_cli.core.serve.replica import ClientSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import ResolvedTarget, resolve_target

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "disaggregated_published.yaml"


SIMULATED = 1000
"""Requests a simulated run sends."""
AMPLE = 64
"""Workers of the other pool when one worker's goodput is simulated alone (so that the other pool never binds)."""
HALVINGS = 14


def _setup(row: dict) -> tuple[ModelSpec, ResolvedTarget, DeploymentSpec, tuple[DeviceProfile, DeviceProfile]]:
    loaded = load_source(str(ROOT / row["model"]) if row["model"].endswith(".json") else row["model"])
    target = resolve_target(f"{row['gpus']}x{row['target']}")
    weights = row.get("weight_dtype", "bf16")
    deployment = merge_deployment(loaded.deployment, model=loaded.model, seq_len=row["isl"] + row["osl"],
                                  target=target.spec, weight_dtype=weights)  # fmt: skip
    profiles = (prior_profile(target.target, weights), datasheet_profile(target.target, weights))
    return loaded.model, target, deployment, profiles


DEVICES_PER_NODE = 8
"""GPUs a node of a ``kind: worker`` row holds (the pages' 8 x H100 nodes)."""


def _worker_setup(row: dict) -> tuple[ModelSpec, ResolvedTarget, DeploymentSpec, tuple[DeviceProfile, DeviceProfile]]:
    """A ``kind: worker`` row's model, its nodes as the target, its engine and formats, the engine's prior profile,
    and the page's launch settings: its ``tokens_per_step`` a GPU is the server's --chunked-prefill-size over its
    ``layout`` DP-attention ranks (SGLang gives each rank chunked_prefill_size // dp_size,
    ``core.engine.settings.sglang_dp_attention_chunk``), its ``mem_fraction_static`` the line's
    --mem-fraction-static (SGLang's default reserves 1.5 x the whole server's chunk: nothing is left of 80 GB)."""
    loaded = load_source(row["model"])
    target = resolve_target(f"{row['nodes']}x{DEVICES_PER_NODE}x{row['target']}")
    chunk = None if row.get("tokens_per_step") is None else row["tokens_per_step"] * row["layout"]
    deployment = merge_deployment(loaded.deployment, model=loaded.model, seq_len=row["isl"] + row["osl"],
                                  target=target.spec, weight_dtype=row.get("weight_dtype"), engine=row.get("engine"),
                                  max_num_batched_tokens=chunk,
                                  gpu_memory_utilization=row.get("mem_fraction_static"))  # fmt: skip
    weights, generation = deployment.weight_dtype, deployment.engine_generation
    profiles = (prior_profile(target.target, weights, generation=generation), datasheet_profile(target.target, weights))
    return loaded.model, target, deployment, profiles


def worker_figures(row: dict) -> dict[str, float | str]:
    """A ``kind: worker`` row predicted: its worker (DP attention over ``layout`` GPUs, the experts over them) on its
    nodes; prefill: input tokens/s per node at full load (every rank a step of the prompts its chunk budget holds);
    decode: output tokens/s per node at ``batch`` on every rank and a ``context``-token cache."""
    model, target, deployment, profiles = _worker_setup(row)
    layout = WorkerLayout(1, row["layout"])
    worker = worker_steps(model, target, deployment, profiles, layout, isl=row["isl"], osl=row["osl"])
    found: dict[str, float | str] = {
        "weights_gb_per_gpu": worker.weight_bytes_per_gpu / 1e9,
        "admitted_per_gpu": worker.engine.admitted_per_replica,
    }
    if row["role"] == "prefill":
        per_step = worker.prompts_per_step
        found["prompts_per_step_per_gpu"] = per_step
        found["input_tokens_per_s_per_node"] = (
            layout.dp * per_step * row["isl"] / worker.prefill_seconds(per_step) / row["nodes"]
        )
        if per_step > 1:  # one step of whole prompts: where its time goes
            step = worker.stepper.step(prefill_shape(row["isl"], sequences=per_step))
            found["step_ms"], found["step_collectives_ms"] = step.seconds * 1e3, step.collective_s * 1e3
    else:
        step = worker.stepper.step(decode_shape(row["batch"], row["context"]))
        found["step_ms"] = step.seconds * 1e3
        found["step_collectives_ms"] = step.collective_s * 1e3
        found["output_tokens_per_s_per_node"] = layout.dp * row["batch"] / step.seconds / row["nodes"]
    return found


def _largest_rate(meets: Callable[[float], bool], high: float) -> float:
    """The largest rate in (0, high] that ``meets`` passes (bisection; 0 when none)."""
    low = 0.0
    for _ in range(HALVINGS):
        middle = (low + high) / 2
        low, high = (middle, high) if meets(middle) else (low, middle)
    return low


def simulated_figures(row: dict, plan: DisaggregatedPlan) -> dict[str, float]:
    """The row's goodputs judged at its percentile in the simulated loops: one prefill worker (TTFT only, decode
    ample), one decode worker (TPOT only, prefill ample), the published split, and the aggregated replica of
    ``aggregated_tp`` GPUs."""
    model, target, deployment, profiles = _setup(row)
    q, ttft, tpot = row["slo_percentile"], row["ttft_ms"], row["itl_ms"]
    worker = worker_steps(model, target, deployment, profiles, 1, isl=row["isl"], osl=row["osl"])
    pairing = next(p for p in plan.pairings if (p.prefill_tp, p.prefill_dp, p.decode_tp, p.decode_dp) == (1, 1, 1, 1))
    times = pool_times(worker, worker, pairing.transfer.seconds)

    def split_meets(prefill: int, decode: int, judge_ttft: bool, judge_tpot: bool) -> Callable[[float], bool]:
        def meets(rate: float) -> bool:
            run = simulate_split(times, prefill_workers=prefill, decode_workers=decode, rate=rate, osl=row["osl"],
                                 requests=SIMULATED)  # fmt: skip
            return (not judge_ttft or run.ttft_ms.at(q) <= ttft) and (not judge_tpot or run.tpot_ms.at(q) <= tpot)

        return meets

    prefill_cap = next(p.capacity_rps for p in plan.prefill if (p.tp, p.dp) == (1, 1))
    decode_cap = next(d.capacity_rps for d in plan.decode if (d.tp, d.dp) == (1, 1))
    found = {
        "prefill_worker_rps": _largest_rate(split_meets(1, AMPLE, True, False), prefill_cap),
        "decode_worker_rps": _largest_rate(split_meets(AMPLE, 1, False, True), decode_cap),
    }
    workers = re.fullmatch(r"(\d+)P(\d+)D", row["published"]["split"])
    if workers:
        n_prefill, n_decode = int(workers.group(1)), int(workers.group(2))
        high = min(n_prefill * prefill_cap, n_decode * decode_cap)
        found["disaggregated_rps_per_gpu"] = _largest_rate(split_meets(n_prefill, n_decode, True, True), high) / (
            n_prefill + n_decode
        )
    tp = row.get("aggregated_tp", 1)
    one = target.model_copy(update={"n_devices": tp, "spec": f"{tp}x{target.target.id}"})
    capacity = next(a.capacity_rps for a in plan.aggregated if (a.tp, a.dp) == (tp, 1))

    def aggregated_meets(rate: float) -> bool:
        at = plan_at_rate(model, one, deployment, *profiles, isl=row["isl"], osl=row["osl"], rate=rate, tp=tp)
        run = simulate_plan(at, model, deployment, profiles[0], ClientSpec(num_prompts=SIMULATED)).simulated
        return not run.saturated and run.ttft_ms.at(q) <= ttft and run.tpot_ms.at(q) <= tpot

    found["aggregated_rps_per_gpu"] = _largest_rate(aggregated_meets, capacity) / tp
    if "disaggregated_rps_per_gpu" in found and found["aggregated_rps_per_gpu"] > 0:
        found["ratio"] = found["disaggregated_rps_per_gpu"] / found["aggregated_rps_per_gpu"]
    return found


def predict(row: dict) -> DisaggregatedPlan:
    """The row's deployment searched by ``plan_disaggregated`` on the target's prior profile, in the closed form
    alone (its pick not confirmed in the simulated loop: ``simulated_figures`` runs the loops for a percentile row)."""
    model, target, deployment, profiles = _setup(row)
    return plan_disaggregated(model, target, deployment, profiles, isl=row["isl"], osl=row["osl"],
                              ttft_ms=row.get("ttft_ms"), itl_ms=row.get("itl_ms"), simulate=None)  # fmt: skip


def figures(plan: DisaggregatedPlan, aggregated_tp: int | None = None) -> dict[str, float | str]:
    """The predicted counterparts of the published figures: tp 1 workers (the page's), the aggregated replica of
    ``aggregated_tp`` GPUs when the page names one (else the tool's best), the tool's pick."""
    pick = plan.splits[plan.chosen] if plan.chosen is not None else None
    if aggregated_tp is not None:
        best = next((a for a in plan.aggregated if (a.tp, a.dp) == (aggregated_tp, 1) and a.meets_targets), None)
    else:
        best = plan.aggregated[plan.aggregated_chosen] if plan.aggregated_chosen is not None else None
    found: dict[str, float | str] = {}
    tp1 = next((p for p in plan.pairings if (p.prefill_tp, p.prefill_dp, p.decode_tp, p.decode_dp) == (1, 1, 1, 1)),
               None)  # fmt: skip
    if tp1 is not None:
        found["prefill_worker_rps"] = tp1.prefill_goodput_rps
        found["decode_worker_rps"] = next(d.goodput_rps for d in plan.decode if (d.tp, d.dp) == (1, 1))
    if best is not None:
        found["aggregated_rps_per_gpu"] = best.goodput_rps / best.gpus
    if pick is not None:
        found["disaggregated_rps_per_gpu"] = pick.goodput_rps / pick.gpus
        prefill, decode = (layout.label.replace("tp", "tp ") for layout in (pick.prefill, pick.decode))
        found["split"] = f"{pick.prefill_workers}P{pick.decode_workers}D (prefill {prefill}, decode {decode})"
    if pick is not None and best is not None:
        found["ratio"] = pick.output_tokens_per_s_per_gpu / best.output_tokens_per_s_per_gpu
    return found


def _error(predicted: float | str | None, published: float | str) -> str:
    """predicted / published - 1 for numbers, else '-'."""
    if isinstance(predicted, float) and isinstance(published, int | float):
        return f"{predicted / published - 1:+.0%}"
    return "-"


def _cell(value: float | str | None) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else f"{value:.3g}"


def report(rows: list[dict]) -> str:
    lines = [
        "# Disaggregated prefill/decode: published against predicted",
        "",
        "Generated by `PYTHONPATH=. python benchmarks/disaggregated.py` from `tests/fixtures/disaggregated_published.yaml`",
        "on the shipped GPU priors; nothing here was fitted. Error = predicted / published - 1. Goodput: requests/s within",
        "the row's TTFT / ITL (TPOT) targets. *Closed form*: `mha plan --disaggregated`, targets read against means.",
        f"*Simulated pNN*: the simulated loops ({SIMULATED:,} Poisson requests a run, each rate by bisection) judged at",
        "the page's percentile: disaggregated (`core.serve.disaggregated`; one worker's goodput with the other pool",
        "ample) and aggregated (`core.serve`, the replica the page compares with).",
        "",
        "*Wide expert parallelism* (`kind: worker` rows): one pool's worker as the page ran it (DP attention over its",
        "GPUs, the experts spread over them, several nodes), priced alone at the page's load. mha prices the experts'",
        "all-to-all in bf16 without overlap (`core.dp_attention`), while the page's DeepEP sends fp8 in its low-latency",
        "(decode) mode, overlaps it with compute (two-batch overlap) and, in its normal (prefill) mode, sends a token",
        "over the network once a node (then over NVLink), where mha sends each remote GPU its copy: the all-to-all is",
        "most of each predicted step (`step_collectives_ms` of `step_ms`). Left out: vLLM's 'Large Scale Serving: DeepSeek @ 2.2k tok/s/H200",
        "with Wide-EP' (https://blog.vllm.ai/2025/12/17/large-scale-serving.html) states no prompt or output length and",
        "no layout in its text (its figures are images).",
        "",
    ]
    for row in rows:
        if row.get("kind") == "worker":
            lines += _worker_section(row)
            continue
        plan = predict(row)
        found = figures(plan, row.get("aggregated_tp"))
        lines += [f"## {row['id']}", "", f"Source: [{row['source']}]({row['url']}); {row['system']}.", "",
                  f"{row['gpus']} x {row['target']}, {row['isl']} in / {row['osl']} out, weights {row.get('weight_dtype', 'bf16')},"
                  f" targets: TTFT {row.get('ttft_ms', '-')} ms, ITL {row.get('itl_ms', '-')} ms.", ""]  # fmt: skip
        lines += [f"Assumed: {'; '.join(row['assumed'])}.", ""]
        simulated = simulated_figures(row, plan) if "slo_percentile" in row else {}
        label = f"simulated p{row['slo_percentile']:g}" if simulated else None
        lines += ["| figure | published | closed form | error |" + (f" {label} | error |" if label else ""),
                  "| --- | ---: | ---: | ---: |" + (" ---: | ---: |" if label else "")]  # fmt: skip
        for key, published in row["published"].items():
            cells = [_cell(published)]
            for source in (found, simulated) if label else (found,):
                predicted = source.get(key)
                cells += [_cell(predicted), _error(predicted, published)]
            lines.append(f"| {key} | " + " | ".join(cells) + " |")
        lines += ["", f"`mha plan --disaggregated`'s own verdict (its best aggregated layout): {plan.winner}: {plan.verdict}.",
                  ""]  # fmt: skip
    return "\n".join(lines)


def _worker_section(row: dict) -> list[str]:
    found = worker_figures(row)
    lines = [f"## {row['id']}", "", f"Source: [{row['source']}]({row['url']}); {row['system']}.", "",
             f"One {row['role']} worker: DP attention over {row['layout']} x {row['target']} ({row['nodes']} nodes of"
             f" {DEVICES_PER_NODE}), the experts over all of them; {row['isl']} in / {row['osl']} out, weights"
             f" {row['weight_dtype']}, engine {row['engine']}"
             + (f"; {row['batch']} running a GPU at a {row['context']:,}-token cache." if row["role"] == "decode" else "."),
             "", f"Assumed: {'; '.join(row['assumed'])}.", "", "| figure | published | predicted | error |",
             "| --- | ---: | ---: | ---: |"]  # fmt: skip
    for key, published in row["published"].items():
        lines.append(f"| {key} | {_cell(published)} | {_cell(found.get(key))} | {_error(found.get(key), published)} |")
    shown = ", ".join(f"{key} {_cell(value)}" for key, value in found.items() if key not in row["published"])
    return [*lines, "", f"Beside it (predicted, nothing published): {shown}.", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "serving" / "disaggregated.md")
    args = parser.parse_args()
    rows = load_yaml_file(FIXTURE)
    text = report(rows)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
