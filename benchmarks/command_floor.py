"""The floor a fast ``mha`` command cannot go below: what its dependencies cost before any of our code runs.

Python's start, the imports of typer, rich and pydantic, one pydantic model validated (pydantic builds its first
schema lazily, and that also loads its plugin machinery), and one rich table printed (rich's console and table
code). ``benchmarks/command_speed.py`` runs this as a command and divides each ``mha`` command's time by it.

``--plot``: the same, and the least a ``--plot`` run adds: matplotlib's figure and Agg canvas imported, and a
two-panel figure with one line each drawn to PNG bytes as ``mha_cli/cli/plot.py`` lays them out.

    python benchmarks/command_floor.py [--plot]
"""

import sys

import pydantic
import typer  # noqa: F401  (its import is part of the floor)
from rich.console import Console
from rich.table import Table


class Row(pydantic.BaseModel):
    name: str
    tokens: int


def main() -> None:
    row = Row.model_validate({"name": "floor", "tokens": 1})
    table = Table("name", "tokens")
    table.add_row(row.name, str(row.tokens))
    Console().print(table)
    if "--plot" in sys.argv[1:]:
        import io

        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        figure = Figure(figsize=(12.8, 4.6), layout="constrained")
        for axes in figure.subplots(1, 2):
            axes.plot([1, 2, 4], [1, 2, 3], label="line")
            axes.legend()
        FigureCanvasAgg(figure).print_png(io.BytesIO())


if __name__ == "__main__":
    main()
