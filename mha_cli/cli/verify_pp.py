"""``mha verify SOURCE --pp N``: the stages of a pipeline, one process each, measured and checked (torch).

Exit codes as ``mha verify --tp``: 0 every check passed; 1 a check failed or a stage failed or hung (one line,
every stage stopped); 2 bad input; 3 a stage would not fit. torch is imported inside the command only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from mha_cli.cli.output import Output
from mha_cli.cli.progress import stage_progress
from mha_cli.core.errors import EXIT_CHECK_FAILED
from mha_cli.core.quantities import format_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.core.schemas import DeploymentSpec
    from mha_cli.core.sources import ModelSource
    from mha_cli.parallel.pipeline_report import PpVerifyReport


def verify_pipeline(
    loaded: ModelSource,
    deployment: DeploymentSpec,
    *,
    pp: int,
    tp: int,
    device: str,
    layers: int | None,
    prefill_tokens: int | None,
    reps: int,
    tolerance: float | None,
    timeout_s: float,
    json: bool,
) -> None:
    """Plan the stages, run them on ``pp`` x ``tp`` processes, print the report; exit 1 when a check failed."""
    with stage_progress("verify --pp", ("importing torch", "running the stages")) as on_stage:
        on_stage("importing torch")
        from mha_cli.parallel.pipeline_plan import make_pp_job
        from mha_cli.parallel.plan import resolve_tp_device
        from mha_cli.parallel.run import run_pp_job

        job = make_pp_job(
            loaded, deployment, pp=pp, tp=tp, device_type=resolve_tp_device(device, pp * tp, f"--pp {pp} x --tp {tp}"),
            layers=layers,
            prefill_tokens=prefill_tokens, reps=reps, tolerance=tolerance, timeout_s=timeout_s,
        )  # fmt: skip
        on_stage("running the stages")
        report = run_pp_job(job)
    Output(json).emit(report, render_pipeline)
    if not report.passed:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


def render_pipeline(console: Console, report: PpVerifyReport) -> None:
    from rich.markup import escape
    from rich.table import Table

    console.print(
        f"[bold]{escape(report.model_name)}[/bold] in {report.pp} pipeline stages x tp {report.tp} on {report.device}"
        f" ({report.backend},"
        f" {report.dtype}): {report.n_layers_built} of {report.n_layers_model} layers built, seq {report.seq_len:,}"
        f" x batch {report.batch}"
    )
    table = Table(title="Every stage (=: the bytes equal the calculator's exactly)", title_justify="left")
    for column in ("stage", "layers", "weights", "KV cache", "prefill ms", "decode ms", "send ms"):
        table.add_column(column, justify="left" if column in ("stage", "layers") else "right")
    for s in report.stages:
        parts = "+".join(part for part, held in (("emb", s.embedding), ("head", s.head)) if held)
        layers = f"{s.first_layer}-{s.first_layer + s.n_layers - 1}" + (f" {parts}" if parts else "")
        table.add_row(
            str(s.stage) if report.tp == 1 else f"{s.stage}.{s.tp_rank}", layers, _cell(s.measured_weight_bytes, s.predicted_weight_bytes),
            _cell(s.measured_cache_bytes, s.predicted_cache_bytes), f"{s.prefill_compute_ms:.1f}",
            f"{s.decode_compute_ms:.2f}", f"{s.send_ms:.3f}",
        )  # fmt: skip
    console.print(table)
    console.print(
        f"through the pipeline: prefill of {report.prefill_tokens:,} tokens {report.prefill_ms:.1f} ms, decode step"
        f" {report.decode_ms:.2f} ms"
    )
    from mha_cli.cli.verify_tp import print_against_one_device

    print_against_one_device(console, "stages", report.numerics)
    whole = "; ".join(
        f"stage {s.stage}: {s.n_layers} layers, {format_bytes(s.weight_bytes)} weights, {format_bytes(s.cache_bytes)} cache"
        for s in report.deployment_stages
    )
    rank = f", one rank of tp {report.tp} each" if report.tp > 1 else ""  # a stage's figures are one rank's
    console.print(f"[dim]the whole model in {report.pp} stages (predicted{rank}): {whole}[/dim]")
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")
    from mha_cli.cli.render_verify import print_verdict

    print_verdict(console, report)


def _cell(measured: int, predicted: int) -> str:
    """The measured bytes, marked = when they equal the prediction exactly (both shown in red otherwise)."""
    if measured == predicted:
        return f"{format_bytes(measured)} ="
    return f"[red]{measured:,} B (calc {predicted:,})[/red]"
