"""The hook section of ``mha verify --hook``'s table: accuracy of the copy and of the control, what was scaled."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.hook.result import HookResult


def render_hook(console: Console, hook: HookResult) -> None:
    from rich.markup import escape

    verdict = "[green]pass[/green]" if hook.passed else "[red]FAIL[/red]"
    control = (
        "below the threshold, as a 1-layer model must be"
        if hook.control_below_threshold
        else "[yellow]reached the threshold: the task does not need induction here[/yellow]"
    )
    console.print(
        f"[bold]Induction hook (MHA050)[/bold]  {hook.layers}-layer copy {hook.accuracy:.1%} (>= {hook.threshold:.0%}:"
        f" {verdict}) after {hook.steps} steps; 1-layer control {hook.control_accuracy:.1%} after"
        f" {hook.control_steps} steps ({control})"
    )
    console.print(
        f"[dim]  {hook.seconds:.0f} s on {hook.device} ({escape(hook.device_name)}), seed {hook.seed};"
        f" {escape(hook.task)}[/dim]"
    )
    console.print(f"[dim]  scaled copy: {escape('; '.join(hook.scaled))}[/dim]")
