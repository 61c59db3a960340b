"""``mha calibrate``: measure this machine's rates and fixed costs into a device profile for the cost model.

Exit codes: 0 the profile was written; 1 the machine was too unstable to calibrate (``calibrate.stability``: a
rate's passes more than 2.25x apart, or the held-out decoder outside 0.67-1.5x of its prediction, in each of 3
attempts; no profile written); 2 bad input (an option, a profile of that name already there without ``--force``, a
result file it cannot read); 3 the device ran out of memory. torch is imported inside the command
only, and not at all with ``--from`` (``cli.calibrate_from``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mha_cli.cli.options import (
    AsyncSchedulingOpt,
    BlockSizeOpt,
    EngineOpt,
    ForceOpt,
    JsonOpt,
    KvCacheGibOpt,
    KvDtypeOpt,
    MaxBatchedTokensOpt,
    MaxNumSeqsOpt,
    UtilisationOpt,
    WeightDtypeOpt,
    kv_cache_bytes,
    named,
    named_path,
)
from mha_cli.cli.output import Output
from mha_cli.cli.progress import stage_progress
from mha_cli.core.cost.profile import band_words, measured_within
from mha_cli.core.cost.store import check_profile_name, profile_path
from mha_cli.core.errors import BadInputError
from mha_cli.core.torch_inputs import check_device_option

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.calibrate.run import CalibrationResult
    from mha_cli.cli.app import CommandRegistry

DTYPES = ("bf16", "fp16", "fp32")


MEASURING_ONLY = (
    ("--device", "device", "the fit prices --target's GPUs"),
    ("--dtype", "dtype", "the fit's dtype is the server's weights' (--weight-dtype)"),
    ("--tp", "tp", "the server's GPUs are --target's (2xh100 for tp 2)"),
)
"""Options only the measuring run reads, and what stands for each with --from."""


def calibrate(
    ctx: typer.Context,
    sources: Annotated[
        list[Path] | None,
        typer.Option(
            "--from",
            parser=named_path("--from"),
            help="Fit the profile to benchmark results instead of measuring this machine: a result file (vllm bench"
            " serve --save-result, SGLang bench_serving, genai-perf, GuideLLM), a folder of them, or a quoted pattern"
            " ('results/*.json'); repeat for more.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="With --from: the model the runs served (a preset, Hugging Face id, model folder or config file).",
            show_default=False,
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target", help="With --from: what the server ran on (cpu: this machine; 2xh100).", show_default=False
        ),
    ] = None,
    hold_out: Annotated[
        list[str] | None,
        typer.Option(
            "--hold-out",
            help="With --from: runs whose file name contains this are not fitted, only predicted (repeat). Default:"
            " every third run.",
            show_default=False,
        ),
    ] = None,
    served_model_name: Annotated[
        str | None,
        typer.Option(
            "--served-model-name", help="With --from: the model name the runs report for --model.", show_default=False
        ),
    ] = None,
    engine: EngineOpt = None,
    weight_dtype: WeightDtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    block_size: BlockSizeOpt = None,
    gpu_memory_utilization: UtilisationOpt = None,
    max_num_batched_tokens: MaxBatchedTokensOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    kv_cache_gib: KvCacheGibOpt = None,
    async_scheduling: AsyncSchedulingOpt = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help="With --from: the profile the fit starts from (default: the target's prior; on the cpu target the"
            " newest profile `mha calibrate --device cpu` measured, never an earlier fit, else nominal rates).",
            show_default=False,
        ),
    ] = None,
    device: Annotated[str, typer.Option("--device", help="auto (cuda when present), cuda or cpu.")] = "auto",
    dtype: Annotated[str, typer.Option("--dtype", help="The dtype measured: bf16, fp16 or fp32.")] = "bf16",
    tp: Annotated[
        int, typer.Option("--tp", help="Also measure an all-reduce over N local ranks (gloo on CPU, NCCL on GPUs).")
    ] = 1,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="Profile name (default: cpu-DTYPE, or cuda-GPU-DTYPE; with --from, TARGET-ENGINE-fit).",
            show_default=False,
        ),
    ] = None,
    allow_unstable: Annotated[
        bool,
        typer.Option(
            "--allow-unstable",
            help="Write the profile even when the machine was unstable (measured once, no retries; its band is the"
            " held-out error as measured, and the profile records the verdict). Default: refuse with exit 1.",
        ),
    ] = False,
    force: ForceOpt = False,
    json: JsonOpt = False,
) -> None:
    """Measure this device (GEMV and GEMM over sizes, attention, operator and kernel overhead, all-reduce) into a profile for the cost model; --profile NAME then predicts with it (verify, plan, kv, recommend, bench).

    About half a minute on a CPU. The profile is checked on a decoder it was not fitted on, and that error is the band its predictions carry.

    It judges its own stability: each rate's slowest of 5 passes must be within 2.25x of its fastest, and the held-out decoder's measured / predicted within 0.67-1.5 (decode and prefill). An unstable attempt is measured again (3 attempts in all, each retry stated on the terminal); if the last is unstable too, it exits 1 with one line naming the rate and its spread or the held-out ratio, and writes no profile. Run it on an idle machine, or pass --allow-unstable to keep a single attempt whatever its verdict (recorded in the profile).

    With --from: fit the profile to benchmark results of a real server instead (seconds, no torch): every run is replayed in the simulated serving loop; the held-out runs' error is the band. Needs --model and --target, and the server's settings (--max-num-seqs, --max-num-batched-tokens, --kv-cache-gib ...) where they were not the engine's defaults.
    """
    if name is not None:  # an empty --name "$UNSET" is refused, not replaced by the default (trial 287 #1)
        check_profile_name(name)
    if sources:
        if allow_unstable:
            raise BadInputError("--allow-unstable goes with measuring this machine, not with --from: drop it")
        for flag, parameter, why in MEASURING_ONLY:  # read only when measuring: with --from they changed nothing
            if named(ctx, parameter):
                raise BadInputError(f"{flag} goes with measuring this machine, not with --from: {why}")
        from mha_cli.cli.calibrate_from import calibrate_from_results
        from mha_cli.core.engine.share_spelling import engine_with_share

        engine = engine_with_share(engine, gpu_memory_utilization)  # its "use" line names the engine fitted (391 #7)
        calibrate_from_results(
            sources, model=model, target=target, hold_out=hold_out or [], served_model_name=served_model_name,
            profile=profile, name=name, force=force, json=json,
            deployment={
                "engine": engine, "weight_dtype": weight_dtype, "kv_dtype": kv_dtype, "block_size": block_size,
                "gpu_memory_utilization": gpu_memory_utilization, "max_num_batched_tokens": max_num_batched_tokens,
                "max_num_seqs": max_num_seqs, "kv_cache_memory_bytes": kv_cache_bytes(kv_cache_gib),
                "async_scheduling": async_scheduling,
            },
        )  # fmt: skip
        return
    for flag, value in (("--model", model), ("--target", target), ("--hold-out", hold_out), ("--profile", profile)):
        if value:
            raise BadInputError(f"{flag} goes with --from (fitting to benchmark results): add --from RESULTS")
    if dtype not in DTYPES:
        raise BadInputError(f"--dtype {dtype!r}: give bf16, fp16 or fp32")
    check_device_option(device)
    if not 1 <= tp <= 64:
        raise BadInputError(f"--tp {tp}: give 1 to 64 local ranks for the all-reduce")
    from mha_cli.calibrate.run import STAGES

    with stage_progress("calibrate", ("import torch", *STAGES)) as on_stage:
        on_stage("import torch")
        from mha_cli.calibrate.run import default_name, run_calibration
        from mha_cli.nn.device import device_name, resolve_device

        target = resolve_device(device)
        chosen = name or default_name(target.type, device_name(target), dtype)
        path = profile_path(chosen)
        if path.exists() and not force:  # before a minute of measuring
            raise BadInputError(f"profile {chosen} exists ({path}): pass --force to replace it, or --name another")
        from mha_cli.calibrate.stability import UnstableCalibrationError

        try:
            result = run_calibration(
                device=device, dtype=dtype, tp=tp, name=chosen, allow_unstable=allow_unstable, on_stage=on_stage,
                on_retry=_retry_note,
            )  # fmt: skip
        except UnstableCalibrationError as unstable:  # a verdict (exit 1): under --json, its object, as documented
            if json:
                from mha_cli.calibrate.run import UnstableCalibration

                Output(json).emit(UnstableCalibration(error=unstable.message, attempts=unstable.verdicts), _no_text)
            raise
    from mha_cli.core.config_io import write_text_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, result.profile.model_dump_json(indent=1) + "\n", force=force)
    result = result.model_copy(update={"path": str(path)})
    Output(json).emit(result, render_calibration)


def _no_text(console: object, result: object) -> None:
    """Nothing on stdout without --json: the error line says it."""


def _retry_note(message: str) -> None:
    """A retry, stated above the progress bar; like the bar, only on a terminal (a script reads the attempts in the
    result, or the refusal's line)."""
    from mha_cli.cli.output import stderr_console

    console = stderr_console()
    if console.is_terminal:
        from rich.text import Text

        console.print(Text(message, style="yellow"))


def render_calibration(console: Console, result: CalibrationResult) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    profile = result.profile
    console.print(f"[bold]Profile {escape(profile.name)}[/bold]  {escape(profile.source)}  ({result.seconds:.0f} s)")
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1))
    for column in ("rate", "at", "achieved"):
        table.add_column(column, justify="right" if column != "rate" else "left")
    for label, curve, unit, size_unit in (
        ("GEMV bandwidth", profile.weight_bandwidth, "GB/s", "B"),
        ("attention-decode bandwidth", profile.cache_bandwidth, "GB/s", "B"),
        ("matmul", profile.matmul, "GFLOP/s", "rows"),
        ("prefill attention", profile.attention_flops, "GFLOP/s", "queries"),
    ):
        for i, (size, rate) in enumerate(zip(curve.sizes, curve.rates, strict=True)):
            at = f"{size / 2**20:g} MiB" if size_unit == "B" else f"{size:g} {size_unit}"
            table.add_row(label if i == 0 else "", at, f"{rate / 1e9:,.1f} {unit}")
    console.print(table)
    console.print(
        f"operator dispatch {profile.dispatch_overhead_s * 1e6:.2f} us, kernel {profile.kernel_overhead_s * 1e6:.2f} us"
    )
    if profile.collective is not None:
        c = profile.collective
        console.print(
            f"all-reduce ({c.link}): latency {c.latency_s * 1e6:.1f} us, {c.bandwidth_bytes_per_s / 1e9:.2f} GB/s"
        )
    for row in result.check:
        console.print(
            f"check, held-out decoder {row.phase}: measured {row.measured_ms:.2f} ms, predicted {row.predicted_ms:.2f} ms"
            f" (x{row.ratio:.2f})"
        )
    *earlier, verdict = result.attempts
    for n, unstable in enumerate(earlier, start=1):
        console.print(f"attempt {n} was unstable, measured again: {escape(unstable.summary)}")
    state = "stable" if verdict.stable else "[bold red]UNSTABLE[/bold red], kept by --allow-unstable"
    console.print(f"{state}: {escape(verdict.summary)}")
    console.print(
        f"predictions from it carry {band_words(*measured_within(profile.relative_error, profile.kind, profile.source))}; written to {escape(str(result.path))}"
    )
    console.print(f"use it: mha verify SOURCE --profile {escape(profile.name)}")


def register(registry: CommandRegistry) -> None:
    registry.add("calibrate", calibrate)
