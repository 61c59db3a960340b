"""Rich rendering of ``mha check``'s result; imported only when a person reads the report (not ``--json``)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from mha_cli.cli.render import bytes_cell, count_cell, model_table, print_assumptions
from mha_cli.core.check import CheckResult
from mha_cli.core.rules.engine import counted


def render_check(console: Console, result: CheckResult) -> None:
    console.print(model_table(result.model, f"{result.model.name}  [dim]({result.source_kind}: {result.source})[/dim]"))
    print_assumptions(console, result.assumptions)
    d = result.deployment
    console.print(
        f"[bold]judged at[/bold]  {d.seq_len:,} tokens ({result.context_from}), batch {d.batch}, KV {d.kv_dtype}"
        + (f", target {d.target}" if d.target else "")
    )
    console.print(
        f"[bold]size[/bold]  {count_cell(result.total_params)} parameters = {bytes_cell(result.weight_bytes)};"
        f" KV {result.kv.bytes_per_token:,} B per token, {bytes_cell(result.kv.bytes_per_sequence)} per sequence"
    )
    console.print()
    if result.findings:
        table = Table(title="Findings", title_justify="left")
        table.add_column("id")
        table.add_column("severity")
        table.add_column("rule")
        table.add_column("finding")
        styles = {"hard": "bold red", "warning": "yellow", "info": "dim"}
        for finding in result.findings:
            table.add_row(finding.id, finding.severity, finding.name, finding.message, style=styles[finding.severity])
        console.print(table)
    console.print(
        f"{verdict_line(result)}: {counted(result.errors, 'hard-rule violation')}, {counted(result.warnings, 'warning')}"
    )


def verdict_line(result: CheckResult) -> str:
    """``passed``, ``FAILED`` (a hard rule) or ``FAILED (--strict)`` (warnings only), styled for rich."""
    if result.passed:
        return "[green]passed[/green]"
    if result.errors == 0:
        return "[bold red]FAILED (--strict)[/bold red]"
    return "[bold red]FAILED[/bold red]"
