"""``mha presets``: the public models ``mha kv`` and ``mha verify`` accept by name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.cli.options import JsonOpt
from mha_cli.cli.output import Output
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.presets import get_preset, preset_names
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry


class PresetRow(Record):
    model: ModelSpec
    total_params: int
    bf16_bytes_per_token: int
    bf16_state_bytes_per_seq: int
    """Fixed state per sequence of linear-attention / state-space layers (0 for pure attention models)."""


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
            )
        )
    Output(json).emit(PresetList(presets=rows), render_presets)


def render_presets(console: Console, result: PresetList) -> None:
    from rich.table import Table

    table = Table(title="Model presets (bf16 KV; MLA absorbed)")
    for column in (
        "name",
        "variant",
        "params",
        "d_model",
        "layers",
        "heads/KV",
        "head_dim",
        "window",
        "KV B/token",
        "state/seq",
    ):
        table.add_column(column, justify="left" if column in ("name", "variant") else "right")
    for row in result.presets:
        m = row.model
        window = f"{m.sliding_window:,} ({m.n_local_layers}/{m.n_layers})" if m.sliding_window else "-"
        table.add_row(
            m.name,
            m.variant,
            format_count(row.total_params),
            str(m.d_model),
            str(m.n_layers),
            f"{m.n_heads}/{m.kv_heads}",
            str(m.head_dim),
            window,
            f"{row.bf16_bytes_per_token:,}",
            format_bytes(row.bf16_state_bytes_per_seq) if row.bf16_state_bytes_per_seq else "-",
        )
    console.print(table)


def register(registry: CommandRegistry) -> None:
    registry.add("presets", presets)
