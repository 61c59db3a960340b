"""``mha verify SOURCE``: build the config's decoder in torch, measure weights, cache memory and latency.

Exit codes: 0 every check passed; 1 a threshold, the numerics check or the induction hook (``--hook``)
failed (the report is still printed), or with --tp N > 1 a rank failed or hung (one line, every rank
stopped); 2 bad input; 3 the device does not have the memory (nothing is allocated). --tp N > 1 hands
over to ``verify_tp``. torch is imported inside the command only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from mha_cli.cli.options import (
    JsonOpt,
    KvDtypeOpt,
    MlaCacheOpt,
    ProfileOpt,
    SourceArg,
    SourceBatchOpt,
    SourceSeqOpt,
)
from mha_cli.cli.output import Output, stderr_console
from mha_cli.cli.progress import stage_progress
from mha_cli.core.deployment import for_local_ranks, merge_deployment, refuse_file_tp
from mha_cli.core.errors import EXIT_CHECK_FAILED, BadInputError
from mha_cli.core.rules.catalog import TEST_ACCURACY
from mha_cli.core.sources import load_source
from mha_cli.core.torch_inputs import check_device_option

if TYPE_CHECKING:
    from mha_cli.cli.app import CommandRegistry
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.hook.result import HookResult
    from mha_cli.verify.report import VerifyReport

R = TypeVar("R", bound="VerifyReport")  # a verify report, single-device or tensor-parallel

DeviceOpt = Annotated[str, typer.Option("--device", help="auto (cuda when present), cuda or cpu.")]
LayersOpt = Annotated[
    int | None,
    typer.Option(
        "--layers",
        help="Decoder layers to build (default: all on a GPU, 2 on CPU); the rest is extrapolated, labelled.",
        show_default=False,
    ),
]
PrefillTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--prefill-tokens", help="Tokens to prefill (default: --seq on a GPU, at most 128 on CPU).", show_default=False
    ),
]
RepsOpt = Annotated[int, typer.Option("--reps", help="Timed repetitions (median reported; prefill: at most 3 on CPU).")]
MaxKvGibOpt = Annotated[
    float | None,
    typer.Option(
        "--max-kv-gib",
        help="Fail (exit 1) if the whole model's cache (all layers, all tp ranks) exceeds this many GiB.",
        show_default=False,
    ),
]
MaxDecodeMsOpt = Annotated[
    float | None,
    typer.Option(
        "--max-decode-ms",
        help="Fail (exit 1) if a decode step of the whole model (every layer, median ms) takes longer.",
        show_default=False,
    ),
]
ToleranceOpt = Annotated[
    float | None,
    typer.Option(
        "--tolerance",
        help="Relative error allowed between cached decode and the full forward (default: fp32 1e-4, fp16 2e-3, bf16 2e-2).",
        show_default=False,
    ),
]
TpOpt = Annotated[
    int | None,
    typer.Option(
        "--tp",
        "--tensor-parallel-size",
        help="Tensor-parallel ranks: N > 1 runs N processes on torch.distributed (gloo on CPU, NCCL on N GPUs) and"
        " checks them against one device. Default: the config's tp, else the target's device count, else 1.",
        show_default=False,
    ),
]
PpOpt = Annotated[
    int | None,
    typer.Option(
        "--pp",
        "--pipeline-parallel-size",
        help="Pipeline stages: N > 1 runs N processes, each one stage of the stack (its layers; the embedding on the"
        " first, the head on the last), checks each stage's bytes and the output against one device.",
        show_default=False,
    ),
]
IMPORT_STAGE = "importing torch"
"""The first stage the progress line shows: the torch import takes seconds on a cold start."""
TpTimeoutOpt = Annotated[
    float,
    typer.Option("--tp-timeout", help="With --tp N > 1: stop every rank (exit 1) if the run takes longer (seconds)."),
]
HookOpt = Annotated[
    bool,
    typer.Option(
        "--hook",
        help="Also run the testability hook (rule MHA050): train a scaled-down 2-layer copy of the design's attention"
        f" on the induction task (A B ... A -> B) and a 1-layer control; exit 1 if the copy scores below"
        f" {TEST_ACCURACY:.0%}. About 1 to 6 minutes on 2 CPU cores (it stops once the copy passes, at most 1,500"
        " steps; an MLA copy trains at a third of the learning rate).",
    ),
]
HookLayersOpt = Annotated[
    int | None,
    typer.Option(
        "--hook-layers", help="Layers of the hook's copy (default 2; the control stays 1 layer).", show_default=False
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the hook's weights and data (--hook).")]


def verify(
    source: SourceArg,
    device: DeviceOpt = "auto",
    seq: SourceSeqOpt = None,
    batch: SourceBatchOpt = None,
    layers: LayersOpt = None,
    prefill_tokens: PrefillTokensOpt = None,
    reps: RepsOpt = 10,
    kv_dtype: KvDtypeOpt = None,
    mla_cache: MlaCacheOpt = None,
    max_kv_gib: MaxKvGibOpt = None,
    max_decode_ms: MaxDecodeMsOpt = None,
    tolerance: ToleranceOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    tp_timeout: TpTimeoutOpt = 900.0,
    hook: HookOpt = False,
    hook_layers: HookLayersOpt = None,
    seed: SeedOpt = 0,
    profile: ProfileOpt = None,
    json: JsonOpt = False,
) -> None:
    """Build the config's decoder in torch; compare weight and cache bytes with the calculator; time prefill and decode.

    The times are also predicted by the cost model on a device profile (`mha calibrate` makes one for this
    machine) and the measured / predicted ratio reported.

    With --hook, also train a scaled copy of the attention on the induction task (the testability hook).
    """
    # Every check that needs no device runs before torch is imported (seconds): bad input is refused at once.
    from mha_cli.verify.plan import STAGES, check_buildable, deployment_tp_degree, refuse_split_hybrid, validate_options

    layers_of_hook = hook_layers_to_run(hook, hook_layers, seed)

    validate_options(
        reps=reps, layers=layers, prefill_tokens=prefill_tokens, tolerance=tolerance, max_kv_gib=max_kv_gib,
        max_decode_ms=max_decode_ms,
    )  # fmt: skip
    check_device_option(device)
    if profile is not None:
        from mha_cli.core.cost.store import load_profile

        load_profile(profile)  # a profile that cannot be read is refused before torch is imported
    if not tp_timeout > 0:
        raise BadInputError(f"--tp-timeout must be greater than 0 (got {tp_timeout:g})")
    loaded = load_source(source)
    refuse_file_tp(loaded.origin, loaded.deployment, loaded.model, tp)
    deployment = merge_deployment(
        for_local_ranks(loaded.deployment, tp),
        model=loaded.model,
        seq_len=seq,
        batch=batch,
        kv_dtype=kv_dtype,
        mla_cache=mla_cache,
        tp=tp,
    )
    check_buildable(loaded.model, deployment, layers=layers, prefill_tokens=prefill_tokens)
    refuse_split_hybrid(loaded.model, pp=pp)
    if layers_of_hook is not None:  # after verify's own refusals, which name what the torch ring lacks
        check_hook_copy(loaded.model, layers_of_hook)
    tp_degree = deployment_tp_degree(deployment)
    if pp is not None and pp > 1:
        flags = (("--hook", hook), ("--max-kv-gib", max_kv_gib), ("--max-decode-ms", max_decode_ms),
                 ("--profile", profile))  # fmt: skip
        refused = [flag for flag, given in flags if given]

        if refused:
            raise BadInputError(f"--pp does not combine with {', '.join(refused)} yet: run them without --pp")
        from mha_cli.cli.verify_pp import verify_pipeline

        verify_pipeline(
            loaded, deployment, pp=pp, tp=tp_degree, device=device, layers=layers, prefill_tokens=prefill_tokens,
            reps=reps, tolerance=tolerance, timeout_s=tp_timeout, json=json,
        )  # fmt: skip
        return
    if pp is not None and pp < 1:
        raise BadInputError(f"--pp {pp}: give 1 (plain verify, one stage) or 2 or more pipeline stages")
    if tp_degree > 1:  # N ranks on torch.distributed
        from mha_cli.cli.verify_tp import verify_tensor_parallel

        verify_tensor_parallel(
            loaded, deployment, tp=tp_degree, device=device, layers=layers, prefill_tokens=prefill_tokens, reps=reps,
            tolerance=tolerance, max_kv_gib=max_kv_gib, max_decode_ms=max_decode_ms, timeout_s=tp_timeout, json=json,
            profile=profile,
            finish=lambda report: add_hook(report, loaded.model, layers_of_hook, seed=seed, device=device),
        )  # fmt: skip
        return
    with stage_progress("verify", (IMPORT_STAGE, *STAGES)) as on_stage:
        on_stage(IMPORT_STAGE)  # seconds with nothing else on screen
        from mha_cli.verify.run import run_verify  # torch is imported here, only for this command

        report = run_verify(
            loaded, deployment, device=device, layers=layers, prefill_tokens=prefill_tokens, reps=reps,
            max_kv_gib=max_kv_gib, max_decode_ms=max_decode_ms, tolerance=tolerance, profile=profile,
            on_stage=on_stage,
        )  # fmt: skip
    report = add_hook(report, loaded.model, layers_of_hook, seed=seed, device=device)
    from mha_cli.cli.render_verify import render_verify

    Output(json).emit(report, render_verify)
    if not report.passed:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


# The testability hook (--hook) ------------------------------------------------------------------


def hook_layers_to_run(hook: bool, hook_layers: int | None, seed: int) -> int | None:
    """The copy's depth when --hook is on (None when off); bad values are exit 2, before torch is imported."""
    from mha_cli.hook.sizes import MAX_HOOK_LAYERS

    if not hook:
        if hook_layers is not None:
            raise BadInputError("--hook-layers applies to the induction hook only: add --hook")
        return None
    layers = 2 if hook_layers is None else hook_layers
    if not 2 <= layers <= MAX_HOOK_LAYERS:
        raise BadInputError(
            f"--hook-layers must be between 2 and {MAX_HOOK_LAYERS} (the 1-layer model is the control), not {layers}"
        )
    if seed < 0:
        raise BadInputError(f"--seed must be 0 or more, not {seed}")
    return layers


