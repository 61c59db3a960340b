"""The parent side of ``mha verify --tp N``: write the jobs, run the ranks, read rank 0's reports.

Everything goes through a private temporary folder that is removed afterwards, success or not.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from mha_cli.core.errors import MhaError
from mha_cli.parallel.launch import run_ranks
from mha_cli.parallel.pipeline_report import PpBatch, PpJob, PpVerifyReport
from mha_cli.parallel.report import TpBatch, TpJob, TpVerifyReport
from mha_cli.parallel.worker import RESULT_FILE


def run_tp_jobs(jobs: list[TpJob], *, extra_env: dict[str, str] | None = None) -> list[TpVerifyReport]:
    """Run ``jobs`` (all with the same tp) on one set of tp ranks; one report per job.

    Raises ``RankFailedError`` (one line, all ranks killed) when a rank fails or the run outlives the
    sum of the jobs' ``timeout_s``.
    """
    if not jobs or len({job.tp for job in jobs}) != 1:
        raise ValueError("run_tp_jobs needs at least one job, all with the same tp")
    with tempfile.TemporaryDirectory(prefix="mha-tp-") as tmp:
        run_dir = Path(tmp)
        job_file = run_dir / "job.json"
        job_file.write_text(TpBatch(jobs=jobs).model_dump_json())
        run_ranks(job_file, run_dir, jobs[0].tp, timeout_s=sum(job.timeout_s for job in jobs), extra_env=extra_env)
        result = run_dir / RESULT_FILE
        if not result.exists():
            raise MhaError("tensor-parallel run ended without a report from rank 0")
        return [TpVerifyReport.model_validate(item) for item in json.loads(result.read_text())]


def run_pp_job(job: PpJob, *, extra_env: dict[str, str] | None = None) -> PpVerifyReport:
    """Run one pipeline job on ``job.pp`` stages of ``job.tp`` processes each; rank 0's report. Raises ``RankFailedError``
    as ``run_tp_jobs`` does."""
    with tempfile.TemporaryDirectory(prefix="mha-pp-") as tmp:
        run_dir = Path(tmp)
        job_file = run_dir / "job.json"
        job_file.write_text(PpBatch(pp_jobs=[job]).model_dump_json())
        run_ranks(job_file, run_dir, job.pp * job.tp, timeout_s=job.timeout_s, extra_env=extra_env)
        result = run_dir / RESULT_FILE
        if not result.exists():
            raise MhaError("pipeline run ended without a report from rank 0")
        (report,) = json.loads(result.read_text())
        return PpVerifyReport.model_validate(report)
