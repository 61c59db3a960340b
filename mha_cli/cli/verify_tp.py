"""``mha verify SOURCE --tp N`` with N > 1: run N ranks on torch.distributed and render their report.

The command module (``verify_cmd``) hands over here when the deployment's tensor-parallel degree is
above 1; ``mha_cli.parallel`` does the work. Exit codes as ``mha verify``: 1 when a check fails or a
rank fails or hangs (one line, every rank killed), 2 bad input (a tp that does not split the model,
N > 1 on fewer GPUs than N), 3 out of memory on a rank.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from mha_cli.cli.output import Output
from mha_cli.core.errors import EXIT_CHECK_FAILED, BadInputError
from mha_cli.core.memory import resolve_tp
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import ModelSource
from mha_cli.core.targets import resolve_target

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.parallel.report import TpVerifyReport


def deployment_tp(deployment: DeploymentSpec) -> int:
    """The tensor-parallel degree verify runs: --tp, else the config's tp, else the target's device count."""
    target = resolve_target(deployment.target) if deployment.target else None
    return resolve_tp(deployment.tp, target)


def verify_tensor_parallel(
    loaded: ModelSource,
    deployment: DeploymentSpec,
    *,
    tp: int,
    device: str,
    layers: int | None,
    prefill_tokens: int | None,
    reps: int,
    tolerance: float | None,
    timeout_s: float,
    thresholds: dict[str, float | None],
    json: bool,
) -> None:
    """Run ``tp`` ranks, print the report, exit 1 when a check failed."""
    given = [option for option, value in thresholds.items() if value is not None]
    if given:
        raise BadInputError(
            f"{' and '.join(given)} apply to one device's run: drop them with --tp {tp}, or add --tp 1 to check them"
        )
    from mha_cli.parallel.plan import make_tp_job, resolve_tp_device
    from mha_cli.parallel.run import run_tp_jobs

    job = make_tp_job(
        loaded, deployment, tp=tp, device_type=resolve_tp_device(device, tp), layers=layers,
        prefill_tokens=prefill_tokens, reps=reps, tolerance=tolerance, timeout_s=timeout_s,
    )  # fmt: skip
    (report,) = run_tp_jobs([job])
    Output(json).emit(report, render_tp_verify)
    if not report.passed:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


def render_tp_verify(console: Console, report: TpVerifyReport) -> None:
    from rich.markup import escape
    from rich.table import Table

    from mha_cli.core.quantities import format_bytes

    mode = f", {report.mla_cache} MLA cache" if report.mla_cache else ""
    console.print(
        f"[bold]{escape(report.model_name)}[/bold] ({report.variant}{mode}) at tp={report.tp} on {report.device_name}"
        f" [dim]({report.device}, {report.backend}, {report.dtype}, torch {report.torch_version})[/dim]:"
        f" seq {report.seq_len:,} x batch {report.batch}, layers {report.layers_note}"
    )
    table = Table(title="Per rank (bytes exact; calculator's figure shown only where it differs)", title_justify="left")
    for column in ("rank", "q/kv heads", "KV cache (B)", "weights (B)", "decode", "all-reduce"):
        table.add_column(column, justify="left" if column == "rank" else "right")
    for rank in report.ranks:
        table.add_row(
            str(rank.rank), f"{rank.n_heads}/{rank.n_kv_heads}",
            _cell(rank.measured_cache_bytes, rank.predicted_cache_bytes),
            _cell(rank.measured_weight_bytes, rank.predicted_weight_bytes),
            f"{rank.decode_ms:.3f} ms", f"{rank.allreduce_ms:.3f} ms",
        )  # fmt: skip
    table.add_row(
        "all", "", _cell(report.deployment_cache_bytes, report.deployment_predicted_cache_bytes),
        f"{report.deployment_weight_bytes:,}", "", "", style="bold",
    )  # fmt: skip
    console.print(table)
    console.print(
        f"whole deployment ({report.tp} ranks, replicated parts on every rank): KV cache"
        f" {format_bytes(report.deployment_cache_bytes)}, weights {format_bytes(report.deployment_weight_bytes)}"
    )
    console.print(
        f"decode step ({report.n_layers_built} layer(s), context {report.decode_context:,}): {report.decode_ms:.3f} ms,"
        f" all-reduce {report.allreduce_ms:.3f} ms = {report.allreduce_share:.0%} of the step"
        f" [dim](mean over ranks of each rank's median; {report.ranks[0].allreduce_calls} all-reduces per step)[/dim]"
    )
    for name, passed in report.checks.items():
        verdict = "[green]PASS[/green]" if passed else "[red]FAIL[/red]"
        console.print(f"{verdict} {name}: {escape(report.check_details.get(name, ''))}")
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")


def _cell(measured: int, predicted: int) -> str:
    return f"{measured:,}" if measured == predicted else f"[red]{measured:,} (calc {predicted:,})[/red]"
