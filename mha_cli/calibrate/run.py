"""``mha calibrate``: measure this machine, fit a profile, check it on a decoder it was not fitted on.

Stages (``STAGES``, reported through ``on_stage`` for a progress bar): the microbenchmarks
(``calibrate.microbench``, ``PASSES`` interleaved passes; the all-reduce over ``tp`` local ranks when tp > 1), the fit
(``core.cost.calibration``), then the check: a held-out decoder (width 1,024, 4 layers, GQA 16/4, vocabulary
32,000) is built, its decode step and its prefill timed, and both predicted from the new profile with the
operators they dispatched; the larger of the two relative errors becomes the profile's ``relative_error``
(at least ``MIN_RELATIVE_ERROR``), the band its predictions carry.

Then the judgement (``calibrate.stability``): each rate's spread between its passes and the held-out ratios. An
unstable attempt is measured again, up to ``ATTEMPTS`` in all (each retry reported through ``on_retry``); when the
last is unstable too, ``UnstableCalibrationError`` (exit 1) and no profile. ``allow_unstable``: one attempt, kept
whatever its verdict, which the profile records (``constants["stability"]``).
"""

from __future__ import annotations

import datetime
import statistics
import time
from collections.abc import Callable

import torch

from mha_cli.calibrate import microbench
from mha_cli.calibrate.collective import all_reduce_samples
from mha_cli.calibrate.stability import ATTEMPTS, CheckRow, Stability, UnstableCalibrationError, judge_stability
from mha_cli.core.cost.calibration import Sample, profile_from_samples
from mha_cli.core.cost.eager import predict_eager
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.work import StepShape, decode_shape, prefill_shape
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec
from mha_cli.nn.device import device_name, resolve_device
from mha_cli.nn.dispatch import count_dispatches
from mha_cli.nn.kv_cache import CACHE_DTYPES
from mha_cli.nn.model import build_model
from mha_cli.nn.timing import time_calls
from mha_cli.verify.plan import device_free_bytes

STAGES = ["dispatch", "weight", "cache", "matmul", "attention", "kernel", "all_reduce", "check"]
MIN_RELATIVE_ERROR = 0.05
PASSES = 5
"""Passes over every microbenchmark; each size's rate is the median over the passes."""
CHECK_MODEL = ModelSpec(
    name="calibration-check", d_model=1024, n_layers=4, n_heads=16, n_kv_heads=4, vocab_size=32000, d_ff=2816
)
CHECK_CONTEXT, CHECK_PROMPT = 512, 128


class UnstableCalibration(Record):
    """``mha calibrate --json``'s object when every attempt was unstable (exit 1, no profile written)."""

    written: bool = False
    error: str
    """The one line the command also prints on stderr."""
    attempts: list[Stability]
    """The verdict on each attempt, in order."""


class CalibrationResult(Record):
    written: bool = True
    """A profile was written (``UnstableCalibration``'s is false)."""
    profile: DeviceProfile
    check: list[CheckRow]
    samples: list[Sample]
    seconds: float
    attempts: list[Stability]
    """The verdict on each attempt, in order; the profile is the last one's."""
    path: str | None = None
    """Where the profile was written."""


def _timed_phase(step: Callable[[], object], device: torch.device, reps: int) -> tuple[float, int]:
    """(median seconds, dispatched operators) of ``step``, counted on a warm-up call."""
    step()
    with count_dispatches() as counter:
        step()
    times, _ = time_calls(step, device, 1, reps)
    return statistics.median(times), counter.total


def check_profile(profile: DeviceProfile, device: torch.device, dtype: torch.dtype, dtype_name: str) -> list[CheckRow]:
    """The held-out decoder's decode step and prefill, measured and predicted."""
    model = build_model(CHECK_MODEL, dtype=dtype, device=device)
    caches = model.new_cache(1, CHECK_CONTEXT + 1, dtype=dtype)
    prompt = torch.randint(CHECK_MODEL.embeddings.vocab_size, (1, CHECK_PROMPT), device=device)  # (1, p)
    token = prompt[:, -1:]  # (1, 1)
    rows = []
    phases: list[tuple[str, Callable[[], object], StepShape]] = [
        ("decode", lambda: model(token, caches, CHECK_CONTEXT), decode_shape(1, CHECK_CONTEXT)),
        ("prefill", lambda: model(prompt, caches, 0), prefill_shape(CHECK_PROMPT, all_logits=True)),
    ]
    with torch.inference_mode():
        for phase, step, shape in phases:
            seconds, dispatches = _timed_phase(step, device, 10 if phase == "decode" else 5)
            predicted = predict_eager(CHECK_MODEL, shape, profile, dispatches=dispatches, dtype=dtype_name).seconds
            rows.append(CheckRow(phase=phase, measured_ms=seconds * 1e3, predicted_ms=predicted * 1e3,
                                 ratio=seconds / predicted, dispatches=dispatches))  # fmt: skip
    return rows


