"""``mha plan --disaggregated``'s table: the workers, the best splits, the aggregated plan beside them, the verdict
and the launch lines (the JSON is the same ``DisaggregatedPlan``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.quantities import format_ms

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.core.cost.disaggregated import DisaggregatedPlan

SPLITS_SHOWN = 8
"""Splits the table shows (the JSON holds every one)."""


def render_disaggregated(console: Console, plan: DisaggregatedPlan) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    targets = [f"TTFT <= {format_ms(plan.ttft_ms)} ms"] if plan.ttft_ms is not None else []
    targets += [f"ITL <= {format_ms(plan.itl_ms)} ms"] if plan.itl_ms is not None else []
    load = f"{plan.rate_rps:g} req/s" if plan.rate_rps is not None else "each split at its goodput"
    console.print(
        f"[bold]{escape(plan.model_name)}[/bold] on {escape(plan.target)}, disaggregated: {plan.isl:,} in /"
        f" {plan.osl:,} out; {plan.engine}; targets: {', '.join(targets) or 'none'}; load: {load}"
    )
    workers = Table(
        title="one worker of each layout (tpN: tensor-parallel; dpN: DP attention over N GPUs, experts spread)",
        title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
    )  # fmt: skip
    for column in ("layout", "GPUs", "prefill ms", "prompts/s", "decode admits", "decode req/s max", "within ITL",
                   "step ms"):  # fmt: skip
        workers.add_column(column, justify="right")
    decode = {(w.tp, w.dp): w for w in plan.decode}
    for p in plan.prefill:
        d = decode[p.tp, p.dp]
        admits = f"{d.admitted:,}" if d.dp == 1 else f"{d.dp} x {d.admitted:,}"
        workers.add_row(_label(p.tp, p.dp), str(p.gpus), f"{p.prompt_ms:,.1f}", f"{p.capacity_rps:,.2f}", admits,
                        f"{d.capacity_rps:,.2f}", f"{d.goodput_rps:,.2f}", f"{d.step_ms:,.1f}")  # fmt: skip
    console.print(workers)
    splits = Table(
        title="splits, best first (P: prefill workers x layout, D: decode workers x layout)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,  # eleven columns in 80 characters: no figure cut to "12,0…"
        show_edge=False,
    )
    for column in ("", "P", "D", "GPUs", "req/s", "limit", "TTFT ms", "KV ms", "ITL ms", "tok/s/GPU", "meets"):
        splits.add_column(column, justify="left" if column in ("", "limit", "meets") else "right",
                          min_width=_widest(plan) if column in ("P", "D") else None)  # fmt: skip
    for index, s in enumerate(plan.splits[:SPLITS_SHOWN]):
        meets = "yes" if s.meets_targets else "no: " + ", ".join(_miss_word(miss) for miss in s.misses)
        prefill, decode = _label(s.prefill_tp, s.prefill_dp), _label(s.decode_tp, s.decode_dp)
        splits.add_row("*" if index == plan.chosen else "", f"{s.prefill_workers}x{prefill}",
                       f"{s.decode_workers}x{decode}", str(s.gpus), f"{s.served_rps or s.rate_rps:,.2f}", s.served_by or s.bottleneck,
                       "grows" if s.saturated else f"{s.ttft_ms:,.0f}", f"{s.transfer_ms:,.2f}", f"{s.itl_ms:,.1f}",
                       f"{s.output_tokens_per_s_per_gpu:,.0f}", escape(meets))  # fmt: skip
    if plan.splits:
        console.print(splits)
        if plan.simulated is not None or any("(simulated:" in miss for s in plan.splits for miss in s.misses):
            console.print("meets: the simulated loop's verdict for the splits it ran (in the closed form's order while"
                          " one could beat the best it confirmed; the pick among them), else the closed form's; req/s:"
                          " where a split's loop missed the targets at the closed form's goodput, the most load it"
                          " meets them at; at --rate, what its pools serve of it ('grows' for a TTFT whose queue has no end)")  # fmt: skip
    else:  # the verdict and the notes say why: no prefill and decode pair fits the GPUs
        console.print("splits: none fits these GPUs (the verdict says why)")
    if plan.balance:
        console.print(f"balance: {escape(plan.balance)}")
    if plan.simulated is not None:
        sim = plan.simulated
        console.print(
            f"simulated pick ({sim.requests:,} requests, Poisson at {sim.rate_rps:.3g} req/s): TTFT mean"
            f" {sim.ttft_ms.mean:,.0f} / p90 {sim.ttft_ms.p90:,.0f} / p99 {sim.ttft_ms.p99:,.0f} ms; TPOT mean"
            f" {sim.tpot_ms.mean:,.1f} / p90 {sim.tpot_ms.p90:,.1f} / p99 {sim.tpot_ms.p99:,.1f} ms"
        )
        if plan.p99_past_targets:  # the targets are read against the means here; a p99 past them is said
            console.print(f"[yellow]{escape('; '.join(plan.p99_past_targets))}[/yellow]: the pick meets the targets on"
                          " its means only")  # fmt: skip
    aggregated = Table(title="aggregated on the same GPUs", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1))
    for column in ("", "layout x replicas", "req/s per replica", "TTFT ms", "ITL ms", "tok/s/GPU", "meets"):
        aggregated.add_column(column, justify="left" if column in ("", "meets") else "right")
    for index, a in enumerate(plan.aggregated):
        aggregated.add_row("*" if index == plan.aggregated_chosen else "", f"{_label(a.tp, a.dp)} x {a.replicas}",
                           f"{a.served_rps or a.rate_rps:,.2f}", "grows" if a.saturated else f"{a.ttft_ms:,.0f}",
                           f"{a.itl_ms:,.1f}", f"{a.output_tokens_per_s_per_gpu:,.0f}",
                           "yes" if a.meets_targets else "no: rate" if a.saturated else "no")  # fmt: skip
    console.print(aggregated)
    if plan.aggregated:  # trial 404 #5: read beside the plain search's simulated verdict on the same layouts
        console.print("aggregated meets: the closed form's verdict on its means (`mha plan` without --disaggregated"
                      " runs the loop, whose p99 may rule a layout out at the same load)")  # fmt: skip
    console.print(f"[bold]{_headline(plan)}[/bold]: {escape(plan.verdict)}")
    for engine, lines in plan.launch.items():
        console.print(f"  {engine}:")
        for line in lines.splitlines():  # whole on one line, to copy: the terminal wraps it, not rich
            console.print(f"    {escape(line)}", soft_wrap=True)
    if plan.launch_note:
        console.print(f"  [dim]note: {escape(plan.launch_note)}[/dim]")
    for note in plan.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")


def _headline(plan: DisaggregatedPlan) -> str:
    """``disaggregated wins``, ``tie``, ...; a split that wins with a simulated p99 past the targets wins on its
    means (trial 394 #4: it read as a plain win)."""
    if plan.winner in ("tie", "neither"):
        return plan.winner
    on_means = " on its means" if plan.winner == "disaggregated" and plan.p99_past_targets else ""
    return f"{plan.winner} wins{on_means}"


def _label(tp: int, dp: int) -> str:
    """``tp8`` or ``dp16`` (``core.cost.disaggregated_layouts.WorkerLayout.label``)."""
    from mha_cli.core.cost.disaggregated_layouts import WorkerLayout

    return WorkerLayout(tp, dp).label


def _widest(plan: DisaggregatedPlan) -> int:
    """The widest P or D cell (``2xdp16``) of the splits shown, so that it is never cut."""
    cells = [f"{s.prefill_workers}x{_label(s.prefill_tp, s.prefill_dp)}" for s in plan.splits[:SPLITS_SHOWN]]
    cells += [f"{s.decode_workers}x{_label(s.decode_tp, s.decode_dp)}" for s in plan.splits[:SPLITS_SHOWN]]
    return max(map(len, cells), default=1)


def _miss_word(miss: str) -> str:
    """A miss in one word for the meets column: the target it misses (``ttft``, ``itl``), or ``none-served`` for a split
    that serves nothing within them (its first word, "serves", read as if it were a target; trial 264 #8)."""
    return "none-served" if miss.startswith("serves nothing") else miss.split()[0]
