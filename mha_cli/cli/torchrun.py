"""``torchrun --nproc-per-node N -m mha_cli.cli.torchrun CONFIG [--device cpu] [--json]``: a tensor-parallel
verify started by torchrun instead of ``mha verify --tp N``. Every rank runs ``parallel.worker``; rank 0's reports
are rendered here, in the CLI ring, as ``mha verify --tp`` renders them (tables, or ``--json``)."""

from __future__ import annotations

from mha_cli.parallel.report import TpVerifyReport
from mha_cli.parallel.worker import exit_at_once
from mha_cli.parallel.worker import main as run_rank


def render(reports: list[TpVerifyReport], as_json: bool) -> None:
    """Rank 0's reports on stdout, as ``mha verify --tp`` prints them."""
    from mha_cli.cli.output import Output
    from mha_cli.cli.verify_tp import render_tp_verify

    for report in reports:
        Output(as_json).emit(report, render_tp_verify)


def main(argv: list[str] | None = None) -> int:
    return run_rank(argv, emit=render)


if __name__ == "__main__":
    exit_at_once(main())
