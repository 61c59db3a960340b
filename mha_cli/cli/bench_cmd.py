"""``mha bench``: time one decode step at long context for MHA, GQA, MQA and MLA."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from mha_cli.cli.options import JsonOpt
from mha_cli.core.quantities import format_bytes, parse_token_count
from mha_cli.core.rules.engine import counted

if TYPE_CHECKING:
    from mha_cli.cli.app import CommandRegistry
    from mha_cli.nn.bench import BenchResult


DEFAULT_SEQ = 8192
DEFAULT_BATCH = 4
BenchSeqOpt = Annotated[
    str | None,
    typer.Option("--seq", help=f"Tokens in the cache: 8192, 8k, 128K. Default: {DEFAULT_SEQ}.", show_default=False),
]
BenchBatchOpt = Annotated[
    int | None, typer.Option("--batch", help=f"Sequences per step. Default: {DEFAULT_BATCH}.", show_default=False)
]


def bench(
    device: Annotated[str, typer.Option("--device", help="auto (cuda when present), cuda or cpu.")] = "auto",
    seq: BenchSeqOpt = None,
    batch: BenchBatchOpt = None,
    d_model: Annotated[int, typer.Option("--d-model", help="Model width.")] = 2048,
    heads: Annotated[int, typer.Option("--heads", help="Query heads.")] = 16,
    head_dim: Annotated[int, typer.Option("--head-dim", help="Width of one head.")] = 128,
    kv_heads: Annotated[int, typer.Option("--kv-heads", help="KV heads of the GQA row.")] = 4,
    kv_lora_rank: Annotated[
        int | None, typer.Option("--kv-lora-rank", help="MLA latent width (default 4 x head-dim).", show_default=False)
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option("--dtype", help="fp32, fp16 or bf16 (default: bf16 on cuda, fp32 on cpu).", show_default=False),
    ] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="Untimed steps first.")] = 3,
    reps: Annotated[int, typer.Option("--reps", help="Timed steps; the median is reported.")] = 10,
    json: JsonOpt = False,
) -> None:
    """Time one decode step (one new token, full cache) of each attention variant on this device."""
    seq_len = DEFAULT_SEQ if seq is None else parse_token_count(seq)
    batch = DEFAULT_BATCH if batch is None else batch
    from mha_cli.cli.output import Output
    from mha_cli.nn.bench import run_decode_bench  # torch is imported here, only for this command

    result = run_decode_bench(
        device=device, seq_len=seq_len, batch=batch, d_model=d_model, n_heads=heads, head_dim=head_dim,
        gqa_kv_heads=kv_heads, kv_lora_rank=kv_lora_rank, dtype=dtype, warmup=warmup, reps=reps,
    )  # fmt: skip
    Output(json).emit(result, render_bench)


COLUMNS = (
    ("variant", "left"), ("KV\nheads", "right"), ("cache\nB/token", "right"), ("read\nper step", "right"),
    ("median\nms", "right"), ("speedup\nvs MHA", "right"), ("bytes\nvs MHA", "right"), ("GB/s", "right"),
    ("SDPA\nbackend", "left"),
)  # fmt: skip


def render_bench(console: Console, result: BenchResult) -> None:
    from rich import box

    title = (
        f"One decode step at {result.seq_len:,} tokens x batch {result.batch} on {result.device_name}"
        f" ({result.dtype}, torch {result.torch_version})"
    )
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False
    )
    for name, justify in COLUMNS:
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in result.rows:
        table.add_row(
            row.label, str(row.n_kv_heads), f"{row.cache_bytes_per_token:,}", format_bytes(row.bytes_read),
            f"{row.median_ms:.3f}", f"{row.speedup_vs_mha:.2f}x", f"{row.bytes_vs_mha:.3f}",
            f"{row.effective_gb_per_s:.1f}", re.sub(r" \(\w+\)", "", row.sdpa_backend),  # the device is in the title
        )  # fmt: skip
    console.print(table)
    console.print(
        f"[dim]d_model {result.d_model}, {result.n_heads} heads x {result.head_dim}; MLA latent"
        f" {result.mla_kv_lora_rank} + rope {result.mla_rope_dim}; median of {result.reps} after"
        f" {counted(result.warmup, 'warm-up step')}. Bytes read = layer weights + the whole cache.[/dim]"
    )


def register(registry: CommandRegistry) -> None:
    registry.add("bench", bench)
