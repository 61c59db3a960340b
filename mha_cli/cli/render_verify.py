"""How ``mha verify``'s report reads in a terminal: the measured figures beside the predicted, the checks, the
numbered notes. The single-device and the tensor-parallel commands both print it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.parallel.pipeline_report import PpVerifyReport
    from mha_cli.verify.report import VerifyReport


def render_verify(console: Console, report: VerifyReport, *, last_line: bool = True) -> None:
    """The single-device report, its PASS/FAIL line last (``last_line`` False: left to a caller that prints more
    first, as ``verify --tp``'s ranks, so the verdict stays the last line: trial 291 #3)."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from mha_cli.cli.render import size_cell
    from mha_cli.core.quantities import format_bytes

    mode = f", {report.mla_cache} MLA cache" if report.mla_cache else ""
    console.print(
        f"[bold]{escape(report.model_name)}[/bold] ({report.variant}{mode}) on {report.device_name} [dim]({report.device},"
        f" {report.dtype}, torch {report.torch_version})[/dim]: seq {report.seq_len:,} x batch {report.batch},"
        f" layers {report.layers_note}" + (f", tp={report.tp}" if report.tp > 1 else "")
    )
    table = Table(
        title=f"Predicted vs measured  [dim](built: {escape(report.built)})[/dim]", title_justify="left",
        box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False,
    )  # fmt: skip
    table.add_column("quantity")
    table.add_column("predicted", justify="right")
    table.add_column("measured", justify="right")
    table.add_column("how", style="dim")
    notes = Footnotes()

    def verdict(check: str, how: str) -> str:
        word = "[green]equal[/green]" if report.checks[check] else "[red]DIFFERENT[/red]"
        return f"{word} {notes.ref(how)}"

    weights, cache = report.measured_weight_bytes, report.measured_cache_bytes
    table.add_row("weights, built stack", size_cell(report.predicted_weight_bytes), size_cell(weights),
                  verdict("weight_bytes_match", f"weights: core count_params x dtype vs the parameters' nbytes"
                          f" ({weights:,} B measured)"))  # fmt: skip
    table.add_row("  one decoder layer", size_cell(report.predicted_weight_bytes_per_layer),
                  size_cell(report.weight_bytes_per_layer), "layer 0")  # fmt: skip
    table.add_row(f"KV cache, {report.n_layers_built} built layer(s)", size_cell(report.predicted_cache_bytes),
                  size_cell(cache), verdict("cache_bytes_match", f"KV cache: core.kv vs the new_cache tensors' nbytes"
                                            f" ({cache:,} B measured)"))  # fmt: skip
    allocator = report.allocator
    if allocator is not None:
        for part, label in (("weights", "allocator: weights"), ("cache", "allocator: cache")):
            ok = report.checks[f"allocator_{part}"]
            tolerance = size_cell(getattr(allocator, f"{part}_tolerance_bytes"))
            table.add_row(f"  {label}", size_cell(getattr(allocator, f"{part}_expected_bytes")),
                          size_cell(getattr(allocator, f"{part}_change_bytes")),
                          ("[green]within[/green]" if ok else "[red]OUTSIDE[/red]")
                          + f" +{tolerance} {notes.ref('allocator: the CUDA allocator rounds each tensor up')}")  # fmt: skip
        table.add_row("  allocator: prefill peak", size_cell(allocator.predicted_workspace_bytes),
                      size_cell(allocator.prefill_peak_bytes),
                      f"estimate {notes.ref('prefill peak: max_memory_allocated during the prefill')}")  # fmt: skip
    for scope in (report.per_rank, report.whole_model):
        label = "one rank" if scope.scope == "per_rank" else "whole model"
        how = "EXTRAPOLATED" if scope.extrapolated else "measured"
        table.add_row(f"KV cache, {label}", size_cell(scope.predicted_cache_bytes), size_cell(scope.cache_bytes),
                      f"{how} {notes.ref(f'{label}: {scope.covers}')}")  # fmt: skip
        table.add_row(f"weights, {label}", size_cell(scope.predicted_weight_bytes), size_cell(scope.weight_bytes),
                      how)  # fmt: skip
    roof = "" if report.roofline_decode_ms is None else f"roofline {report.roofline_decode_ms:.3f} ms"
    ratio = "" if report.decode_vs_roofline is None else f"{report.decode_vs_roofline:.1f}x roofline, "
    decode = report.decode
    decode_note = notes.ref(
        f"decode: median of {decode.reps}, {report.decode_tokens_per_s:,.1f} tok/s ({decode.timer})"
    )
    table.add_row("decode step, built stack", roof, f"{report.decode_ms:.3f} ms",
                  f"{ratio}IQR {decode.spread_ms:.3g} ms {decode_note}")  # fmt: skip
    whole = report.whole_model
    table.add_row("decode step, whole model", "", f"{whole.decode_ms:.3f} ms",
                  f"EXTRAPOLATED {notes.ref('whole-model decode: scaled by the bytes a step reads')}"
                  if whole.extrapolated else "measured")  # fmt: skip
    prefill = report.prefill
    table.add_row("prefill, built stack", "", f"{report.prefill_ms:.3f} ms",
                  f"median of {prefill.reps}, IQR {prefill.spread_ms:.3g} ms "
                  + notes.ref(f"prefill: {report.prefill_note}; {report.prefill_tokens_per_s:,.0f} tok/s"))  # fmt: skip
    if report.predicted_decode_ms is not None:
        how = notes.ref(f"predicted: {report.prediction_how}")
        table.add_row("decode step, cost model", f"{report.predicted_decode_ms:.3f} ms", f"{report.decode_ms:.3f} ms",
                      f"measured / predicted {report.prediction_ratio:.2f} {how}")  # fmt: skip
        table.add_row("prefill, cost model", f"{report.predicted_prefill_ms:.3f} ms", f"{report.prefill_ms:.3f} ms",
                      f"measured / predicted {report.prefill_prediction_ratio:.2f}")  # fmt: skip
    peak = "" if report.peak_gb_per_s is None else f"peak {report.peak_gb_per_s:,.1f} GB/s"
    table.add_row("decode bandwidth", peak, f"{report.achieved_gb_per_s:,.1f} GB/s",
                  efficiency_text(report) + notes.ref(f"bandwidth: {report.decode_bytes_read:,} B read per step; peak:"
                                                      f" {report.peak_source}"))  # fmt: skip
    numerics = report.numerics
    table.add_row("cached decode vs full", f"<= {numerics.tolerance:g}", f"{numerics.relative_error:.2e}",
                  "relative error " + notes.ref(f"numerics: relative max error of the logits, {numerics.tokens} tokens,"
                                                f" the last {numerics.decode_tokens} decoded one by one"
                                                + routing_text(numerics.routing_differing)
                                                + (f"; {numerics.window_unchecked}" if numerics.window_unchecked
                                                   else "")))  # fmt: skip
    console.print(table)
    for line in notes.lines():
        console.print(f"[dim]{escape(line)}[/dim]")
    precheck = report.precheck
    usable = "free memory unknown" if precheck.usable_bytes is None else f"{format_bytes(precheck.usable_bytes)} usable"
    console.print(
        f"[bold]Memory precheck[/bold]  weights {format_bytes(precheck.weight_bytes)} + cache"
        f" {format_bytes(precheck.cache_bytes)} + workspace {format_bytes(precheck.workspace_bytes)}"
        f" = {format_bytes(precheck.required_bytes)} of {usable}"
    )
    backends = "; ".join(  # none: the model's attention ran eagerly (attention sinks), not through SDPA
        f"{phase}: {', '.join(names) or 'none (eager attention)'}" for phase, names in report.sdpa_backends.items()
    )
    console.print(f"[bold]SDPA backend[/bold]  {backends}")
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")
    if report.hook is not None:
        from mha_cli.cli.render_hook import render_hook

        render_hook(console, report.hook)
    if last_line:
        print_verdict(console, report)


def print_verdict(console: Console, report: VerifyReport | PpVerifyReport) -> None:
    """``PASS  name pass  name FAIL (why)``: the report's last line, which a script reads (single device, --tp, --pp)."""
    from rich.markup import escape

    checks = "  ".join(
        f"{name} [green]pass[/green]"
        if ok
        else f"{name} [red]FAIL[/red] ({escape(report.check_details.get(name, ''))})"
        for name, ok in report.checks.items()
    )
    verdict = "[bold green]PASS[/bold green]" if report.passed else "[bold red]FAIL[/bold red]"
    console.print(f"{verdict}  {checks}")


def efficiency_text(report: VerifyReport) -> str:
    """``62% of peak `` — or, when the run beat the peak measurement, that plain fact instead of a ratio over 100%."""
    if report.roofline_efficiency is None:
        return ""
    if report.roofline_efficiency > 1:
        return "above the measured peak (small caches, noise) "
    return f"{report.roofline_efficiency:.0%} of peak "


def routing_text(differing: int | None) -> str:
    """What the numerics note says about MoE routing (nothing for a dense stack)."""
    if differing is None:
        return ""
    return (
        f"; MoE: the cached pass replays the full forward's experts ({differing} (token, layer) choice(s) would"
        " have differed at near-ties under rounding)"
    )


class Footnotes:
    """Numbered notes under a table, so its cells stay short: ``ref(text)`` returns ``[n]``."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str) -> str:
        self.texts.append(text)
        return f"\\[{len(self.texts)}]"  # escaped: rich would read [1] as markup

    def lines(self) -> list[str]:
        return [f"[{number}] {text}" for number, text in enumerate(self.texts, start=1)]
