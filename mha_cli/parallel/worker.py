"""One rank of a tensor-parallel verify: ``python -m mha_cli.parallel.worker``.

Started by ``mha verify --tp N`` (``--job FILE --run-dir DIR``: the jobs to run, and where rank 0 writes
``result.json`` and a failing rank ``rank{r}.error``), or by torchrun directly::

    torchrun --nproc-per-node 2 -m mha_cli.cli.torchrun CONFIG [--seq 256] [--device cpu] [--json]

where tp is WORLD_SIZE and rank 0 hands its reports to the caller's ``emit`` (``mha_cli.cli.torchrun`` renders
them; started as ``-m mha_cli.parallel.worker`` it prints their JSON). Workers return results; the CLI renders. Either way the rank reads its place from torchrun's
variables, joins the process group, runs, and exits 0; on an error it prints one line, records it for
the launcher, and exits with the error's code (2 bad input, 3 out of memory, else 1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from mha_cli.core.errors import EXIT_CHECK_FAILED, EXIT_OUT_OF_MEMORY, MhaError
from mha_cli.parallel.group import RankEnv, close_group, init_group, leave_together
from mha_cli.parallel.launch import ERROR_FILE, die_with_parent, mark_stage
from mha_cli.parallel.pipeline_report import PpBatch, PpVerifyReport
from mha_cli.parallel.plan import DEFAULT_TIMEOUT_S
from mha_cli.parallel.report import TpBatch, TpVerifyReport

Report = TpVerifyReport | PpVerifyReport

RESULT_FILE = "result.json"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m mha_cli.parallel.worker", description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", help="config file, preset or config.json (torchrun use)")
    parser.add_argument("--job", type=Path, help="jobs written by the launcher (TpBatch JSON)")
    parser.add_argument("--run-dir", type=Path, help="where rank 0 writes result.json and a failing rank its error")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seq")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--kv-dtype")
    parser.add_argument("--mla-cache")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--prefill-tokens", type=int)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--tolerance", type=float)
    parser.add_argument("--tp-timeout", type=float, default=DEFAULT_TIMEOUT_S)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if (args.job is None) == (args.source is None):
        parser.error("give either SOURCE (under torchrun) or --job FILE (from the launcher)")
    return args


def batch_from_source(args: argparse.Namespace, world_size: int) -> TpBatch:
    """The job torchrun's ranks run: SOURCE and options as ``mha verify`` reads them, tp = WORLD_SIZE."""
    from mha_cli.core.deployment import for_local_ranks, merge_deployment
    from mha_cli.core.sources import load_source
    from mha_cli.parallel.plan import make_tp_job, resolve_tp_device

    loaded = load_source(args.source)
    deployment = merge_deployment(
        for_local_ranks(loaded.deployment, world_size), model=loaded.model, seq_len=args.seq, batch=args.batch, kv_dtype=args.kv_dtype,
        mla_cache=args.mla_cache, tp=world_size,
    )  # fmt: skip
    job = make_tp_job(
        loaded, deployment, device_type=resolve_tp_device(args.device, world_size), layers=args.layers,
        prefill_tokens=args.prefill_tokens, reps=args.reps, tolerance=args.tolerance, timeout_s=args.tp_timeout,
    )  # fmt: skip
    return TpBatch(jobs=[job])


def planned_batch(args: argparse.Namespace, env: RankEnv) -> TpBatch:
    """Under torchrun: rank 0 plans (free memory is read once) and sends the plan to every rank; a planning
    error on rank 0 (bad input, no fit) ends every rank with rank 0's message and code."""
    import torch.distributed as dist

    message: list[object] = [None]
    if env.rank == 0:
        try:
            message = [batch_from_source(args, env.world_size).model_dump(mode="json")]
        except MhaError as exc:
            message = [{"error": exc.message, "exit_code": exc.exit_code}]
    if env.world_size > 1:
        dist.broadcast_object_list(message, src=0)
    payload = message[0]
    assert isinstance(payload, dict)
    if "error" in payload:
        error = MhaError(str(payload["error"]))
        error.exit_code = int(payload["exit_code"])
        raise error
    return TpBatch.model_validate(payload)


def run_pipeline_batch(batch: PpBatch, env: RankEnv, on_stage: Callable[[str], None]) -> list[PpVerifyReport]:
    """Join the group as stage ``env.rank``, act out an injected fault if asked, run every pipeline job."""
    from mha_cli.parallel.faults import inject_fault
    from mha_cli.parallel.pipeline_rank import run_stage
    from mha_cli.parallel.rank_run import rank_device

    device_type = batch.pp_jobs[0].device_type
    on_stage("joining the process group")
    store = init_group(env, device_type, max(job.timeout_s for job in batch.pp_jobs))
    on_stage("joined the process group")
    if any(job.pp * job.tp != env.world_size for job in batch.pp_jobs):
        wanted = sorted({job.pp * job.tp for job in batch.pp_jobs})
        raise MhaError(f"the jobs ask for {wanted} processes; WORLD_SIZE is {env.world_size}")
    inject_fault(env.rank)
    device = rank_device(device_type, env.local_rank)
    reports = [run_stage(job, env.rank, device, on_stage) for job in batch.pp_jobs]
    on_stage("leaving the process group")
    leave_together(store)
    on_stage("left the process group")
    return [report for report in reports if report is not None]


def read_batch(text: str) -> TpBatch | PpBatch:
    """The launcher's job file: tensor-parallel jobs, or pipeline ones (``pp_jobs``)."""
    return PpBatch.model_validate_json(text) if '"pp_jobs"' in text[:64] else TpBatch.model_validate_json(text)


