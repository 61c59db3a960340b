"""Where a client row's simulated run spends its time: its decode-only steps and its steps holding a prompt chunk.

For a row of ``tests/fixtures/serving_benchmarks_2025.yaml`` that states its benchmark client (its index, as
``fit_priors.py --rows`` prints it), the run ``fit_priors`` prices its figures from (``GenerationRow.simulated_figures``,
the generation's shipped constants), with each engine step's seconds summed by kind: decode-only steps, and steps
holding a prompt chunk (with decodes or not), their count, seconds, mean rows and prompt tokens. Under SGLang a prompt
step runs outside CUDA graphs and pays the host's launch floor (``core.engine.prefill_graphs``), which every running
sequence waits for; the priors_2025.md diagnoses (sglmoe) read a row's ITL miss against this split.

    python benchmarks/run_split.py 19 559
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import fit_priors
from step_ops import fixture_row

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.serve import step_cost


@dataclass
class StepKind:
    """Every step of one kind in a run."""

    steps: int = 0
    seconds: float = 0.0
    rows: int = 0
    """Decoding sequences, summed over the steps."""
    prompt_tokens: int = 0
    """Prompt tokens the steps computed, summed."""


@dataclass
class RunSplit:
    """A simulated run's steps by kind."""

    decode: StepKind = field(default_factory=StepKind)
    prompt: StepKind = field(default_factory=StepKind)
    figures: dict[str, float] = field(default_factory=dict)


@contextlib.contextmanager
def counted(split: RunSplit) -> Iterator[None]:
    """While open, every step the simulator prices (``StepCost.seconds`` with chunks, ``decode_seconds`` without) is
    added to ``split``; the simulator calls one of them once a step."""
    priced = step_cost.StepCost

    class Counting(priced):
        def seconds(self, decodes: int, decode_context: int, chunks: list[tuple[int, int]]) -> float:
            seconds = super().seconds(decodes, decode_context, chunks)
            if not chunks:  # a decode-only step is counted by decode_seconds (its grid prices through here)
                return seconds
            kind = split.prompt
            kind.steps, kind.seconds, kind.rows = kind.steps + 1, kind.seconds + seconds, kind.rows + decodes
            kind.prompt_tokens += sum(size for size, _ in chunks)
            return seconds

        def decode_seconds(self, decodes: int, decode_context: int) -> float:
            seconds = priced.decode_seconds(self, decodes, decode_context)
            kind = split.decode
            kind.steps, kind.seconds, kind.rows = kind.steps + 1, kind.seconds + seconds, kind.rows + decodes
            return seconds

    step_cost.StepCost = Counting  # core.serve.replica imports it when it simulates
    try:
        yield
    finally:
        step_cost.StepCost = priced


def run_split(row: fit_priors.GenerationRow) -> RunSplit:
    """``row``'s simulated client run (shipped constants of its generation), its steps by kind."""
    if row.client is None:
        raise SystemExit(f"row #{row.index} states no benchmark client: it has no simulated run")
    profile = prior_profile(row.target, row.weight_dtype, None, generation=row.generation, release=row.graph_release)
    split = RunSplit()
    with counted(split):
        split.figures = row.simulated_figures(profile)
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="+", type=int, help="row indices as fit_priors.py --rows prints them (#19)")
    for index in parser.parse_args().rows:
        row = fixture_row(index)
        split = run_split(row)
        figures = ", ".join(f"{key} {value:,.1f}" for key, value in split.figures.items())
        print(f"#{index} {row.label} ({row.priced_as}): {figures}")
        total = split.decode.seconds + split.prompt.seconds
        for name, kind in (("decode-only steps", split.decode), ("prompt steps", split.prompt)):
            mean = kind.seconds / kind.steps * 1e3 if kind.steps else 0.0
            rows = kind.rows / kind.steps if kind.steps else 0.0
            print(
                f"  {name:18s} {kind.steps:7,d}  {kind.seconds:9.2f} s ({kind.seconds / total:6.1%})  mean {mean:8.2f} ms"
                f"  decoding {rows:6.1f}  prompt tokens {kind.prompt_tokens:10,d}"
            )


if __name__ == "__main__":
    main()
