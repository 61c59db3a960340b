"""``--plot FILE.png`` of ``mha kv`` and ``mha recommend``: draws ``core.plot_data``'s figures with matplotlib.

matplotlib is imported only here, and this module only when ``--plot`` is given: the fast commands never pay for
it. The PNG is written whole or not at all, and an existing file is replaced only with ``--force``.
"""

from __future__ import annotations

import io
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from mha_cli.core.config_io import write_bytes_atomic
from mha_cli.core.errors import BadInputError, looking_at_output, refuse_standard_stream, shown_path
from mha_cli.core.plot_data import PlotData, Series

if TYPE_CHECKING:
    import typer

PANEL_INCHES = (6.4, 4.6)
LEGEND_INCHES = 1.4
"""The height of the row under each panel its legend is drawn in: outside the axes, it covers no line."""
LIMIT_COLOUR = "black"
LINE_STYLES = ("-", "--", ":", "-.")
"""A panel's first ten curves are solid, in the ten colours of matplotlib's cycle; the next ten dashed, ..."""
COLOURS_IN_CYCLE = 10


def check_plot_path(path: Path, *, force: bool) -> None:
    """Refuse, before any work, a name that is not ``.png`` and an existing file without ``--force``."""
    refuse_standard_stream(path, "--plot", ".png", "--json prints the numbers")
    with looking_at_output(path):
        if path.is_dir():  # --force would not help, nor would a name's ending: said first (trial 389 #6)
            raise BadInputError(f"--plot {shown_path(path)} is a folder: name a .png file")
        if path.suffix.lower() != ".png":
            raise BadInputError(f"--plot {shown_path(path)}: name the file .png")
        if path.exists() and not force:
            raise BadInputError(f"{shown_path(path)} exists: pass --force to overwrite it")


def invoked_command(ctx: typer.Context) -> str:
    """The command being run, with the arguments and options given on the command line in their long form
    (``mha kv llama-3-8b --target h100 --plot kv.png``): the plot's title."""
    words = ["mha", ctx.info_name or ""]
    for param in ctx.command.params:
        name = param.name or ""
        source = ctx.get_parameter_source(name)
        if source is None or source.name != "COMMANDLINE":
            continue
        value = ctx.params[name]
        if param.param_type_name == "argument":
            words.append(str(value))
        elif getattr(param, "is_flag", False):
            words.append(param.opts[0])
        else:
            words += [param.opts[0], str(value)]
    return shlex.join(words)


def _bytes_unit(largest: float) -> tuple[float, str]:
    for divisor, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if largest >= divisor:
            return divisor, unit
    return 1.0, "B"


def _count_label(value: float) -> str:
    """256, 8K, 1M: powers of two as people write contexts and batches."""
    for divisor, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if value >= divisor and value % divisor == 0:
            return f"{value / divisor:g}{suffix}"
    return f"{value:g}"


def legend_label(series: Series, *, mark_current: bool) -> str:
    """``GQA-8 = MQA at tp 8 (1 KV head per rank; this design)``: the label, its note, and whether it is the design."""
    remarks = [series.note] if series.note else []
    if series.is_current and mark_current:
        remarks.append("this design")
    return series.label + (f" ({'; '.join(remarks)})" if remarks else "")


def _draw_panel(axes, data: PlotData, *, log_y: bool) -> None:  # axes: a matplotlib Axes
    """One panel: a line per series, the limit dashed, the asked point dotted; x in powers of two."""
    from matplotlib.ticker import FuncFormatter

    values = [y for s in data.series for y in s.y] + ([data.limit_bytes] if data.limit_bytes else [])
    divisor, unit = _bytes_unit(max(values, default=1))
    for index, s in enumerate(data.series):
        style = LINE_STYLES[index // COLOURS_IN_CYCLE % len(LINE_STYLES)]
        axes.plot(s.x, [y / divisor for y in s.y], marker="o", markersize=3, linewidth=2.4 if s.is_current else 1.2,
                  linestyle=style, label=legend_label(s, mark_current=len(data.series) > 2))  # fmt: skip
    if data.limit_bytes is not None and data.limit_bytes > 0:
        axes.axhline(data.limit_bytes / divisor, color=LIMIT_COLOUR, linestyle="--", label=data.limit_label)
    elif data.limit_bytes is not None:
        axes.set_title(f"{data.limit_label}: none (the weights fill the device)", fontsize=8, color=LIMIT_COLOUR)
    axes.axvline(data.asked_x, color="grey", linestyle=":", label=f"asked: {data.asked_x:,}")
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: _count_label(value)))
    if log_y:
        axes.set_yscale("log")
    else:
        axes.set_ylim(bottom=0)
    axes.set_xlabel(data.x_label)
    axes.set_ylabel(f"{data.y_label} ({unit})")
    axes.grid(True, which="major", alpha=0.3)


def plot_figure(panels: list[PlotData], *, title: str):  # -> a matplotlib Figure
    """``panels`` side by side (the first with a log byte axis), each with its legend in a row of its own beneath
    it, titled ``title``."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(PANEL_INCHES[0] * len(panels), PANEL_INCHES[1] + LEGEND_INCHES), layout="constrained")
    grid = figure.add_gridspec(2, len(panels), height_ratios=(PANEL_INCHES[1], LEGEND_INCHES))
    for index, data in enumerate(panels):
        axes, below = figure.add_subplot(grid[0, index]), figure.add_subplot(grid[1, index])
        _draw_panel(axes, data, log_y=index == 0)
        below.axis("off")
        handles, labels = axes.get_legend_handles_labels()
        below.legend(handles, labels, loc="upper center", fontsize=7, ncols=2 if len(labels) > 5 else 1,
                     frameon=False)  # fmt: skip
    figure.suptitle(title, fontsize=9, family="monospace")
    return figure


def write_plot(path: Path, panels: list[PlotData], *, title: str, force: bool) -> None:
    """Draw ``panels`` (``plot_figure``) to ``path`` as PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = plot_figure(panels, title=title)
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer, metadata={"Software": None})  # no version stamp: stable bytes
    write_bytes_atomic(path, buffer.getvalue(), force=force)