def check_hook_copy(model: ModelSpec, layers: int) -> None:
    """Fail now (exit 2), not after the verify run, if the design's scaled copy cannot be made."""
    from pydantic import ValidationError

    from mha_cli.core.validation import describe_validation_error
    from mha_cli.hook.scale import scaled_copy
    from mha_cli.hook.sizes import DEFAULT_SIZE

    try:
        scaled_copy(model, layers, DEFAULT_SIZE)
    except ValidationError as error:
        raise BadInputError(
            f"the induction hook cannot scale this design down: {describe_validation_error(error)}"
        ) from None
    except ValueError as error:
        raise BadInputError(f"the induction hook cannot scale this design down: {error}".splitlines()[0]) from None


def run_hook_with_progress(model: ModelSpec, layers: int, *, seed: int, device: str) -> HookResult:
    """``run_hook`` with a progress bar per trained model on stderr (a terminal only, as ``cli.progress``)."""
    from mha_cli.hook import run as hook_run  # torch

    console = stderr_console()
    if not console.is_terminal:
        return hook_run.run_hook(model, layers=layers, seed=seed, device=device)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    tasks: dict[str, int] = {}
    with Progress(*columns, console=console, transient=True) as progress:

        def on_progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = progress.add_task(label, total=total)
            progress.update(tasks[label], completed=done, total=total)

        return hook_run.run_hook(model, layers=layers, seed=seed, device=device, on_progress=on_progress)


def add_hook(report: R, model: ModelSpec, layers: int | None, *, seed: int, device: str) -> R:
    """The report with the hook run on ``model`` and added (``layers`` None: --hook not given, unchanged)."""
    if layers is None:
        return report
    return with_hook(report, run_hook_with_progress(model, layers, seed=seed, device=device))


def with_hook(report: R, hook: HookResult) -> R:
    """The verify report with the hook's result, its check and its detail added."""
    return report.model_copy(
        update={
            "hook": hook,
            "checks": {**report.checks, "induction_hook": hook.passed},
            "check_details": {**report.check_details, "induction_hook": hook.check_detail},
            "passed": report.passed and hook.passed,
        }
    )


def register(registry: CommandRegistry) -> None:
    registry.add("verify", verify)
