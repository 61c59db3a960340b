"""``mha experiment heads|mqa|mla``: the lesson's three experiments, each writing a report, a plot and JSON.

torch is imported inside each command, never at module level (``mha --help`` stays fast).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mha_cli.cli.options import ForceOpt, JsonOpt, named_path
from mha_cli.cli.output import Output
from mha_cli.core.errors import BadInputError
from mha_cli.core.torch_inputs import check_device_option
from mha_cli.experiments.outputs import ExperimentOutputs

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from mha_cli.cli.app import CommandRegistry
    from mha_cli.experiments.heads_models import HeadsResult
    from mha_cli.experiments.mla_models import MlaResult
    from mha_cli.experiments.mqa import MqaResult
    from mha_cli.experiments.outputs import OutputFiles

QuickOpt = Annotated[bool, typer.Option("--quick", help="A seconds-long smoke run (tiny sizes, few steps).")]
DeviceOpt = Annotated[str, typer.Option("--device", help="auto (cuda when present), cuda or cpu.")]
MAX_SEED = 2**31 - 1
"""Largest --seed: the runs add small offsets to it (more seeds, held-out streams), all within torch's range."""
SeedOpt = Annotated[
    int,
    typer.Option(
        "--seed", min=0, max=MAX_SEED, help="First seed for weights and batches (the runs use it and the next ones)."
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Processes training at once, at most the CPU cores this process may use (more only take turns; the run"
        " says when it ran fewer than asked). Default: the cores, at most 2; 1 on CUDA. Results do not depend on it.",
        show_default=False,
    ),
]
OutDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--out-dir",
        parser=named_path("--out-dir"),
        help="Folder for report.md, the PNG and results.json (default: outputs/experiments/NAME/).",
        show_default=False,
    ),
]


def experiment_command(runner: str, render: Callable[[Console, Any], None], summary: str) -> Callable[..., None]:
    """One ``mha experiment NAME`` command: the shared options, then ``runner`` (``module:function``, imported
    only when the command runs: it imports torch) and ``render`` for the result; ``summary`` is its help line."""

    def command(
        quick: QuickOpt = False,
        device: DeviceOpt = "auto",
        seed: SeedOpt = 0,
        out_dir: OutDirOpt = None,
        force: ForceOpt = False,
        json: JsonOpt = False,
        workers: WorkersOpt = None,
    ) -> None:
        module, function = runner.split(":")
        if workers is not None and workers < 1:
            raise BadInputError(f"--workers must be at least 1 (got {workers})")
        check_device_option(device)  # the refusals that need no torch come first: torch takes seconds to import
        outputs = ExperimentOutputs(module.rsplit(".", 1)[-1], out_dir, force=force)
        outputs.check_writable()
        try:
            run = getattr(importlib.import_module(module), function)  # torch is imported here, only for this command
            result = run(quick=quick, seed=seed, device=device, out_dir=out_dir, force=force, workers=workers)
        except BaseException:  # an error, Ctrl-C or SIGTERM: the folder made for the files goes with it
            outputs.remove_made_if_empty()
            raise
        Output(json).emit(result, render)

    command.__doc__ = summary
    return command


def compact_table(title: str) -> Table:
    """A table without vertical rules, so seven columns of exact figures fit 80 columns."""
    from rich import box
    from rich.table import Table

    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), show_edge=False)


def print_smoke_caveat(console: Console, quick: bool, *, shape_only: bool = False) -> None:
    """The --quick caveat: conclusions that are not evidence (heads, mla), or a smaller shape (mqa)."""
    if quick:
        from mha_cli.experiments.common import MQA_QUICK_CAVEAT, SMOKE_CAVEAT

        console.print(f"[bold yellow]{MQA_QUICK_CAVEAT if shape_only else SMOKE_CAVEAT}[/bold yellow]")


def render_heads(console: Console, result: HeadsResult) -> None:
    print_smoke_caveat(console, result.quick)
    seeds = len(result.seeds)
    table = compact_table(f"Held-out gather loss by head count (d_model 64, {seeds} seeds)")
    for name in ("n_heads", "head_dim", "loss (nats)", "seed range", "accuracy", "vs best"):
        table.add_column(name, justify="right")
    worse = result.judgement.worse_than_best
    for point in result.points:
        loss, accuracy = point.eval_loss, point.eval_accuracy
        standing = (
            "best" if point.n_heads == result.judgement.best_heads else "worse" if point.n_heads in worse else "tied"
        )
        table.add_row(
            str(point.n_heads),
            str(point.head_dim),
            f"{loss.mean:.4f}",
            f"{loss.low:.4f}-{loss.high:.4f}",
            f"{accuracy.mean:.3f}",
            standing,
        )
    floor = result.no_attention
    table.add_row(
        "none", "-", f"{floor.eval_loss.mean:.4f}", f"{floor.eval_loss.low:.4f}-{floor.eval_loss.high:.4f}",
        f"{floor.eval_accuracy.mean:.3f}", "control",
    )  # fmt: skip
    table.add_row("chance", "-", f"{result.chance_loss:.4f}", "", f"{result.chance_accuracy:.4f}", "")
    console.print(table)
    smoke = "[yellow](smoke run, not evidence)[/yellow] " if result.quick else ""
    console.print(
        f"held-out loss, [bold]{result.judgement.verdict}[/bold]{' ' + smoke if smoke else ''}: {result.judgement.sentence}"
    )
    print_files(console, result.files)