def run_batch(
    batch: TpBatch | None, args: argparse.Namespace, env: RankEnv, on_stage: Callable[[str], None]
) -> list[TpVerifyReport]:
    """Join the group, get the jobs (``batch``, or planned by rank 0 under torchrun), act out an injected fault
    if asked, run every job; rank 0 returns the reports."""
    from mha_cli.parallel.faults import inject_fault
    from mha_cli.parallel.plan import resolve_tp_device
    from mha_cli.parallel.rank_run import rank_device, run_job

    if batch is not None:
        device_type, timeout_s = batch.jobs[0].plan.device_type, max(job.timeout_s for job in batch.jobs)
    else:
        device_type, timeout_s = resolve_tp_device(args.device, env.world_size), args.tp_timeout
    on_stage("joining the process group")
    store = init_group(env, device_type, timeout_s) if env.world_size > 1 else None
    on_stage("joined the process group")
    if batch is None:
        batch = planned_batch(args, env)
    if any(job.tp != env.world_size for job in batch.jobs):
        raise MhaError(f"the jobs ask for tp {sorted({job.tp for job in batch.jobs})}; WORLD_SIZE is {env.world_size}")
    inject_fault(env.rank)
    device = rank_device(device_type, env.local_rank)
    reports = [run_job(job, env.rank, device, on_stage) for job in batch.jobs]
    if store is not None:
        on_stage("leaving the process group")
        leave_together(store)
        on_stage("left the process group")
    return [report for report in reports if report is not None]


Emit = Callable[[list[TpVerifyReport], bool], None]
"""Prints rank 0's reports under torchrun: (reports, --json)."""


def print_json(reports: list[TpVerifyReport], as_json: bool) -> None:
    """The reports as JSON, one object each (``as_json`` aside: a worker started without the CLI renders no tables)."""
    for report in reports:
        print(report.model_dump_json(indent=2))


def main(argv: list[str] | None = None, emit: Emit = print_json) -> int:
    """Run this rank; rank 0 writes the launcher's result file, or hands its reports to ``emit`` under torchrun."""
    die_with_parent()
    args = parse_args(argv)
    env = RankEnv.from_environ()
    try:
        batch = read_batch(args.job.read_text()) if args.job else None
        marker = _stage_marker(args.run_dir, env.rank)
        if isinstance(batch, PpBatch):
            reports: list[Report] = list(run_pipeline_batch(batch, env, marker))
        else:
            reports = list(run_batch(batch, args, env, marker))
        close_group()
        marker("closed the process group")
        if env.rank == 0:
            _emit(reports, args, emit)
            if args.run_dir is None and not all(report.passed for report in reports):
                return EXIT_CHECK_FAILED  # under torchrun, rank 0's code is the run's
        return 0
    except BaseException as exc:  # every failure becomes one line and an exit code the launcher reads
        code, message = _describe(exc)
        print(f"rank {env.rank}: {message}", file=sys.stderr, flush=True)
        if args.run_dir is not None:
            record = {"message": message, "exit_code": code, "collateral": _is_peer_failure(exc)}
            (args.run_dir / ERROR_FILE.format(rank=env.rank)).write_text(json.dumps(record))
        return code
    finally:
        with contextlib.suppress(Exception):  # leaving a broken group must not hide the run's own error
            close_group()


def exit_at_once(code: int) -> NoReturn:
    """End this rank's process with ``code``, stdout and stderr flushed, skipping the interpreter's teardown.

    By then the process group is closed and the result written; what teardown would still do is destroy
    torch's leftover gloo objects (threads, connections, work items holding tensors) while the interpreter
    shuts down, which can abort a rank whose work is done (SIGABRT, torch PR #179291 describes one path).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _stage_marker(run_dir: Path | None, rank: int) -> Callable[[str], None]:
    if run_dir is None:
        return lambda stage: None
    return lambda stage: mark_stage(run_dir, rank, stage)


def _emit(reports: list[Report], args: argparse.Namespace, emit: Emit) -> None:
    if args.run_dir is not None:  # the launcher reads it; written whole, then renamed into place
        partial = args.run_dir / (RESULT_FILE + ".partial")
        partial.write_text(json.dumps([report.model_dump(mode="json") for report in reports]))
        os.replace(partial, args.run_dir / RESULT_FILE)
        return
    emit(reports, args.json)  # type: ignore[arg-type]  # torchrun runs tensor-parallel jobs only


def _describe(exc: BaseException) -> tuple[int, str]:
    """(exit code, one line) for an error on a rank."""
    if isinstance(exc, MhaError):
        return exc.exit_code, exc.message
    if isinstance(exc, KeyboardInterrupt):
        return 130, "interrupted"
    if isinstance(exc, SystemExit):
        return (exc.code if isinstance(exc.code, int) else EXIT_CHECK_FAILED), f"exited ({exc.code})"
    from mha_cli.nn.device import is_out_of_memory

    first_line = (str(exc).strip().splitlines() or [""])[0]
    message = f"{exc.__class__.__name__}: {first_line}"
    if is_out_of_memory(exc):
        return EXIT_OUT_OF_MEMORY, f"out of memory: {message}"
    return EXIT_CHECK_FAILED, message


def _is_peer_failure(exc: BaseException) -> bool:
    """Whether the error is a collective failing because another rank went away (not this rank's own fault)."""
    import torch.distributed as dist

    if isinstance(exc, dist.DistError):
        return True
    text = str(exc).lower()
    return any(word in text for word in ("connection closed", "connection reset", "timed out", "gloo"))


if __name__ == "__main__":
    exit_at_once(main())
