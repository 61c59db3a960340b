"""Rich rendering of ``mha recommend``'s result; imported only when a person reads the report (not ``--json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mha_cli.cli.render import (
    bytes_cell,
    count_cell,
    kv_table,
    layout_words,
    model_table,
    print_assumptions,
    print_engine_plan,
    print_table,
)
from mha_cli.cli.render_latency import latency_line
from mha_cli.core.cost.profile import band_words, measured_within
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.recommend import RecommendResult
from mha_cli.core.rules.engine import counted

if TYPE_CHECKING:
    from mha_cli.core.memory import MemoryPlan
    from mha_cli.core.ways import WayOut


def render_summary(console: Console, result: RecommendResult) -> None:
    """The short report: the design, why, the cache and memory plan, one line per alternative, the ways out and
    the hook (``--explain``: every table and the rule trace)."""
    request, m = result.request, result.model
    where = f" on {request.target}" if request.target else ""
    console.print(
        f"[bold]mha recommend[/bold]  {format_count(request.params)} parameters, {request.seq_len:,} tokens{where},"
        f" batch {request.batch}, priority {request.priority}"
    )
    print_assumptions(console, result.warnings, title="warning")
    heads = (
        f"{m.n_heads} heads, latent {m.kv_lora_rank} + RoPE {m.qk_rope_head_dim}"
        if m.variant == "MLA"
        else f"{m.n_heads} query / {m.n_kv_heads} KV heads of {m.head_dim}"
    )
    experts = "" if m.experts is None else f", {m.experts} experts of {m.d_ff_expert} (top-{m.top_k})"
    experts += f" + {m.shared_experts} shared" if m.shared_experts else ""
    experts += f", first {counted(m.dense_layers, 'layer')} dense" if m.dense_layers else ""
    mlp = f"d_ff {m.d_ff}" if m.experts is None else "MoE MLP"
    tied = "tied" if m.tied_embeddings else "untied"
    label = next((row.label for row in result.alternatives if row.is_recommended), m.variant)
    console.print(
        f"[bold]design[/bold]  {label}: d_model {m.d_model} x {m.n_layers} layers, {heads}, {mlp}{experts},"
        f" vocab {m.vocab_size:,} ({tied}); {format_count(m.total_params)} parameters"
        f" ({result.budget_deviation:+.1%})"
        + ("" if m.experts is None else f", {format_count(m.active_params)} active")
    )
    console.print(f"[bold]why[/bold]  {escape(result.variant_reason)}")
    kv = result.kv
    per_token = f"{kv.bytes_per_token:,} B/token in {kv.kv_dtype}"
    if m.sliding_window is not None:
        per_token += f" until the local layers reach their {m.sliding_window:,}-token window"
    console.print(
        f"[bold]cache[/bold]  {per_token}; {format_bytes(kv.bytes_per_sequence)} per {request.seq_len:,}-token"
        f" sequence; weights {format_bytes(result.weight_bytes)} in {request.weight_dtype}"
    )
    plan = result.memory
    if plan is not None:
        verdict = "[green]fits[/green]" if plan.fits else "[bold red]DOES NOT FIT[/bold red]"
        console.print(
            f"[bold]memory[/bold]  {plan.engine.name} on {plan.n_devices} x {plan.target_name}"
            f" ({escape(layout_words(plan))}): weights"
            f" {format_bytes(plan.weight_bytes_per_device)} as the engine loads them (--explain: padding, tables) +"
            f" cache {format_bytes(plan.kv_bytes_per_device)} per device; {counted(plan.max_sequences, 'sequence')}"
            f" of this length at once: {verdict}"
        )
    if result.latency is not None and plan is not None:
        admitted = plan.engine.admitted_per_replica
        console.print(latency_line(result.latency, plan.sequences_per_replica, request.seq_len, admitted))
    elif result.roofline is not None:  # no cost model for this layout: the roofline alone, named so
        r = result.roofline
        console.print(
            f"[bold]roofline[/bold]  decode step >= {r.decode_step_s * 1e3:,.2f} ms for"
            f" {counted(r.sequences_per_replica, 'sequence')} at {request.seq_len:,} tokens; prefill >= {r.prefill_s * 1e3:,.1f} ms (datasheet"
            " bandwidth, dense bf16 FLOP/s)"
        )
    from rich import box

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), title="alternatives", title_justify="left")
    numbers = ("cache / seq", "at once")
    for column in ("", "cache / seq", *(["at once"] if plan is not None else []), "risk", "verdict"):
        table.add_column(column, justify="right" if column in numbers else "left")
    for row in result.alternatives:
        cells = [f"{row.label}{' *' if row.is_recommended else ''}", format_bytes(row.kv_bytes_at_seq)]
        if plan is not None:
            cells.append(f"{row.max_sequences or 0:,}{'+' if row.pool_sequences else ''}")
        table.add_row(*cells, row.quality_risk, escape(row.verdict), style="bold" if row.is_recommended else None)
    console.print(table)
    _say_capped(console, result)
    if plan is not None and not plan.fits:
        console.print(f"[bold red]DOES NOT FIT:[/bold red] {not_fitting(plan)}. Ways out:")
        for way in result.ways_out:
            console.print(f"  - {escape(way_line(way))}")
    console.print(f"[bold]test[/bold]  `{result.testability.command}`{_placeholder(result.testability.command)}"
                  " (induction, 2 layers)")  # fmt: skip
    console.print("[dim]--explain: the parameter, cache, memory and roofline tables and the rule trace[/dim]")


def way_line(way: WayOut) -> str:
    """A way out as recommend checked it: the change and the design it gives when run again (recommend designs
    afresh, so its layout can differ from the one the way was worked out on: ``--target 16xh200`` planned as tp 16,
    designed as 16 replicas); a way not run, or a ``none:`` line, as written."""
    return f"{way.change}: {way.figure}" if way.fits and way.change else way.text


def not_fitting(plan: MemoryPlan) -> str:
    """What keeps ``plan`` from fitting, in words: the weights, the engine's cap on sequences, or the cache."""
    from mha_cli.core.fit import capped_by_max_num_seqs
    from mha_cli.core.memory import weights_overflow_words

    if plan.engine.refusal is not None and plan.weights_fit:  # the engine would not start (a pool set too large)
        return f"the engine {plan.engine.refused_as}: {plan.engine.refusal.rstrip('.')}"  # the caller adds the stop
    if not plan.weights_fit:
        return weights_overflow_words(plan)
    if capped_by_max_num_seqs(plan):
        return f"the engine runs at most {plan.engine.max_num_seqs:,} sequences a replica (max_num_seqs), fewer than this batch"
    return "the KV cache of this batch exceeds the target"


