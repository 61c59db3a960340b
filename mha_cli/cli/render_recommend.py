"""Rich rendering of ``mha recommend``'s result; imported only when a person reads the report (not ``--json``)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from mha_cli.cli.render import bytes_cell, count_cell, kv_table, memory_table, model_table
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.recommend import RecommendResult


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
            for way in result.ways_out:
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
    replicas = f"; {r.replicas} replicas x {r.sequences_per_replica} sequences" if r.replicas > 1 else ""
    table.caption = f"bounds from the datasheet (bandwidth, dense bf16 FLOP/s){replicas}; real kernels reach 60-80%"
    return table


def alternatives_table(result: RecommendResult) -> Table:
    """One row per variant; short cells so the table reads at 80 columns, sources in the footnote."""
    table = Table(title="Alternatives at this shape", title_justify="left")
    table.add_column("variant")
    table.add_column("KV heads", justify="right")
    table.add_column("B / token", justify="right")
    table.add_column("cache / device", justify="right")
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
            format_bytes(row.kv_bytes_per_device),
        ]
        if result.memory is not None:
            cells.append(f"{row.max_sequences:,}")
        cells.append(row.quality_risk)
        if notes:
            cells.append(row.note)
        table.add_row(*cells, style="bold" if row.is_recommended else None)
        sources.setdefault(row.variant, row.quality_source)
    cited = "; ".join(f"{variant}: {source}" for variant, source in sources.items() if variant != "MHA")
    where = "" if result.memory is None else f", {result.memory.sequences_per_replica} sequences per replica"
    table.caption = f"* recommended; cache / device: one device's share of the batch{where}; quality risk from {cited}"
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
