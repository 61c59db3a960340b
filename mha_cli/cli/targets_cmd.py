"""``mha targets``: the hardware database with its sources."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mha_cli.cli.options import JsonOpt
from mha_cli.cli.output import Output
from mha_cli.core.record import Record
from mha_cli.core.targets import ALIASES, ResolvedTarget, Target, load_targets, resolve_target

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry


class TargetList(Record):
    targets: list[Target]
    aliases: dict[str, str]
    resolved: ResolvedTarget | None = None
    """Set when one target was asked for: the row, the device count (8xh100) and the alias used."""


def targets(
    name: Annotated[str | None, typer.Argument(help="Show one target (id or alias) with its source.")] = None,
    json: JsonOpt = False,
) -> None:
    """List the deployment targets: memory, bandwidth, dense TFLOP/s, and where each figure comes from."""
    if name:
        resolved = resolve_target(name)
        result = TargetList(targets=[resolved.target], aliases=ALIASES, resolved=resolved)
        Output(json).emit(result, render_one)
    else:
        Output(json).emit(TargetList(targets=list(load_targets().values()), aliases=ALIASES), render_targets)


def render_targets(console: Console, result: TargetList) -> None:
    from rich.table import Table

    table = Table(title="Deployment targets (dense TFLOP/s; ! = a figure flagged uncertain, see `mha targets ID`)")
    for column, justify in (
        ("id", "left"),
        ("name", "left"),
        ("memory GB", "right"),
        ("GB/s", "right"),
        ("bf16 TFLOP/s", "right"),
        ("fp8 TFLOP/s", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for t in result.targets:
        fp8 = f"{t.fp8_tflops_dense:g}" if t.fp8_tflops_dense else "-"
        table.add_row(
            t.id + (" !" if t.uncertain else ""),
            t.name,
            f"{t.memory_gb:g}",
            f"{t.memory_bandwidth_gbs:g}",
            f"{t.bf16_tflops_dense:g}",
            fp8,
        )
    console.print(table)
    aliases = ", ".join(f"{alias} -> {target}" for alias, target in result.aliases.items())
    console.print(f"[dim]aliases: {aliases}; prefix a count for several devices: 8xh100[/dim]")


def render_one(console: Console, result: TargetList) -> None:
    assert result.resolved is not None
    resolved, t = result.resolved, result.resolved.target
    if resolved.alias_note:
        console.print(f"[dim]{resolved.alias_note}[/dim]")
    for field, value in t.model_dump().items():
        console.print(f"[bold]{field}[/bold]: {value}")
    if resolved.n_devices > 1:
        n = resolved.n_devices
        console.print(f"[bold]{n} devices[/bold]: {n * t.memory_gb:g} GB, {n * t.memory_bandwidth_gbs:g} GB/s,"
                      f" {n * t.bf16_tflops_dense:g} dense bf16 TFLOP/s in all")  # fmt: skip


def register(registry: CommandRegistry) -> None:
    registry.add("targets", targets)
