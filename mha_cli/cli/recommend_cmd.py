"""``mha recommend``: a parameter budget, a context and a target in; an attention design out.

Exit codes: 0 with a design (a plan that does not fit the target is flagged, not an error);
1 with ``--fail-if-no-fit`` when it does not fit; 2 for bad input (nothing is written).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from mha_cli.cli.options import BatchOpt, ForceOpt, JsonOpt, KvDtypeOpt, SeqOpt, TargetOpt, TpOpt, WeightDtypeOpt
from mha_cli.cli.output import Output
from mha_cli.cli.render import bytes_cell, count_cell, kv_table, memory_table, model_table
from mha_cli.core.config_io import config_to_yaml, write_text_atomic
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.errors import EXIT_CHECK_FAILED, BadInputError
from mha_cli.core.quantities import format_bytes, format_count, parse_param_count
from mha_cli.core.recommend import PRIORITIES, RecommendRequest, RecommendResult, recommend
from mha_cli.core.schemas import VARIANTS

if TYPE_CHECKING:
    from mha_cli.cli.app import CommandRegistry

ParamsOpt = Annotated[
    str, typer.Option("--params", help="Parameter budget: 7B, 350M, 1.5T (decimal).", show_default=False)
]
PriorityOpt = Annotated[
    str,
    typer.Option("--priority", help="inference (shrink the cache to fit the batch), training, or balanced."),
]
VocabOpt = Annotated[
    int | None, typer.Option("--vocab", help="Vocabulary size (default: 50,257 under 1B, 128,256 from 1B).")
]
DModelOpt = Annotated[int | None, typer.Option("--d-model", help="Fix the width; depth then fills the budget.")]
VariantOpt = Annotated[
    str | None,
    typer.Option(
        "--variant", help="Ask for MHA, GQA, MQA or MLA instead of letting the rules choose.", show_default=False
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", help="Write the design as a config file (YAML) that `mha kv` and `mha verify` read."),
]
FailIfNoFitOpt = Annotated[
    bool,
    typer.Option("--fail-if-no-fit", help=f"Exit {EXIT_CHECK_FAILED} when the plan does not fit the target."),
]


def recommend_command(
    params: ParamsOpt,
    seq: SeqOpt = None,
    target: TargetOpt = None,
    batch: BatchOpt = None,
    kv_dtype: KvDtypeOpt = None,
    weight_dtype: WeightDtypeOpt = None,
    priority: PriorityOpt = "balanced",
    tp: TpOpt = None,
    vocab: VocabOpt = None,
    d_model: DModelOpt = None,
    variant: VariantOpt = None,
    out: OutOpt = None,
    force: ForceOpt = False,
    fail_if_no_fit: FailIfNoFitOpt = False,
    json: JsonOpt = False,
) -> None:
    """Recommend attention for a parameter budget: variant, heads, KV cache, memory plan, rule trace."""
    request = build_request(
        params=params, seq=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
        priority=priority, tp=tp, vocab=vocab, d_model=d_model, variant=variant,
    )  # fmt: skip
    result = recommend(request)
    output = Output(json)
    if result.memory is not None and result.memory.alias_note:
        output.notice(f"target {result.memory.alias_note}")
    if out is not None:
        header = "written by: " + command_line(
            params=params, seq=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
            priority=priority, tp=tp, vocab=vocab, d_model=d_model, variant=variant, out=out,
        )  # fmt: skip
        write_text_atomic(out, config_to_yaml(result.config, header=header), force=force)
        output.notice(f"wrote {out}")
    output.emit(result, render_recommendation)
    if fail_if_no_fit and result.fits is False:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


def build_request(
    *,
    params: str,
    seq: str | None,
    target: str | None,
    batch: int | None,
    kv_dtype: str | None,
    weight_dtype: str | None,
    priority: str,
    tp: int | None,
    vocab: int | None,
    d_model: int | None,
    variant: str | None,
) -> RecommendRequest:
    """Parse and check the options; every problem is one ``BadInputError`` line."""
    budget = parse_param_count(params)
    deployment = merge_deployment(
        None, seq_len=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype, tp=tp
    )
    if priority not in PRIORITIES:
        raise BadInputError(f"--priority {priority!r}: use one of {', '.join(PRIORITIES)}")
    chosen = variant.upper() if variant else None
    if chosen is not None and chosen not in VARIANTS:
        raise BadInputError(f"--variant {variant!r}: use one of {', '.join(VARIANTS)}")
    for name, value in (("--vocab", vocab), ("--d-model", d_model)):
        if value is not None and value <= 0:
            raise BadInputError(f"{name} {value}: must be a positive integer")
    return RecommendRequest(
        params=budget, seq_len=deployment.seq_len, target=deployment.target, batch=deployment.batch,
        kv_dtype=deployment.kv_dtype, weight_dtype=deployment.weight_dtype, priority=priority,  # type: ignore[arg-type]
        tp=deployment.tp, vocab_size=vocab, d_model=d_model, variant=chosen,  # type: ignore[arg-type]
    )  # fmt: skip


def command_line(**options: object) -> str:
    """The ``mha recommend`` command that reproduces a result, for the header of ``--out``."""
    words = ["mha", "recommend"]
    for name, value in options.items():
        if value is None or (name == "priority" and value == "balanced"):
            continue
        words += [f"--{name.replace('_', '-')}", str(value)]
    return shlex.join(words)


# Rendering --------------------------------------------------------------------------------------


def render_recommendation(console: Console, result: RecommendResult) -> None:
    request = result.request
    where = f" on {request.target}" if request.target else ""
    console.print(
        f"[bold]mha recommend[/bold]  {format_count(request.params)} parameters, {request.seq_len:,} tokens{where},"
        f" batch {request.batch}, priority {request.priority}"
    )
    console.print()
    console.print(model_table(result.config.model, "Recommended architecture"))
    console.print(f"[bold]why {result.model.variant}[/bold]  {result.variant_reason}")
    console.print()
    console.print(params_table(result))
    console.print()
    console.print(kv_table(result.kv))
    if result.memory is not None:
        console.print()
        console.print(memory_table(result.memory))
        if not result.memory.fits:
            what = "weights exceed" if not result.memory.weights_fit else "KV cache of this batch exceeds"
            console.print(f"[bold red]DOES NOT FIT:[/bold red] the {what} the target. Ways out:")
            for way in result.way_out:
                console.print(f"  - {way}")
    if result.roofline is not None:
        console.print()
        console.print(roofline_table(result))
    console.print()
    console.print(alternatives_table(result))
    console.print()
    init = ", ".join(f"{name} {std:.4g}" for name, std in result.init.std.items())
    console.print(f"[bold]init[/bold]  {result.init.scheme}: std {init}")
    console.print(f"[bold]biases[/bold]  q/k/v {result.qkv_bias}, o {result.o_bias}")
    hook = result.testability
    console.print(
        f"[bold]test[/bold]  {hook.task} ({hook.pattern}): {hook.n_layers} layers, {hook.n_heads} heads /"
        f" {hook.n_kv_heads} KV, head_dim {hook.head_dim}, accuracy >= {hook.accuracy_threshold:.0%}"
    )
    console.print()
    console.print(trace_table(result))


def params_table(result: RecommendResult) -> Table:
    p = result.params
    table = Table(title="Parameters", title_justify="left")
    table.add_column("part")
    table.add_column("count", justify="right")
    layers = p.n_dense_mlp_layers + p.n_moe_layers
    table.add_row(f"attention ({layers} layers)", count_cell(p.attention_total))
    table.add_row(f"MLP ({layers} layers)", count_cell(p.mlp_dense_per_layer * p.n_dense_mlp_layers))
    table.add_row("norms", count_cell(p.norms_per_layer * layers + p.final_norm))
    table.add_row("embeddings" + (" (tied)" if result.model.tied_embeddings else ""), count_cell(p.embeddings))
    table.add_row(
        "total",
        f"{count_cell(p.total)}  {result.budget_deviation:+.1%} of {format_count(result.request.params)}",
        style="bold",
    )
    table.add_row(f"weights in {result.request.weight_dtype}", bytes_cell(result.weight_bytes))
    return table


def roofline_table(result: RecommendResult) -> Table:
    r = result.roofline
    assert r is not None
    table = Table(title=f"Roofline lower bounds (tp {r.tp})", title_justify="left")
    table.add_column("phase")
    table.add_column("time", justify="right")
    table.add_column("throughput", justify="right")
    table.add_column("bound")
    table.add_row(
        f"decode step, batch {result.request.batch}, full context",
        f"{r.decode_step_s * 1e3:,.2f} ms",
        f"{r.decode_tokens_per_s:,.0f} tok/s",
        r.decode_bound,
    )
    table.add_row(
        f"prefill, {result.request.seq_len:,} tokens",
        f"{r.prefill_s * 1e3:,.1f} ms",
        f"{r.prefill_tokens_per_s:,.0f} tok/s",
        r.prefill_bound,
    )
    table.caption = "bounds from the datasheet (bandwidth, dense bf16 FLOP/s); real kernels reach 60-80%"
    return table


def alternatives_table(result: RecommendResult) -> Table:
    """One row per variant; short cells so the table reads at 80 columns, sources in the footnote."""
    table = Table(title="Alternatives at this shape", title_justify="left")
    table.add_column("variant")
    table.add_column("KV heads", justify="right")
    table.add_column("B / token", justify="right")
    table.add_column("cache", justify="right")
    if result.memory is not None:
        table.add_column("max batch", justify="right")
    table.add_column("quality risk", overflow="fold")
    notes = any(row.note for row in result.alternatives)
    if notes:
        table.add_column("note", style="dim", overflow="fold")
    sources: dict[str, str] = {}
    for row in result.alternatives:
        cells = [
            f"{row.label}{' *' if row.is_recommended else ''}",
            str(row.n_kv_heads),
            f"{row.bytes_per_token:,}",
            format_bytes(row.total_bytes),
        ]
        if result.memory is not None:
            cells.append(f"{row.max_sequences:,}")
        cells.append(row.quality_risk)
        if notes:
            cells.append(row.note)
        table.add_row(*cells, style="bold" if row.is_recommended else None)
        sources.setdefault(row.variant, row.quality_source)
    cited = "; ".join(f"{variant}: {source}" for variant, source in sources.items() if variant != "MHA")
    table.caption = f"* recommended; cache: this batch on one device; quality risk from {cited}"
    return table


def trace_table(result: RecommendResult) -> Table:
    table = Table(title="Rule trace", title_justify="left")
    table.add_column("id")
    table.add_column("rule")
    table.add_column("decision")
    styles = {"hard": "bold red", "warning": "yellow", "info": None}
    for finding in result.trace:
        table.add_row(finding.id, finding.name, finding.message, style=styles[finding.severity])
    return table


def register(registry: CommandRegistry) -> None:
    registry.add("recommend", recommend_command)
