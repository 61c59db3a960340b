"""``mha check FILE``: lint an existing design with the configurator's rules.

Exit codes: 0 when no hard rule is broken (warnings allowed unless ``--strict``); 1 when a hard
rule is broken (or, with ``--strict``, on any warning); 2 for bad input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from mha_cli.cli.options import BatchOpt, JsonOpt, KvDtypeOpt, SeqOpt, TargetOpt, TpOpt, WeightDtypeOpt
from mha_cli.cli.output import Output
from mha_cli.cli.render import bytes_cell, count_cell, model_table, print_assumptions
from mha_cli.core.check import CheckResult, check_design
from mha_cli.core.errors import EXIT_CHECK_FAILED
from mha_cli.core.rules.engine import counted

if TYPE_CHECKING:
    from mha_cli.cli.app import CommandRegistry

StrictOpt = Annotated[bool, typer.Option("--strict", help=f"Exit {EXIT_CHECK_FAILED} on warnings too.")]


def check(
    source: Annotated[
        str, typer.Argument(help="Our config file, a Hugging Face config.json, or a preset (mha presets).")
    ],
    seq: SeqOpt = None,
    target: TargetOpt = None,
    batch: BatchOpt = None,
    kv_dtype: KvDtypeOpt = None,
    weight_dtype: WeightDtypeOpt = None,
    tp: TpOpt = None,
    strict: StrictOpt = False,
    json: JsonOpt = False,
) -> None:
    """Lint a design: hard-rule violations (exit 1) and warnings, by rule id."""
    result = check_design(
        source, seq_len=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype, tp=tp,
        strict=strict,
    )  # fmt: skip
    Output(json).emit(result, render_check)
    if not result.passed:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


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


def register(registry: CommandRegistry) -> None:
    registry.add("check", check)
