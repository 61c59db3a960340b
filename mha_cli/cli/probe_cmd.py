"""``mha probe SENTENCE``: one attention layer's per-head attention, as terminal heat maps."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.style import Style
from rich.table import Table
from rich.text import Text

from mha_cli.cli.options import ForceOpt, JsonOpt, named_path
from mha_cli.cli.output import Output
from mha_cli.cli.probe_plot import check_png_path, probe_figure, typed_probe_command
from mha_cli.core.errors import BadInputError, shown
from mha_cli.core.torch_inputs import probe_spec, tokenize
from mha_cli.experiments.outputs import write_png_atomic

if TYPE_CHECKING:
    from mha_cli.cli.app import CommandRegistry
    from mha_cli.nn.probe import ProbeResult

CELL_WIDTH = 6
"""Characters per heat-map cell (' 0.42 '); wider when the tokens are longer and the table still fits."""
COMPACT_WIDTH = 4
"""Cell width when whole-token columns would not fit: ' .42', numbered columns."""
MAX_LABEL = 9
"""Longest token shown whole as a column label."""
ROW_LABEL = 12
"""Longest token shown whole as a row label."""
COLD, HOT = (20, 24, 48), (255, 196, 0)


MAX_HEADS = 256
"""Heads drawn at most: one heat map each."""
MAX_D_MODEL = 4096
"""Widest probe layer: four d_model x d_model projections stay a few hundred MB (200,000 would need 640 GB)."""
MAX_SEED = 2**32 - 1


def probe(
    sentence: Annotated[str, typer.Argument(help="A short sentence (at most 32 words and punctuation marks).")],
    heads: Annotated[int, typer.Option("--heads", help="Query heads.")] = 4,
    kv_heads: Annotated[
        int | None,
        typer.Option(
            "--kv-heads",
            help="Key/value heads (default: from --variant, GQA at rule MHA020's count: half of 4 to 16 heads, 4 for"
            " 20 or 28, 8 for 24 and 32-64, 16 for 96-128; else --heads).",
        ),
    ] = None,
    variant: Annotated[
        str | None, typer.Option("--variant", help="MHA, GQA, MQA or MLA (default: from the head counts).")
    ] = None,
    d_model: Annotated[int, typer.Option("--d-model", help="Model width (head width = d_model / heads).")] = 64,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the embeddings and the layer's weights.")] = 0,
    kv_lora_rank: Annotated[
        int | None,
        typer.Option(
            "--kv-lora-rank",
            help="With --variant MLA: the latent's width (default 4 x the head width).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            parser=named_path("--out"),
            help="Also write the heat maps to this .png, titled with the command.",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
    json: JsonOpt = False,
) -> None:
    """Run one seeded attention layer on a sentence and show each head's attention matrix."""
    check_limits(heads=heads, kv_heads=kv_heads, d_model=d_model, seed=seed)
    check_mla_width(heads, d_model, variant)
    tokens = tokenize(sentence)  # the sentence, the shape and --out are refused here, before the torch import
    probe_spec(heads, kv_heads, variant, d_model, vocab=len(set(tokens)), kv_lora_rank=kv_lora_rank)
    if out is not None:
        check_png_path(out, force=force)
    from mha_cli.nn.probe import run_probe  # torch is imported here, only for this command

    result = run_probe(sentence, n_heads=heads, n_kv_heads=kv_heads, variant=variant, d_model=d_model, seed=seed,
                       kv_lora_rank=kv_lora_rank)  # fmt: skip
    output = Output(json)
    if out is not None:
        command = typed_probe_command(sys.argv) or shlex.join(
            ["mha", "probe", sentence, "--heads", str(heads), "--d-model", str(d_model), "--seed", str(seed)]
            + ([] if kv_heads is None else ["--kv-heads", str(kv_heads)])
            + ([] if variant is None else ["--variant", variant])
            + ([] if kv_lora_rank is None else ["--kv-lora-rank", str(kv_lora_rank)])
        )
        write_png_atomic(out, probe_figure(result, command), force=force)
        output.wrote(out)
    output.emit(result, render_probe)


def check_limits(*, heads: int, kv_heads: int | None, d_model: int, seed: int) -> None:
    """Upper bounds before any allocation (lower bounds and shapes are the probe's own messages)."""
    for option, value, most in (("--heads", heads, MAX_HEADS), ("--kv-heads", kv_heads or 1, MAX_HEADS),
                                ("--d-model", d_model, MAX_D_MODEL)):  # fmt: skip
        if value > most:
            raise BadInputError(f"{option} must be at most {most:,} for the probe (got {shown(value)})")
    if not 0 <= seed <= MAX_SEED:
        raise BadInputError(f"--seed must be between 0 and {MAX_SEED:,} (got {shown(seed)})")