def render_recommendation(console: Console, result: RecommendResult) -> None:
    """The full report (``--explain``)."""
    request = result.request
    where = f" on {request.target}" if request.target else ""
    console.print(
        f"[bold]mha recommend[/bold]  {format_count(request.params)} parameters, {request.seq_len:,} tokens{where},"
        f" batch {request.batch}, priority {request.priority}"
    )
    print_assumptions(console, result.warnings, title="warning")
    console.print()
    console.print(model_table(result.config.model, "Recommended architecture"))
    console.print(f"[bold]why[/bold]  {result.variant_reason}")  # the reason opens with the variant
    console.print()
    console.print(params_table(result))
    console.print()
    console.print(kv_table(result.kv))
    if result.memory is not None:
        console.print()
        print_engine_plan(console, result.memory)
        if not result.memory.fits:
            console.print(f"[bold red]DOES NOT FIT:[/bold red] {not_fitting(result.memory)}. Ways out:")
            for way in result.ways_out:
                console.print(f"  - {escape(way_line(way))}")
    if result.roofline is not None:
        console.print()
        print_table(console, roofline_table(result))
    console.print()
    print_table(console, alternatives_table(result))
    console.print()
    init = ", ".join(f"{name} {std:.4g}" for name, std in result.init.std.items())
    console.print(f"[bold]init[/bold]  {result.init.scheme}: std {init}")
    console.print(f"[bold]biases[/bold]  q/k/v {result.qkv_bias}, o {result.o_bias}")
    hook = result.testability
    m = result.model
    heads = (
        f"{hook.n_heads} heads / latent {m.kv_lora_rank} + RoPE {m.qk_rope_head_dim}"
        if hook.variant == "MLA"
        else f"{hook.n_heads} heads / {hook.n_kv_heads} KV, head_dim {hook.head_dim}"
    )
    console.print(
        f"[bold]test[/bold]  {hook.task} ({hook.pattern}): {hook.n_layers} layers, {heads}, accuracy >="
        f" {hook.accuracy_threshold:.0%}: run `{hook.command}`{_placeholder(hook.command)}"
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
    if p.n_dense_mlp_layers:
        table.add_row(f"MLP ({p.n_dense_mlp_layers} layers)", count_cell(p.mlp_dense_total))
    m = result.model
    if p.n_moe_layers:
        table.add_row(
            f"experts + routers ({p.n_moe_layers} layers, {m.experts} x d_ff {m.d_ff_expert})",
            count_cell(p.mlp_moe_total),
        )
    table.add_row("norms", count_cell(p.norms_total + p.final_norm))
    table.add_row("embeddings" + (" (tied)" if result.model.tied_embeddings else ""), count_cell(p.embeddings))
    table.add_row(
        "total",
        f"{count_cell(p.total)}  {result.budget_deviation:+.1%} of {format_count(result.request.params)}",
        style="bold",
    )
    if p.n_moe_layers:
        active = result.request.active_params or p.active
        table.add_row(
            f"active per token (top-{m.top_k})",
            f"{count_cell(p.active)}  {(p.active - active) / active:+.1%} of {format_count(active)}",
            style="bold",
        )
    table.add_row(f"weights in {result.request.weight_dtype}", bytes_cell(result.weight_bytes))
    return table


def roofline_table(result: RecommendResult) -> Table:
    r = result.roofline
    assert r is not None
    table = Table(title=f"Roofline lower bounds (tp {r.tp})", title_justify="left")
    table.add_column("phase")
    table.add_column("roofline", justify="right")
    table.add_column("throughput", justify="right")
    table.add_column("bound")
    latency = result.latency
    if latency is not None:
        table.add_column("predicted (bound)", justify="right")
    decode = [f"decode step, batch {result.request.batch}, full context", f"{r.decode_step_s * 1e3:,.2f} ms",
              f"{r.decode_tokens_per_s:,.0f} tok/s", r.decode_bound]  # fmt: skip
    prefill = [f"prefill, {result.request.seq_len:,} tokens", f"{r.prefill_s * 1e3:,.1f} ms",
               f"{r.prefill_tokens_per_s:,.0f} tok/s", r.prefill_bound]  # fmt: skip
    if latency is not None:
        decode.append(f"{latency.decode_step_ms:,.2f} ({latency.decode_bound_ms:,.2f}) ms")
        prefill.append(f"{latency.prefill_ms:,.1f} ({latency.prefill_bound_ms:,.1f}) ms")
    table.add_row(*decode)
    table.add_row(*prefill)
    replicas = f"; {r.replicas} replicas x {r.sequences_per_replica} sequences" if r.replicas > 1 else ""
    predicted = (
        ""
        if latency is None
        else f"; predicted (bound): the cost model on {latency.profile} ({band_words(*measured_within(latency.relative_error, latency.profile_kind, latency.profile_source))}) and, in"
        " brackets, the same operations each at the datasheet's peak (fp8 matmuls at the fp8 peak where the weights"
        " are fp8), one after another in the engine's chunks: above the roofline, which counts the whole phase at"
        " one rate"
        " (`mha plan` for latency under load)"
    )
    table.caption = f"bounds from the datasheet (bandwidth, dense bf16 FLOP/s){replicas}{predicted}"
    return table


def alternatives_table(result: RecommendResult) -> Table:
    """One row per variant; short cells so the table reads at 80 columns, sources in the footnote."""
    table = Table(title="Alternatives at this width (the trade-off step's candidates)", title_justify="left")
    table.add_column("variant")
    table.add_column("KV heads", justify="right")
    table.add_column("B / token", justify="right")
    table.add_column("cache / device", justify="right")
    if result.memory is not None:
        table.add_column("max batch", justify="right")
    table.add_column("quality risk", overflow="fold")
    sources: dict[str, str] = {}
    marks: dict[str, str] = {}
    for row in result.alternatives:
        mark = ""
        if row.note:
            mark = marks.setdefault(row.note, "\u2020" * (len(marks) + 1))
        cells = [
            f"{row.label}{' *' if row.is_recommended else ''}{' ' + mark if mark else ''}",
            str(row.n_kv_heads) if row.n_kv_heads is not None else f"{row.kv_lora_rank}+{row.qk_rope_head_dim}",
            f"{row.bytes_per_token:,}",
            format_bytes(row.kv_bytes_per_device),
        ]
        if result.memory is not None:
            cells.append(f"{row.max_sequences:,}{'+' if row.pool_sequences else ''}")
        cells.append(row.quality_risk)
        table.add_row(*cells, style="bold" if row.is_recommended else None)
        sources.setdefault(row.variant, row.quality_source)
    cited = "; ".join(f"{variant}: {source}" for variant, source in sources.items() if variant != "MHA")
    where = "" if result.memory is None else f", {counted(result.memory.sequences_per_replica, 'sequence')} per replica"
    footnotes = "".join(f"; {mark} {note}" for note, mark in marks.items())
    table.caption = (
        f"* recommended; MLA: latent + RoPE key values, no KV heads; cache / device: one device's share of the"
        f" batch{where}; quality risk from {cited}{footnotes}; each row's depth and verdict are in the trace"
        f" (MHA027){_capped_words(result, '; ')}"
    )
    return table


def _capped_words(result: RecommendResult, lead: str) -> str:
    """``+: max_num_seqs 256 caps ...; the pool holds 258 (GQA-2), 517 (MQA)``, led by ``lead``; empty when no
    alternative's sequences are capped (trial 400 #2: the capped rows read as equal)."""
    capped = [row for row in result.alternatives if row.pool_sequences]
    if not capped or result.memory is None:
        return ""
    held = ", ".join(f"{row.pool_sequences:,} ({row.label})" for row in capped)
    cap = result.memory.engine.max_num_seqs
    return f"{lead}+: max_num_seqs {cap:,} caps the sequences run at once per replica; the pool holds {held}"


def _say_capped(console: Console, result: RecommendResult) -> None:
    """The alternatives table's ``+`` said under it."""
    words = _capped_words(result, "")
    if words:
        console.print(f"[dim]{escape(words)}[/dim]")


def trace_table(result: RecommendResult) -> Table:
    table = Table(title="Rule trace", title_justify="left")
    table.add_column("id")
    table.add_column("rule")
    table.add_column("decision")
    styles = {"hard": "bold red", "warning": "yellow", "info": None}
    for finding in result.trace:
        table.add_row(finding.id, finding.name, finding.message, style=styles[finding.severity])
    return table


def _placeholder(command: str) -> str:
    """What ``CONFIG`` in the hook's command stands for, where no ``--out`` named the file (trial 262: there was no
    file to put in its place, and nothing said to write one)."""
    from mha_cli.core.recommend import HOOK_CONFIG_PLACEHOLDER

    return f" ({HOOK_CONFIG_PLACEHOLDER}: the file --out writes)" if f" {HOOK_CONFIG_PLACEHOLDER} " in command else ""
