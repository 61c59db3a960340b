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
from mha_cli.core.errors import EXIT_CHECK_FAILED
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import ModelSource

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from mha_cli.parallel.report import TpNumerics, TpVerifyReport


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
    max_kv_gib: float | None,
    max_decode_ms: float | None,
    timeout_s: float,
    json: bool,
    profile: str | None = None,
    finish: Callable[[TpVerifyReport], TpVerifyReport] = lambda report: report,
) -> None:
    """Run ``tp`` ranks, print the report (after ``finish``, e.g. the hook added), exit 1 when a check failed."""
    from mha_cli.parallel.plan import make_tp_job, resolve_tp_device
    from mha_cli.parallel.run import run_tp_jobs

    job = make_tp_job(
        loaded, deployment, device_type=resolve_tp_device(device, tp), layers=layers, prefill_tokens=prefill_tokens,
        reps=reps, tolerance=tolerance, max_kv_gib=max_kv_gib, max_decode_ms=max_decode_ms, timeout_s=timeout_s,
        profile=profile,
    )  # fmt: skip
    (report,) = run_tp_jobs([job])
    report = finish(report)
    Output(json).emit(report, render_tp_verify)
    if not report.passed:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


def render_tp_verify(console: Console, report: TpVerifyReport) -> None:
    """Single-device verify's report (rank 0's stack, every rank's scopes), then the ranks side by side."""
    from rich.table import Table

    from mha_cli.cli.render_verify import print_verdict, render_verify

    render_verify(console, report, last_line=False)
    title = f"Every rank ({report.backend}): exact bytes; the calculator's shown where it differs"
    table = Table(title=title, title_justify="left")
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
        "all", "", f"{sum(r.measured_cache_bytes for r in report.ranks):,}",
        f"{sum(r.measured_weight_bytes for r in report.ranks):,}", "", "", style="bold",
    )  # fmt: skip
    console.print(table)
    calls = report.ranks[0].allreduce_calls
    console.print(
        f"all-reduce: {report.allreduce_ms:.3f} ms per decode step = {report.allreduce_share:.0%} of the step"
        f" [dim]({calls} all-reduces per step, timed between synchronisations; each rank's median over the timed steps, mean over ranks)[/dim]"
    )
    print_against_one_device(console, "tp", report.tp_numerics)
    print_verdict(console, report)  # the last line, as the single-device and --pp reports end


def _cell(measured: int, predicted: int) -> str:
    return f"{measured:,}" if measured == predicted else f"[red]{measured:,} (calc {predicted:,})[/red]"


def print_against_one_device(console: Console, what: str, numerics: TpNumerics) -> None:
    """``tp vs one device: equal, logits' relative error ...`` (also ``verify --pp``'s stages)."""
    equal = numerics.relative_error <= numerics.tolerance
    verdict = "[green]equal[/green]" if equal else "[red]DIFFERENT[/red]"
    console.print(
        f"{what} vs one device: {verdict}, logits' relative error {numerics.relative_error:.2e}"
        f" (tolerance {numerics.tolerance:g}, {numerics.positions} positions)"
    )
