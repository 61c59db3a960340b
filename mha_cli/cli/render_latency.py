"""The one line ``mha kv`` and ``mha recommend`` print for ``core.cost.latency``'s figures, in the JSON's units.

Both commands print the same ``StepLatency`` fields, each with its unit, so the text and ``--json``'s ``latency``
block carry one set of figures (the roofline of ``core.roofline``, another bound, stays in ``--explain``'s table).
"""

from mha_cli.core.cost.latency import StepLatency
from mha_cli.core.cost.profile import band_words, measured_within
from mha_cli.core.rules.engine import counted


def latency_line(latency: StepLatency, sequences: int, seq_len: int, at_once: int | None = None) -> str:
    """``latency`` in words: the decode step of ``sequences`` sequences at ``seq_len`` tokens and one prompt's
    prefill, each predicted and bounded, in milliseconds, with the profile that priced them; ``at_once``: the
    sequences a replica's engine admits, said where fewer than the batch priced (trial 311 #11)."""
    if at_once is None or at_once >= sequences:
        short = ""
    else:  # review 312 #8: "(0 run at once)" beside weights that do not fit
        short = f", the batch asked ({at_once:,} run at once)" if at_once else ", the batch asked (none runs at once)"
    return (
        f"[bold]latency[/bold]  decode step {latency.decode_step_ms:,.2f} ms (bound {latency.decode_bound_ms:,.2f}"
        f" ms) for {counted(sequences, 'sequence')}{short} at {seq_len:,} tokens; prefill {latency.prefill_ms:,.1f} ms (bound"
        f" {latency.prefill_bound_ms:,.1f} ms); cost model on {latency.profile} ({band_words(*measured_within(latency.relative_error, latency.profile_kind, latency.profile_source))};"
        " `mha plan` for TTFT and ITL under load)"
    )
