"""``mha probe SENTENCE``: one attention layer's per-head attention, as terminal heat maps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.style import Style
from rich.table import Table
from rich.text import Text

from mha_cli.cli.options import JsonOpt
from mha_cli.cli.output import Output

if TYPE_CHECKING:
    from mha_cli.cli.app import CommandRegistry
    from mha_cli.nn.probe import ProbeResult

LABEL_WIDTH = 6
COLD, HOT = (20, 24, 48), (255, 196, 0)


def probe(
    sentence: Annotated[str, typer.Argument(help="A short sentence (at most 32 words and punctuation marks).")],
    heads: Annotated[int, typer.Option("--heads", help="Query heads.")] = 4,
    kv_heads: Annotated[
        int | None, typer.Option("--kv-heads", help="Key/value heads (default: from --variant, else --heads).")
    ] = None,
    variant: Annotated[
        str | None, typer.Option("--variant", help="MHA, GQA, MQA or MLA (default: from the head counts).")
    ] = None,
    d_model: Annotated[int, typer.Option("--d-model", help="Model width (head width = d_model / heads).")] = 64,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the embeddings and the layer's weights.")] = 0,
    json: JsonOpt = False,
) -> None:
    """Run one seeded attention layer on a sentence and show each head's attention matrix."""
    from mha_cli.nn.probe import run_probe  # torch is imported here, only for this command

    result = run_probe(sentence, n_heads=heads, n_kv_heads=kv_heads, variant=variant, d_model=d_model, seed=seed)
    Output(json).emit(result, render_probe)


def heat_style(weight: float) -> Style:
    """A background from dark blue (0) to amber (1), text that stays readable on it."""
    r, g, b = (round(c + (h - c) * weight) for c, h in zip(COLD, HOT, strict=True))
    return Style(bgcolor=f"rgb({r},{g},{b})", color="black" if weight > 0.5 else "white")


def heat_table(result: ProbeResult, head: int) -> Table:
    summary = result.summaries[head]
    title = f"head {head}" + (f"  (KV head {summary.kv_head})" if result.n_kv_heads != result.n_heads else "")
    table = Table(title=title, title_justify="left", box=None, padding=(0, 0), show_edge=False)
    table.add_column("", justify="right", style="bold", no_wrap=True)
    for token in result.tokens:
        table.add_column(Text(f" {token[: LABEL_WIDTH - 2]:<{LABEL_WIDTH - 2}}", style="dim"), no_wrap=True)
    for i, row in enumerate(result.heads[head]):
        cells: list[Text | str] = [Text(f"{result.tokens[i][:10]} ")]
        for j, weight in enumerate(row):
            if j > i:
                cells.append(Text("  ·   "[:LABEL_WIDTH], style="dim"))
            else:
                cells.append(Text(f" {weight:.2f} "[:LABEL_WIDTH].ljust(LABEL_WIDTH), style=heat_style(weight)))
        table.add_row(*cells)
    return table


def summary_table(result: ProbeResult) -> Table:
    table = Table(title="Per head (rows 1..N-1; entropy in bits)", title_justify="left")
    for name in ("head", "KV head", "entropy", "uniform", "self", "previous", "first", "pattern"):
        table.add_column(name, justify="left" if name == "pattern" else "right")
    for s in result.summaries:
        table.add_row(
            str(s.head), str(s.kv_head), f"{s.entropy_bits:.2f}", f"{s.uniform_bits:.2f}",
            f"{s.self_mass:.2f}", f"{s.previous_mass:.2f}", f"{s.first_mass:.2f}", s.pattern,
        )  # fmt: skip
    return table


def render_probe(console: Console, result: ProbeResult) -> None:
    console.print(
        f"[bold]{result.variant}[/bold]  {result.n_heads} query heads, {result.n_kv_heads} KV heads,"
        f" head width {result.head_dim}, d_model {result.d_model}, seed {result.seed}"
        "  [dim](seeded weights and embeddings: patterns come from positions and repeated words, not language)[/dim]"
    )
    for head in range(result.n_heads):
        console.print()
        console.print(heat_table(result, head))
    console.print()
    console.print(summary_table(result))
    console.print("[dim]row = query token, column = the token it attends to; each row sums to 1[/dim]")


def register(registry: CommandRegistry) -> None:
    registry.add("probe", probe)
