"""Where a serving row's step time sits: one fixture row's decode step and prompt chunk, operation by operation.

For a row of ``tests/fixtures/serving_benchmarks_2025.yaml`` (its index, as ``fit_priors.py --rows`` prints it),
priced with its generation's shipped constants: the decode step at the batch its engine admits (each sequence at the
mean decode context, isl + osl / 2) and one prompt chunk (as many whole prompts as the engine's token budget holds,
or a budget's worth of one longer prompt), each op's seconds (``core.cost.step.op_seconds`` x its count) and
whether compute or its bytes bound it, then the kernels' and the engine's fixed costs. The diagnoses of
``outputs/serving/priors_2025.md`` read a measured figure's miss against these parts.

    python benchmarks/step_ops.py 173 196
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).parent))

import fit_priors

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.step import StepTime, op_seconds
from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.cost.work import COLLECTIVES, StepShape, decode_shape, prefill_shape
from mha_cli.core.safe_yaml import load_yaml_file


class OpTime(NamedTuple):
    """One operation's share of a step: every instance of it, in seconds."""

    name: str
    kind: str
    count: float
    rows: int
    seconds: float
    compute_bound: bool


def fixture_row(index: int) -> fit_priors.GenerationRow:
    """Row ``index`` of the 2025 fixture (the numbering of ``fit_priors.load_generation_rows``), priced by the
    release it names; raises ``SystemExit`` where the row is not usable."""
    raw = load_yaml_file(fit_priors.ROWS_2025_FILE)
    if not 0 <= index < len(raw) or not raw[index].get("mha", {}).get("use"):
        raise SystemExit(f"row #{index} is not a usable row of {fit_priors.ROWS_2025_FILE.name}")
    return fit_priors.GenerationRow(index, raw[index])


def row_steps(row: fit_priors.GenerationRow) -> list[tuple[str, StepShape]]:
    """The decode step at the admitted batch and one prompt chunk of ``row``'s case, each with its label."""
    case = row.case
    batch = min(case.concurrency, case.admitted_per_replica or case.concurrency)
    context = case.isl + case.osl // 2
    prompts = max(1, case.chunk_tokens // case.isl)
    tokens = min(case.isl, case.chunk_tokens)
    return [
        (f"decode step, {batch} running at context {context}", decode_shape(batch, context)),
        (f"prompt chunk, {prompts} x {tokens} tokens", prefill_shape(tokens, sequences=prompts)),
    ]


def op_times(stepper: Stepper, shape: StepShape) -> list[OpTime]:
    """Every operation of ``shape``'s step on ``stepper``'s profile, with all its instances' seconds."""
    out = []
    for op in stepper.ops(shape):
        seconds, compute_bound = op_seconds(op, stepper.profile, stepper.case.tp, stepper.scale_out)
        out.append(OpTime(op.name, op.kind, op.count, op.tokens, op.count * seconds, compute_bound))
    return out


def print_step(label: str, times: list[OpTime], step: StepTime) -> None:
    print(f"  {label}: {step.seconds * 1e3:.2f} ms")
    for t in times:
        bound = "collective" if t.kind in COLLECTIVES else "compute" if t.compute_bound else "bytes"
        print(f"    {t.name:42s} x{t.count:7.2f}  rows {t.rows:6d}  {t.seconds * 1e3:8.3f} ms  {bound}")
    ops = sum(t.seconds for t in times)
    print(f"    {'kernels, step and host overhead':42s} {'':25s}{step.overhead_s * 1e3:8.3f} ms")
    print(f"    {'(ops + overhead)':42s} {'':25s}{(ops + step.overhead_s) * 1e3:8.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="+", type=int, help="row indices as fit_priors.py --rows prints them (#173)")
    args = parser.parse_args()
    for index in args.rows:
        row = fixture_row(index)
        profile = prior_profile(
            row.target, row.weight_dtype, None, generation=row.generation, release=row.graph_release
        )
        stepper = row.stepper.on(profile)
        print(f"#{index} {row.label} ({row.priced_as}, shipped {row.generation} constants)")
        for label, shape in row_steps(row):
            print_step(label, op_times(stepper, shape), stepper.step(shape))


if __name__ == "__main__":
    main()
