"""``mha bench``: time one decode step at long context for MHA, GQA, MQA and MLA."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from mha_cli.cli.options import JsonOpt, ProfileOpt
from mha_cli.cli.progress import step_progress
from mha_cli.core.errors import BadInputError
from mha_cli.core.quantities import format_bytes, parse_token_count
from mha_cli.core.rules.engine import counted
from mha_cli.core.torch_inputs import check_buildable_dtype, check_device_option, validate_bench_options

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
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="CPU threads torch runs on (default: torch's own, one per core). On cores shared with other work,"
            " 1 gives steadier times.",
            show_default=False,
        ),
    ] = None,
    profile: ProfileOpt = None,
    json: JsonOpt = False,
) -> None:
    """Time one decode step (one new token, full cache) of each attention variant on this device."""
    try:
        seq_len = DEFAULT_SEQ if seq is None else parse_token_count(seq)
    except BadInputError as exc:  # named, as kv and verify name it
        raise BadInputError(f"--seq: {exc.message}") from None
    batch = DEFAULT_BATCH if batch is None else batch
    # Every check that needs no device runs before torch is imported (seconds): bad input is refused at once.
    check_device_option(device)
    check_buildable_dtype(dtype)
    validate_bench_options(
        seq_len=seq_len, batch=batch, d_model=d_model, n_heads=heads, head_dim=head_dim, gqa_kv_heads=kv_heads,
        kv_lora_rank=kv_lora_rank, rope_dim=None, warmup=warmup, reps=reps, threads=threads,
    )  # fmt: skip
    from mha_cli.cli.output import Output

    if profile is not None:
        from mha_cli.core.cost.store import load_profile

        load_profile(profile)  # refused before torch is imported

    with step_progress("bench", 1 + VARIANTS_TIMED, "importing torch") as on_step:
        from mha_cli.nn.bench import run_decode_bench  # torch is imported here, only for this command

        result = run_decode_bench(
            device=device, seq_len=seq_len, batch=batch, d_model=d_model, n_heads=heads, head_dim=head_dim,
            gqa_kv_heads=kv_heads, kv_lora_rank=kv_lora_rank, dtype=dtype, warmup=warmup, reps=reps, threads=threads,
            profile=profile,
            on_variant=lambda label, done: on_step(f"timing {label}", 1 + done),
        )  # fmt: skip
    Output(json).emit(result, render_bench)


VARIANTS_TIMED = 5
"""Rows ``run_decode_bench`` times: MHA, GQA-k, MQA, MLA absorbed, MLA naive (the progress bar's steps)."""
NOISE_MARK = "~"
"""After a speedup whose interquartile range overlaps MHA's: not distinguishable from 1x in this run."""
BEYOND_MARK = "!"
"""After a speedup far beyond what its bytes allow (``BenchRow.beyond_its_bytes``): MHA's steps were slowed."""
SLOWER_MARK = "<"
"""After a ratio under 1 beyond the noise though the row reads fewer bytes (``BenchRow.slower_reading_less``)."""
COLUMNS = (
    ("variant", "left"), ("KV\nheads", "right"), ("cache\nB/token", "right"), ("read\nper step", "right"),
    ("median\nms", "right"), ("IQR\nms", "right"), ("speedup\nvs MHA", "right"), ("bytes\nvs MHA", "right"),
    ("GB/s", "right"),
)  # fmt: skip


def render_bench(console: Console, result: BenchResult) -> None:
    from rich import box
    from rich.markup import escape

    title = (
        f"One decode step at {result.seq_len:,} tokens x batch {result.batch} on {result.device_name}"
        f" ({result.dtype}, torch {result.torch_version}{threads_text(result)})"
    )
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False
    )
    for name, justify in COLUMNS:
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in result.rows:
        flags = ((BEYOND_MARK, row.beyond_its_bytes), (SLOWER_MARK, row.slower_reading_less),
                 (NOISE_MARK, row.within_noise))  # fmt: skip
        mark = "".join(sign for sign, up in flags if up)  # every flag up (trial 350 #6: ! hid ~)
        mark = f"[yellow]{mark}[/yellow]" if mark else " "
        table.add_row(
            row.label, str(row.n_kv_heads), f"{row.cache_bytes_per_token:,}", format_bytes(row.bytes_read),
            f"{row.median_ms:.3f}", f"{row.iqr_ms:.3f}", f"{row.speedup_vs_mha:,.2f}x{mark}", f"{row.bytes_vs_mha:.3f}",
            f"{row.effective_gb_per_s:.1f}",
        )  # fmt: skip
    console.print(table)
    console.print(
        f"[dim]d_model {result.d_model}, {result.n_heads} heads x {result.head_dim}; MLA latent"
        f" {result.mla_kv_lora_rank} + rope {result.mla_rope_dim}; median and interquartile range (IQR) of"
        f" {result.reps} after {counted(result.warmup, 'warm-up step')}. Bytes read = layer weights + the whole cache."
        f" SDPA backend: {escape(backends_text(result))}.[/dim]"
    )
    predicted = [row for row in result.rows if row.predicted_ms is not None]
    if predicted:
        ratios = ", ".join(f"{row.label} {row.predicted_ms:.3f} ms (x{row.prediction_ratio:.2f})" for row in predicted)
        console.print(f"[dim]cost model, {escape(result.prediction_profile)}: {ratios}[/dim]")
    else:
        console.print(f"[dim]predicted times: {escape(result.prediction_profile)}[/dim]")
    for warning in result.warnings:
        mark = {"beyond": BEYOND_MARK, "slower": SLOWER_MARK, "threads:": "", "profile:": ""}.get(
            warning.split()[0], NOISE_MARK
        )
        console.print(f"[yellow]{mark + ' ' if mark else ''}warning: {escape(warning)}[/yellow]")


def threads_text(result: BenchResult) -> str:
    """``, 2 threads`` on a CPU (``, 1 thread``), nothing on a GPU."""
    return f", {counted(result.cpu_threads, 'thread')}" if result.device == "cpu" else ""


def backends_text(result: BenchResult) -> str:
    """``flash`` when every row used it, else ``flash; MLA naive: math`` (the device is in the title)."""
    names = {row.label: re.sub(r" \(\w+\)", "", row.sdpa_backend) for row in result.rows}
    common = max(set(names.values()), key=list(names.values()).count)
    others = [f"{label}: {name}" for label, name in names.items() if name != common]
    return "; ".join([common, *others])


def register(registry: CommandRegistry) -> None:
    registry.add("bench", bench)
