"""``mha targets``: the hardware database with its sources."""

from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import SerializerFunctionWrapHandler, model_serializer

from mha_cli.cli.options import JsonOpt
from mha_cli.cli.output import Output, write_stdout
from mha_cli.core.errors import BadInputError, shown
from mha_cli.core.record import Record
from mha_cli.core.targets import ALIASES, ResolvedTarget, Target, load_targets, resolve_target

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from mha_cli.cli.app import CommandRegistry


class TargetList(Record):
    targets: list[Target]
    aliases: dict[str, str]
    resolved: ResolvedTarget | None = None
    """Set when one target was asked for: the row, the device count (8xh100) and the alias used."""

    @model_serializer(mode="wrap")
    def _with_row_marks(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Each row with what the table marks ``!`` and ``~``: ``uncertain`` (a figure the reference table flags)
        and ``device_memory_measured`` (false: an estimate), so a script need not search the notes (trial 340 #5)."""
        data = handler(self)
        rows = list(zip(data["targets"], self.targets, strict=True))
        if self.resolved is not None:  # the one asked for, counted (8xh100): its row again (review 341 #9)
            rows.append((data["resolved"]["target"], self.resolved.target))
        for row, target in rows:
            row.update(uncertain=target.uncertain, device_memory_measured=target.device_memory_measured)
        return data


def targets(
    name: Annotated[
        str | None, typer.Argument(help="Show one target (id, alias or target file) with its source.")
    ] = None,
    schema: Annotated[
        bool, typer.Option("--schema", help="Print the JSON Schema of a target file (--target my-gpu.yaml).")
    ] = False,
    json: JsonOpt = False,
) -> None:
    """List the deployment targets: memory, bandwidth, dense TFLOP/s, and where each figure comes from.

    A device not listed is a YAML file of the same fields: --target my-gpu.yaml (four of it: 4xmy-gpu.yaml);
    --schema prints its fields, with an example.
    """
    if name is not None and not name.strip():  # `mha targets "$GPU"` with it unset: not the whole list
        raise BadInputError("the target name is empty: give an id or alias, or leave it out to list every target")
    if schema:
        if name:
            raise BadInputError(f"--schema prints the target file's fields: give it without {shown(name)}")
        import json as jsonlib

        from mha_cli.core.target_file import target_file_example, target_file_json_schema

        example = target_file_example(load_targets()["h100-sxm"].model_dump())
        write_stdout(jsonlib.dumps(target_file_json_schema(example), indent=2) + "\n")
        return
    if name:
        resolved = resolve_target(name)
        if resolved.n_nodes > 1 and resolved.inter_node_link is None:  # the link plans use, as the table names it
            from mha_cli.core.links import scale_out_link

            resolved = resolved.model_copy(update={"inter_node_link": scale_out_link(resolved.target.id).id})
        result = TargetList(targets=[resolved.target], aliases=ALIASES, resolved=resolved)
        Output(json).emit(result, render_one)
    else:
        Output(json).emit(TargetList(targets=list(load_targets().values()), aliases=ALIASES), render_targets)


def render_targets(console: "Console", result: TargetList) -> None:
    """One row per target, in 80 columns: the id whole (it is what users type), the name without its vendor, the
    rates to the unit."""
    table = _targets_table(result, wide=True)
    # the table's own measure: rich's Measurement.get clamps it to the console's width, which hides the overflow
    wide = table.__rich_measure__(console, console.options).minimum <= console.width
    if not wide:  # under ~70 columns fp4 and link go, rather than cut digits (review 401 #3)
        table = _targets_table(result, wide=False)
    console.print(table)
    rates = (
        "bf16, fp8, fp4: dense TFLOP/s in that format (-: none stated); link: device-to-device GB/s both ways"
        " (NVLink, Infinity Fabric, TPU ICI; -: none beyond PCIe, or one device)"
        if wide
        else "bf16, fp8: dense TFLOP/s in that format (-: none stated; fp4 and the link: a wider terminal, `mha"
        " targets ID` or --json)"
    )
    console.print(
        "[dim]GiB: memory as torch reports it, what plans use (2^30 bytes; ~: an estimate, no public"
        f" measurement found; the vendor's GB: `mha targets ID`); GB/s: memory bandwidth; {rates}; *: the"
        " device has no bf16, the figure is fp16's; !: a figure flagged uncertain (`mha targets ID` shows the source and"
        " notes).[/dim]"
    )
    aliases = ", ".join(f"{alias}={target}" for alias, target in result.aliases.items())  # no space: wraps whole
    console.print(f"[dim]aliases: {aliases}; prefix a count for several devices: 8xh100[/dim]")
    console.print(
        "[dim]a device not listed: a YAML file of the same fields, --target my-gpu.yaml (its fields:"
        " `mha targets --schema`)[/dim]"
    )


def _targets_table(result: TargetList, *, wide: bool) -> "Table":
    """The table of ``render_targets``; ``wide``: with the fp4 and link columns."""
    from rich import box
    from rich.table import Table

    table = Table(
        title="Deployment targets", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True
    )
    table.add_column("id", no_wrap=True, min_width=len(max((t.id for t in result.targets), key=len, default="")) + 2)
    table.add_column("name", ratio=1, min_width=12)
    for column in ("GiB", "GB/s", "bf16", "fp8", *(("fp4", "link") if wide else ())):
        table.add_column(column, justify="right", no_wrap=True)
    for t in result.targets:
        cells = [
            t.id + (" !" if t.uncertain else "") + ("" if t.device_memory_measured else " ~"),
            t.name.removeprefix(t.vendor + " "),
            f"{t.torch_memory_gib:.0f}",
            _figure(t.memory_bandwidth_gbs),
            _figure(t.bf16_tflops_dense) + ("" if t.bf16_native else "*"),
            _figure(t.fp8_tflops_dense),
        ]
        table.add_row(*cells, *((_figure(t.fp4_tflops_dense), _figure(t.interconnect_gbs)) if wide else ()))
    return table


def _figure(value: float | None) -> str:
    """A rate for the table, to the unit (``mha targets ID`` and the JSON give it whole), ``-`` where the target
    has none."""
    return f"{value:.0f}" if value else "-"


def render_one(console: "Console", result: TargetList) -> None:
    assert result.resolved is not None
    resolved, t = result.resolved, result.resolved.target
    if resolved.alias_note:
        console.print(f"[dim]{resolved.alias_note}[/dim]")
    if resolved.node_note:
        console.print(f"[dim]{resolved.node_note}[/dim]")
    if resolved.n_devices > 1:  # trial 307 #8: the count first (8xb300 began "id: b300")
        console.print(
            f"[dim]{resolved.n_devices} x {t.id}: one device's figures, then the {resolved.n_devices}'s[/dim]"
        )
    for field, value in t.model_dump().items():
        console.print(f"[bold]{field}[/bold]: {value}")
    if resolved.n_devices > 1:
        n = resolved.n_devices
        console.print(
            f"[bold]{n} devices[/bold]: {_total(n * t.memory_gb)} GB, {_total(n * t.memory_bandwidth_gbs)} GB/s,"
            f" {n * t.bf16_tflops_dense:,.1f} dense bf16 TFLOP/s in all"
        )  # fmt: skip  (trial 406 #13)
    if resolved.n_nodes > 1:
        from mha_cli.core.links import LINKS, scale_out_basis, scale_out_link

        link = LINKS[resolved.inter_node_link] if resolved.inter_node_link else scale_out_link(t.id)
        console.print(f"[bold]{resolved.n_nodes} nodes[/bold] of {resolved.devices_per_node}, joined by {link.name}"
                      f" ({link.gbs:g} GB/s per GPU each way; {scale_out_basis(t.id)}; {link.source})")  # fmt: skip


def register(registry: "CommandRegistry") -> None:
    registry.add("targets", targets)


def _total(value: float) -> str:
    """A count's total, grouped, whole where it is (1,843.2 GB/s for three Jetson Orins: review 410 #7)."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