def check_mla_width(heads: int, d_model: int, variant: str | None) -> None:
    """MLA's RoPE key is half a head wide and RoPE rotates pairs: refuse a width whose half is odd, in one line."""
    if (variant or "").strip().upper() != "MLA" or d_model % heads:
        return  # other shape problems are the probe's own one-line messages
    head_width = d_model // heads
    if max(head_width // 2, 1) % 2:
        raise BadInputError(
            f"--variant MLA needs a head width (d_model / heads = {head_width}) whose half is even, e.g."
            f" --d-model {4 * heads}: its RoPE key is half a head wide and RoPE rotates pairs of values"
        )


def heat_style(weight: float) -> Style:
    """A background from dark blue (0) to amber (1), text that stays readable on it."""
    r, g, b = (round(c + (h - c) * weight) for c, h in zip(COLD, HOT, strict=True))
    return Style(bgcolor=f"rgb({r},{g},{b})", color="black" if weight > 0.5 else "white")


def plural(count: int, noun: str) -> str:
    """``1 KV head``, ``4 KV heads``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def column_labels(tokens: list[str], console_width: int) -> tuple[list[str], int]:
    """(column labels, cell width): whole tokens (up to ``MAX_LABEL``) when that table fits the console,
    else the tokens' positions in ``COMPACT_WIDTH`` cells, with the positions repeated in the row labels."""
    width = max(CELL_WIDTH, min(max(len(token) for token in tokens), MAX_LABEL) + 1)
    row_label = min(max(len(token) for token in tokens), ROW_LABEL) + 4
    if row_label + width * len(tokens) <= console_width:
        return [token[: width - 1] for token in tokens], width
    return [str(i) for i in range(len(tokens))], COMPACT_WIDTH


def weight_cell(weight: float, width: int) -> str:
    """`` 0.42`` in a normal cell, `` .42`` (``1.0`` for one) in a compact one."""
    if width > COMPACT_WIDTH:
        return f" {weight:.2f}".ljust(width)
    return (" 1.0" if weight >= 0.995 else f" {weight:.2f}"[0] + f"{weight:.2f}"[1:]).ljust(width)


def heat_table(result: ProbeResult, head: int, console_width: int = 80) -> Table:
    summary = result.summaries[head]
    title = f"head {head}" + (f"  (KV head {summary.kv_head})" if result.shares_kv_heads else "")
    table = Table(title=title, title_justify="left", box=None, padding=(0, 0), show_edge=False)
    labels, width = column_labels(result.tokens, console_width)
    numbered = width == COMPACT_WIDTH
    table.add_column("", justify="right", style="bold", no_wrap=True)
    for label in labels:
        table.add_column(Text(f" {label:<{width - 1}}", style="dim"), no_wrap=True, min_width=width)
    for i, row in enumerate(result.heads[head]):
        name = result.tokens[i][:ROW_LABEL]
        cells: list[Text | str] = [Text(f"{i} {name} " if numbered else f"{name} ")]
        for j, weight in enumerate(row):
            if j > i:
                cells.append(Text("  ·".ljust(width), style="dim"))
            else:
                cells.append(Text(weight_cell(weight, width), style=heat_style(weight)))
        table.add_row(*cells)
    return table


def summary_table(result: ProbeResult) -> Table:
    table = Table(
        title=f"Per head (rows 1..{len(result.tokens) - 1}; row 0 has no choice; entropy in bits; self to other:"
        " mean weight)", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
        collapse_padding=True,  # nine columns in 80 characters
    )  # fmt: skip
    reads = "KV head" if result.n_kv_heads is not None else "reads"  # MLA: no KV heads, one shared latent
    for name in ("head", reads, "entropy", "uniform", "self", "previous", "first", "other", "pattern"):
        table.add_column(name, justify="left" if name == "pattern" else "right")
    for s in result.summaries:
        table.add_row(
            str(s.head), "latent" if s.kv_head is None else str(s.kv_head), f"{s.entropy_bits:.2f}", f"{s.uniform_bits:.2f}",
            f"{s.self_mass:.2f}", f"{s.previous_mass:.2f}", f"{s.first_mass:.2f}", f"{s.other_mass:.2f}", s.pattern,
        )  # fmt: skip
    return table


def shape_line(result: ProbeResult) -> str:
    """``GQA  4 query heads, 2 KV heads, head width 16`` or, for MLA, the shared latent and RoPE widths."""
    heads = plural(result.n_heads, "query head")
    if result.mla_kv_lora_rank is not None:
        return (
            f"{heads} reading one shared latent of rank {result.mla_kv_lora_rank} + RoPE key width"
            f" {result.mla_rope_dim} (q/k head width {result.head_dim})"
        )
    rope = "RoPE over the whole head" if result.rope_width else "no RoPE (an odd head width)"
    return f"{heads}, {plural(result.n_kv_heads or 0, 'KV head')}, head width {result.head_dim}, {rope}"


def render_probe(console: Console, result: ProbeResult) -> None:
    console.print(
        f"[bold]{result.variant}[/bold]  {shape_line(result)}, d_model {result.d_model}, seed {result.seed}"
        "  [dim](seeded weights and embeddings: patterns come from positions and repeated words, not language)[/dim]"
    )
    for head in range(result.n_heads):
        console.print()
        console.print(heat_table(result, head, console.width), crop=False)  # a long sentence may run past
    console.print()
    console.print(summary_table(result))
    console.print("[dim]row = query token, column = the token it attends to; each row sums to 1[/dim]")


def register(registry: CommandRegistry) -> None:
    registry.add("probe", probe)
