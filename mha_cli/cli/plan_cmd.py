"""``mha plan SOURCE --target T``: one deployment's TTFT, ITL, end-to-end latency and throughput, with the engine's
memory plan, the roofline bound of each figure and the band the profile carries.

Exit codes: 0 predicted; 2 bad input (an option, a layout the target cannot hold, an engine that would not
start). Pure Python: torch is never imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mha_cli.cli.options import (
    EngineOpt,
    ForceOpt,
    JsonOpt,
    KvDtypeOpt,
    MaxBatchedTokensOpt,
    MaxNumSeqsOpt,
    ProfileOpt,
    UtilisationOpt,
    WeightDtypeOpt,
)  # fmt: skip
from mha_cli.cli.output import Output
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.errors import BadInputError
from mha_cli.core.sources import load_source

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry
    from mha_cli.core.cost.plan import ServingPlan

MAX_TOKENS = 1 << 24
MAX_CONCURRENCY = 1 << 20


def _count(value: int, what: str, high: int) -> int:
    if not 1 <= value <= high:
        raise BadInputError(f"--{what} {value}: give 1 to {high:,}")
    return value


def plan(
    source: Annotated[str, typer.Argument(help="A preset, our config file, or a Hugging Face config.json.")],
    target: Annotated[str, typer.Option("--target", help="Hardware: an id or alias, or N x one (8xh100).")],
    isl: Annotated[int, typer.Option("--isl", help="Prompt tokens per request.")] = 1024,
    osl: Annotated[int, typer.Option("--osl", help="Output tokens per request.")] = 256,
    concurrency: Annotated[
        int, typer.Option("--concurrency", help="Users, each sending its next request when one ends.")
    ] = 1,
    tp: Annotated[
        int | None,
        typer.Option("--tp", help="Tensor-parallel degree (default: the devices pp leaves).", show_default=False),
    ] = None,
    pp: Annotated[int, typer.Option("--pp", help="Pipeline stages.")] = 1,
    engine: EngineOpt = None,
    weight_dtype: WeightDtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    gpu_memory_utilization: UtilisationOpt = None,
    max_num_batched_tokens: MaxBatchedTokensOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    profile: ProfileOpt = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="Also draw latency and throughput against concurrency to this PNG.", show_default=False
        ),
    ] = None,
    force: ForceOpt = False,
    json: JsonOpt = False,
) -> None:
    """Predict TTFT, ITL (time per output token), end-to-end latency and tokens/s of one deployment.

    Replicas = devices / (tp x pp); users spread over them; the engine's memory plan caps the requests each
    runs at once (the rest wait, in TTFT). Times come from the cost model on a device profile: the target's
    shipped prior, or --profile (a `mha calibrate` measurement). Each figure has its roofline bound beside it.
    """
    from mha_cli.core.cost.plan import plan_serving
    from mha_cli.core.cost.priors import datasheet_profile, prior_profile
    from mha_cli.core.cost.store import load_profile
    from mha_cli.core.targets import resolve_target

    _count(isl, "isl", MAX_TOKENS), _count(osl, "osl", MAX_TOKENS)
    _count(concurrency, "concurrency", MAX_CONCURRENCY)
    if plot is not None:
        from mha_cli.cli.plot import check_plot_path

        check_plot_path(plot, force=force)
    resolved = resolve_target(target)
    loaded = load_source(source)
    deployment = merge_deployment(
        loaded.deployment, model=loaded.model, seq_len=isl + osl, target=resolved.spec, weight_dtype=weight_dtype,
        kv_dtype=kv_dtype, engine=engine, gpu_memory_utilization=gpu_memory_utilization,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
    )  # fmt: skip
    device = resolved.target
    chosen = load_profile(profile) if profile is not None else prior_profile(device, deployment.weight_dtype)
    result = plan_serving(
        loaded.model, resolved, deployment, chosen, datasheet_profile(device, deployment.weight_dtype), isl=isl,
        osl=osl, concurrency=concurrency, tp=tp, pp=pp, sweep=plot is not None,
    )  # fmt: skip
    if chosen.target_id not in (None, device.id) or chosen.device != "cuda":
        result.notes.append(
            f"profile {chosen.name} was measured on {chosen.device_name}, not {device.name}: its rates stand in for"
            " the target's"
        )
    if plot is not None:
        from mha_cli.cli.plan_plot import write_plan_plot

        write_plan_plot(plot, result, force=force)
    Output(json).emit(result, render_plan)


def render_plan(console: Console, result: ServingPlan) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    p = result
    d = p.deployment
    console.print(
        f"[bold]{escape(result.model_name)}[/bold] on {d.gpus} x {escape(result.target_id)}: tp {d.tp}, pp {d.pp},"
        f" {d.replicas} replica(s); {result.engine}; {p.isl:,} in / {p.osl:,} out, {p.concurrency} user(s)"
        f" ({p.running_per_replica} running per replica)"
    )
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1))
    for column in ("", "predicted", "band", "roofline bound"):
        table.add_column(column, justify="left" if not column else "right")
    low, high = 1 / (1 + p.uncertainty.relative), 1 + p.uncertainty.relative
    rows = [
        ("TTFT", p.ttft_ms, p.bounds.ttft_ms, "ms"),
        ("ITL (per output token)", p.itl_ms, p.bounds.itl_ms, "ms"),
        ("end to end", p.e2e_ms, p.bounds.e2e_ms, "ms"),
    ]
    for label, value, bound, unit in rows:
        table.add_row(label, f"{value:,.1f} {unit}", f"{value * low:,.1f}-{value * high:,.1f}", f"{bound:,.1f} {unit}")
    table.add_row(
        "output tokens/s, all GPUs", f"{p.output_tokens_per_s:,.0f}", "", f"{p.bounds.output_tokens_per_s:,.0f}"
    )
    table.add_row("output tokens/s per GPU", f"{p.output_tokens_per_s_per_gpu:,.0f}", "", "")
    table.add_row("tokens/s per user", f"{p.tokens_per_s_per_user:,.1f}", "", "")
    console.print(table)
    step = p.decode_step
    console.print(
        f"decode step {step.seconds * 1e3:.2f} ms: memory {step.memory_s * 1e3:.2f}, compute {step.compute_s * 1e3:.2f},"
        f" collectives {step.collective_s * 1e3:.2f}, fixed {step.overhead_s * 1e3:.2f} ({step.kernels:.0f} kernels)"
        f"; prefill {p.prefill_ms:.1f} ms in {p.prefill_chunk_steps} chunk step(s)"
    )
    engine = result.memory.engine
    console.print(
        f"engine: {engine.kv_tokens:,} KV tokens per device, {engine.admitted_per_replica} request(s) of"
        f" {engine.max_model_len:,} tokens at once per replica"
    )
    console.print(f"[dim]profile {escape(p.profile.name)} ({p.profile.kind}): {escape(p.uncertainty.how)}[/dim]")
    for note in p.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")


def register(registry: CommandRegistry) -> None:
    registry.add("plan", plan)