def render_mqa(console: Console, result: MqaResult) -> None:
    print_smoke_caveat(console, result.quick, shape_only=True)
    table = compact_table(f"Parameters and KV cache at N = {result.settings.seq_len:,}")
    for name in ("variant", "KV\nheads", "params\nmeasured", "params\ncomputed", "KV bytes\nmeasured",
                 "KV bytes\ncomputed", "KV vs\nMHA"):  # fmt: skip
        table.add_column(name, justify="left" if name == "variant" else "right", no_wrap=True)
    for row in result.rows:
        table.add_row(
            row.variant,
            str(row.n_kv_heads),
            f"{row.params_measured:,}",
            f"{row.params_computed:,}",
            f"{row.kv_bytes_measured:,}",
            f"{row.kv_bytes_computed:,}",
            f"{row.kv_fraction_of_mha:.4f}",
        )
    console.print(table)
    verdict = "[green]agree exactly[/green]" if result.all_match else "[bold red]DISAGREE[/bold red]"
    console.print(f"measured and computed figures {verdict}")
    print_files(console, result.files)


def render_mla(console: Console, result: MlaResult) -> None:
    print_smoke_caveat(console, result.quick)
    table = compact_table(f"MLA latent rank vs MHA (validation bits per byte, {len(result.seeds)} seed(s))")
    for name in ("model", "cache vs MHA", "< 1/8", "val bits", "± sd", "vs baseline", "<= +1 bit", "in spread"):
        table.add_column(name, justify="left" if name == "model" else "right")
    one_seed = len(result.seeds) < 2  # no spread: the sd and the seed-spread verdict mean nothing
    for row in result.rows:
        baseline = row.kind == "mha"
        table.add_row(
            row.label,
            f"{row.cache_fraction:.4f}",
            "yes" if row.below_cache_limit else "no",
            f"{row.validation_bits.mean:.3f}",
            "-" if one_seed else f"{row.validation_bits.std:.3f}",
            "" if baseline else f"{row.delta_bits.mean:+.3f}",
            "" if baseline else row.within_quality_limit,
            "" if baseline else ("-" if one_seed else row.within_seed_spread),
        )
    console.print(table)
    floors = ", ".join(f"{f.order}-gram {f.validation_bits:.3f}" for f in result.ngram_bits)
    console.print(f"count-based Kneser-Ney floors: {floors}; chance {result.chance_bits:.3f}")
    smoke = "[yellow](smoke run, not evidence)[/yellow] " if result.quick else ""
    console.print(smoke + result.conclusion)
    for answer in result.answers:
        console.print(f"- {smoke}at the limit [bold]{answer.limit}[/bold]: {answer.sentence}")
    print_files(console, result.files)


def print_files(console: Console, files: OutputFiles) -> None:
    from rich.text import Text

    console.print(Text(f"wrote {files.report}, {files.plot}, {files.results}", style="dim"))


EXPERIMENTS: dict[str, tuple[str, Callable[[Console, Any], None], str]] = {
    "heads": (
        "mha_cli.experiments.heads:run_heads",
        render_heads,
        "Sweep n_heads (1..16) at d_model 64 on a task needing 4 lookups at once: do more heads help, plateau or hurt?",
    ),
    "mqa": (
        "mha_cli.experiments.mqa:run_mqa",
        render_mqa,
        "MHA vs GQA vs MQA: measured parameters and the KV cache at N = 2048 tokens, computed, measured and against"
        " a calculator that ignores GQA.",
    ),
    "mla": (
        "mha_cli.experiments.mla:run_mla",
        render_mla,
        "Sweep MLA's latent rank on Python's docs (3 seeds; n-gram and no-attention floors): smallest r with cache"
        " < 1/8 of MHA's and <= 1 bit worse, and within the seed spread.",
    ),
}
"""Each experiment: its runner (``module:function``), its renderer and its help line."""


def register(registry: CommandRegistry) -> None:
    experiment_app = typer.Typer(
        name="experiment",
        help="Run the lesson's experiments (heads, mqa, mla); each writes a report, a plot and JSON.",
        no_args_is_help=True,
    )
    sub_registry = type(registry)(experiment_app)  # the same guarded registration, on the sub-app
    for name, (runner, render, summary) in EXPERIMENTS.items():
        sub_registry.add(name, experiment_command(runner, render, summary))
    registry.app.add_typer(experiment_app, name="experiment")
