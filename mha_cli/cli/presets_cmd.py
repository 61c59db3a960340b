"""``mha presets``: the public models ``mha kv`` and ``mha verify`` accept by name, and the Hugging Face ids each
answers to (``core.preset_ids``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.cli.options import JsonOpt
from mha_cli.cli.output import Output
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.preset_ids import ids_of
from mha_cli.core.presets import get_preset, preset_names
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.shipped_configs import SHIPPED

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry


class PresetRow(Record):
    model: ModelSpec
    total_params: int
    bf16_bytes_per_token: int
    bf16_state_bytes_per_seq: int
    """Fixed state per sequence of linear-attention / state-space layers (0 for pure attention models)."""
    hf_ids: list[str]
    """The Hugging Face ids the preset stands for when their config.json is not cached, its own checkpoint's first."""


class PresetList(Record):
    presets: list[PresetRow]


def presets(json: JsonOpt = False) -> None:
    """List the model presets with their variant, heads, head_dim and bf16 KV bytes per token."""
    rows = []
    for name in preset_names():
        model = get_preset(name)
        kv = kv_footprint(model, seq_len=1)
        rows.append(
            PresetRow(
                model=model,
                total_params=count_params(model).total,
                bf16_bytes_per_token=kv.bytes_per_token,
                bf16_state_bytes_per_seq=kv.state_bytes_per_seq,
                hf_ids=ids_of(name),
            )
        )
    Output(json).emit(PresetList(presets=rows), render_presets)


NARROW_COLUMNS = 100
"""Below this terminal width the table leaves out d_model and head_dim, so names and figures are never cut."""


def render_presets(console: Console, result: PresetList) -> None:
    from rich import box
    from rich.table import Table

    wide = console.width >= NARROW_COLUMNS
    table = Table(
        title="Model presets (bf16 KV; MLA absorbed)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0) if not wide else (0, 1),  # narrow: the box's separator and one space between columns
    )
    columns = ["variant", "params", "d_model", "layers", "heads / KV", "head_dim", "window", "KV B / token", "state"]
    if not wide:
        columns = [c for c in columns if c not in ("d_model", "head_dim")]
    cells_of = [_cells(row) for row in result.presets]
    dropped = [] if wide else ["d_model", "head_dim"]
    for column in NARROW_DROPS:  # trial 406 #12: at 60 columns "36,8…" cut the bytes a token: drop a column instead
        if wide or _width(columns, cells_of) <= console.width:
            break
        columns.remove(column)
        dropped.append(column)
    for column in ["name", *columns]:  # narrow: each column exactly as wide as its longest word, so none is cut
        justify = "left" if column in ("name", "variant") else "right"
        table.add_column(column, justify=justify, width=None if wide else _longest(column, cells_of))  # type: ignore[arg-type]
    for cells in cells_of:
        table.add_row(cells["name"], *(cells[column] for column in columns))
    console.print(table)
    narrow = f"; {', '.join(dropped)}: `mha presets --json` or a wider terminal" if dropped else ""
    console.print(
        "window: sliding-window (or chunk) tokens (local or chunked / all layers); state: fixed state per sequence of linear-attention"
        f" and state-space layers{narrow}. A preset also answers to the Hugging Face ids of its checkpoints"
        " (`mha kv meta-llama/Llama-3.1-8B`; `mha presets --json`: hf_ids) when their config.json is not cached; so"
        f" do {len(SHIPPED)} ids without a preset, and their short names (glm-5.1), from the published config.json mha ships ({', '.join(list(SHIPPED)[:3])},"
        " ...: mha_cli/core/shipped_configs.py)",
        style="dim",
    )


NARROW_DROPS = ("window", "state", "layers", "params", "variant")
"""The columns a terminal too narrow for the rest loses, in this order (the name, heads and bytes a token stay: about
40 columns; review 410 #3)."""


def _cells(row: PresetRow) -> dict[str, str]:
    """One preset's cells, by column."""
    m = row.model
    window = f"{m.layers.sliding_window:,} ({m.n_local_layers}/{m.n_layers})" if m.layers.sliding_window else "-"
    if m.layers.attention_chunk and m.count_layers("chunked"):  # Llama 4: chunks, not a sliding window
        window = f"{m.layers.attention_chunk:,} chunk ({m.count_layers('chunked')}/{m.n_layers})"
    return {
        "name": m.name,
        "variant": m.attention.variant or "",
        "params": format_count(row.total_params),
        "d_model": str(m.d_model),
        "layers": str(m.n_layers),
        "heads / KV": f"{m.attention.n_heads}/{m.attention.n_kv_heads}"
        if m.attention.mla is None
        else f"{m.attention.n_heads}/-",  # MLA: no KV heads, a latent
        "head_dim": str(m.attention.head_dim),
        "window": window,
        "KV B / token": f"{row.bf16_bytes_per_token:,}",
        "state": format_bytes(row.bf16_state_bytes_per_seq) if row.bf16_state_bytes_per_seq else "-",
    }


def _width(columns: list[str], cells_of: list[dict[str, str]]) -> int:
    """The narrow table's width: each column as wide as its longest word, with its padding and the box's separator
    (two characters a column, as rich draws it)."""
    return sum(_longest(column, cells_of) + 2 for column in ["name", *columns])


def _longest(column: str, cells_of: list[dict[str, str]]) -> int:
    """The longest word of ``column``, its header's or a cell's."""
    return max(len(word) for text in [column, *(cells[column] for cells in cells_of)] for word in text.split())


def register(registry: CommandRegistry) -> None:
    registry.add("presets", presets)
