"""``mha targets``: the hardware database with its sources."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mha_cli.cli.options import JsonOpt
from mha_cli.cli.output import Output
from mha_cli.core.record import Record
from mha_cli.core.targets import ALIASES, Target, load_targets, resolve_target

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry


class TargetList(Record):
    targets: list[Target]
    aliases: dict[str, str]


def targets(
    name: Annotated[str | None, typer.Argument(help="Show one target (id or alias) with its source.")] = None,
    json: JsonOpt = False,
) -> None:
    """List the deployment targets: memory, bandwidth, dense TFLOP/s, and where each figure comes from."""
    rows = [resolve_target(name).target] if name else list(load_targets().values())
    Output(json).emit(TargetList(targets=rows, aliases=ALIASES), render_targets if not name else render_one)


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
    t = result.targets[0]
    for field, value in t.model_dump().items():
        console.print(f"[bold]{field}[/bold]: {value}")


def register(registry: CommandRegistry) -> None:
    registry.add("targets", targets)
