"""Rich rendering of ``mha check``'s result; imported only when a person reads the report (not ``--json``).

Strings that come from the user (model name, path, target, finding messages that quote them) are escaped:
``name: "[/]"`` prints as typed instead of crashing rich's markup parser."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mha_cli.cli.render import ENGINE_TITLES, bytes_cell, count_cell, model_table, print_assumptions
from mha_cli.core.check import CheckResult
from mha_cli.core.rules.engine import counted


def _joined(result: CheckResult) -> str:
    """`` = `` between the parameters and their bytes, or, where the checkpoint headers price other bytes than the
    config counts, words that do not equate them."""
    headers = result.deployment.checkpoint_headers
    if result.weights_from != "config" and headers is not None and headers.total_bytes != headers.config_bytes:
        return " (the config's count); from the checkpoint headers "
    return " = "


def render_check(console: Console, result: CheckResult) -> None:
    title = f"{escape(result.model.name)}  [dim]({result.source_kind}: {escape(result.source)})[/dim]"
    console.print(model_table(result.model, title))
    print_assumptions(console, result.assumptions)
    d = result.deployment
    console.print(
        f"[bold]judged at[/bold]  {d.seq_len:,} tokens ({result.context_from}), batch {d.batch}, KV {d.kv_dtype}"
        + (f", target {escape(d.target)}" if d.target else "")
    )
    print_assumptions(console, result.deployment_warnings, title="warning")
    per_token = (
        f"KV {result.kv.bytes_per_token:,} B per token"
        if result.kv.n_token_layers
        else "no KV cache (attention-free: a fixed state)"
    )
    console.print(
        f"[bold]size[/bold]  {count_cell(result.total_params)} parameters{_joined(result)}"
        f"{bytes_cell(result.weight_bytes)};"
        f" {per_token}, {bytes_cell(result.kv.bytes_per_sequence)} per sequence"
    )
    if result.engine is not None:
        engine = result.engine
        console.print(
            f"[bold]{ENGINE_TITLES[engine.name]} would log[/bold]  "
            + escape("; ".join(engine.log_lines))
            + " [dim](`mha kv` shows the budget line by line)[/dim]"
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
            cells = (escape(finding.id), finding.severity, escape(finding.name), escape(finding.message))
            table.add_row(*cells, style=styles[finding.severity])  # messages quote user strings: never markup
        console.print(table)
    unfit = result.passed and result.memory is not None and not result.memory.fits
    refused = unfit and result.memory is not None and result.memory.engine.refused_outright
    why = (
        "; the engine refuses the deployment whatever its memory, a warning (above): --strict fails on it"
        if refused
        else "; the deployment does not fit the target, a warning (MHA025/MHA026): --strict fails on it"
    )
    console.print(
        f"{verdict_line(result)}: {counted(result.errors, 'hard-rule violation')}, {counted(result.warnings, 'warning')}"
        + (why if unfit else "")
    )


def verdict_line(result: CheckResult) -> str:
    """``passed``, ``FAILED`` (a hard rule) or ``FAILED (--strict)`` (warnings only), styled for rich."""
    if result.passed:
        return "[green]passed[/green]"
    if result.errors == 0:
        return "[bold red]FAILED (--strict)[/bold red]"
    return "[bold red]FAILED[/bold red]"
