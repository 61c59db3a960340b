"""``mha probe --out FILE.png``: every head's attention matrix as a heat map, titled with the command that made it.

Drawn with matplotlib's Agg backend from the ``ProbeResult`` the table shows (the picture and the JSON are
renderings of the same object) and written whole or not at all (``write_png_atomic``).
"""

from __future__ import annotations

import math
import shlex
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from mha_cli.core.errors import BadInputError, looking_at_output, refuse_standard_stream, shown_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from mha_cli.nn.probe import ProbeResult

MAX_COLUMNS = 4
"""Heat maps per row of the figure."""
PANEL_INCHES = 3.2
CHARACTERS_PER_INCH = 13
"""About how many 9-point title characters fit in an inch."""


def check_png_path(path: Path, *, force: bool) -> None:
    """Refuse, before any work: a name not ending .png, a missing folder, an existing file without --force."""
    refuse_standard_stream(path, "--out", ".png", "--json prints the attention matrices")
    if path.suffix.lower() != ".png":
        raise BadInputError(f"--out {shown_path(path)}: name the file .png (the probe writes a PNG heat map)")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise BadInputError(f"--out {shown_path(path)}: no such folder {shown_path(folder)}")
    with looking_at_output(path):
        if path.is_dir():
            raise BadInputError(f"--out {shown_path(path)} is a folder: give a file name to write")
        if path.exists() and not force:
            raise BadInputError(f"--out {shown_path(path)} exists: pass --force to overwrite it")


def typed_probe_command(argv: list[str]) -> str | None:
    """``argv`` with its program written ``mha`` when it runs ``probe`` (as typed), else None."""
    words = argv[1:]
    return shlex.join(["mha", *words]) if words[:1] == ["probe"] else None


def probe_figure(result: ProbeResult, command: str) -> Figure:
    """One heat map per head (rows: query token, columns: the token attended to), the command as the title."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    colormap = colormaps["magma"].with_extremes(bad="#dddddd")
    n_heads = len(result.heads)
    columns = min(n_heads, MAX_COLUMNS)
    rows = math.ceil(n_heads / columns)
    figure = Figure(figsize=(PANEL_INCHES * columns + 1.0, PANEL_INCHES * rows + 0.9), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False)
    ticks = range(len(result.tokens))
    image = None
    for head, weights in enumerate(result.heads):
        axis = axes[head // columns][head % columns]
        causal = [[w if j <= i else math.nan for j, w in enumerate(row)] for i, row in enumerate(weights)]
        image = axis.imshow(causal, vmin=0.0, vmax=1.0, cmap=colormap)  # the future (NaN) drawn grey
        kv = f" (KV head {result.summaries[head].kv_head})" if result.shares_kv_heads else ""
        axis.set_title(f"head {head}{kv}: {result.summaries[head].pattern}", fontsize=9)
        axis.set_xticks(ticks, result.tokens, rotation=90, fontsize=7)
        axis.set_yticks(ticks, result.tokens, fontsize=7)
    for spare in range(n_heads, rows * columns):
        axes[spare // columns][spare % columns].set_visible(False)
    figure.colorbar(image, ax=axes, shrink=0.8, label="attention weight (row sums to 1)")
    reads = (
        f"{result.n_kv_heads} KV heads"
        if result.n_kv_heads is not None
        else f"one shared latent of rank {result.mla_kv_lora_rank} + RoPE key width {result.mla_rope_dim}"
    )
    shape = (
        f"{result.variant}: {result.n_heads} query heads, {reads}, d_model {result.d_model},"
        f" seed {result.seed} (seeded weights: patterns from positions and repeats, not language)"
    )
    characters = int(figure.get_figwidth() * CHARACTERS_PER_INCH)  # wrap the title to the figure's width
    figure.suptitle("\n".join(textwrap.fill(line, characters) for line in (command, shape)), fontsize=9)
    return figure