def measure_passes(
    target: torch.device, torch_dtype: torch.dtype, on_stage: Callable[[str], None]
) -> list[list[Sample]]:
    """``PASSES`` interleaved passes over the microbenchmarks, each pass's samples in the same order."""
    free = device_free_bytes(target.type, target.index)
    rows = microbench.CUDA_ROWS if target.type == "cuda" else microbench.CPU_ROWS
    queries = microbench.CUDA_QUERIES if target.type == "cuda" else microbench.CPU_QUERIES
    pool = microbench.Pool(target, torch_dtype, microbench.pool_bytes(target, free))
    weight_sizes, cache_sizes = (
        microbench.fitting(microbench.WEIGHT_SIZES, free),
        microbench.fitting(microbench.CACHE_SIZES, free),
    )
    share = 1 / PASSES
    passes = []
    for _ in range(PASSES):  # interleaved, so a drift of the machine's speed spreads over every curve alike
        samples: list[Sample] = []
        on_stage("dispatch")
        samples += microbench.dispatch_samples(target, torch_dtype, share)
        on_stage("weight")
        samples += microbench.weight_samples(target, torch_dtype, weight_sizes, pool, share)
        on_stage("cache")
        samples += microbench.cache_samples(target, torch_dtype, cache_sizes, pool, share)
        on_stage("matmul")
        samples += microbench.matmul_samples(target, torch_dtype, rows, share)
        on_stage("attention")
        samples += microbench.attention_samples(target, torch_dtype, queries, share)
        passes.append(samples)
    return passes


def _attempt(
    target: torch.device, dtype: str, tp: int, name: str, on_stage: Callable[[str], None]
) -> tuple[DeviceProfile, list[CheckRow], list[Sample], Stability]:
    """One measurement, fit and check, and the verdict on it."""
    torch_dtype = CACHE_DTYPES[dtype]
    torch.manual_seed(0)
    passes = measure_passes(target, torch_dtype, on_stage)
    samples = [sample for one_pass in passes for sample in one_pass]
    on_stage("kernel")
    if target.type == "cuda":
        samples += microbench.kernel_samples(target)
    on_stage("all_reduce")
    if tp > 1:
        samples += all_reduce_samples(tp, target.type)
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    gpu = device_name(target)
    profile = profile_from_samples(
        samples, name=name, device=target.type, device_name=gpu, dtype=dtype, created=created,
        link="nccl" if target.type == "cuda" else "gloo",
    )  # fmt: skip
    on_stage("check")
    check = check_profile(profile, target, torch_dtype, dtype)
    error = max(MIN_RELATIVE_ERROR, *(abs(row.ratio - 1) for row in check))
    return profile.model_copy(update={"relative_error": error}), check, samples, judge_stability(passes, check)


def run_calibration(
    *,
    device: str = "auto",
    dtype: str = "bf16",
    tp: int = 1,
    name: str | None = None,
    allow_unstable: bool = False,
    on_stage: Callable[[str], None] = lambda stage: None,
    on_retry: Callable[[str], None] = lambda message: None,
) -> CalibrationResult:
    """Measure ``device`` in ``dtype`` (see the module docstring); the profile is named ``name`` or
    ``{device}-{dtype}`` (``cuda-...`` with the GPU's model token). Raises ``UnstableCalibrationError`` when every
    attempt was unstable, unless ``allow_unstable`` (then one attempt, kept)."""
    if dtype not in CACHE_DTYPES:
        raise BadInputError(f"--dtype {dtype}: calibrate measures fp32, fp16 or bf16")
    if not 1 <= tp <= 64:
        raise BadInputError(f"--tp {tp}: give 1 to 64 local ranks for the all-reduce")
    target = resolve_device(device)
    if target.type == "cuda" and tp > torch.cuda.device_count():
        raise BadInputError(f"--tp {tp} needs {tp} GPUs; this machine has {torch.cuda.device_count()}")
    start = time.perf_counter()
    name = name or default_name(target.type, device_name(target), dtype)
    attempts = 1 if allow_unstable else ATTEMPTS
    verdicts: list[Stability] = []
    while True:
        profile, check, samples, verdict = _attempt(target, dtype, tp, name, on_stage)
        verdicts.append(verdict)
        if verdict.stable or allow_unstable:
            break
        if len(verdicts) == attempts:
            raise UnstableCalibrationError(verdict, attempts, verdicts)
        on_retry(f"calibrate: attempt {len(verdicts)} of {attempts} was unstable, measuring again: {verdict.summary}")
    kept = "stable" if verdict.stable else "UNSTABLE, kept by --allow-unstable"
    tries = f", attempt {len(verdicts)} of {attempts}" if len(verdicts) > 1 else ""
    constants = {**profile.constants, "stability": f"{kept}{tries}: {verdict.summary}"}
    return CalibrationResult(profile=profile.model_copy(update={"constants": constants}), check=check,
                             samples=samples, seconds=time.perf_counter() - start, attempts=verdicts)  # fmt: skip


def default_name(device_type: str, gpu: str, dtype: str) -> str:
    """``cpu-bf16``; on CUDA ``cuda-h200-bf16`` (the device name's model token, lower case)."""
    if device_type != "cuda":
        return f"cpu-{dtype}"
    words = [w for w in gpu.lower().replace("-", " ").split() if any(c.isdigit() for c in w)]
    return f"cuda-{words[0] if words else 'gpu'}-{dtype}"
