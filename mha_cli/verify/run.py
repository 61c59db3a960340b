"""Run a verification: plan, build and measure one rank, extrapolate to the deployment, check.

Stages (``STAGES``, reported through ``on_stage`` for a progress bar): plan and precheck; build the
stack and allocate its caches; prefill (fills the cache); decode at full context; compare cached
decode with the full forward; measure the copy bandwidth (CPU only) for the roofline.
``build_report(loaded, plan, ranks, ...)`` turns measured ranks into the report: a tensor-parallel
runner that measures every rank in its own process hands all of them to it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from mha_cli.core.byte_units import GIB
from mha_cli.core.cost.profile import DeviceProfile, band_words, measured_within
from mha_cli.core.deployment import mixer_weights_note
from mha_cli.core.errors import OutOfMemoryError
from mha_cli.core.quantities import format_bytes
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.sources import ModelSource
from mha_cli.nn.device import device_name, is_out_of_memory, resolve_device
from mha_cli.verify import measure
from mha_cli.verify.plan import (
    USABLE_FRACTION,
    VerifyPlan,
    device_free_bytes,
    has_state_layers,
    make_plan,
    validate_options,
)
from mha_cli.verify.prediction import Prediction, active_profile, predict_stack
from mha_cli.verify.rank import measure_rank
from mha_cli.verify.report import MemoryPrecheck, RankResult, ScopeFigures, VerifyReport
from mha_cli.verify.scopes import assemble, decode_bytes_read, state_bytes, token_bytes_per_layer


def run_verify(
    loaded: ModelSource,
    deployment: DeploymentSpec,
    *,
    device: str = "auto",
    layers: int | None = None,
    prefill_tokens: int | None = None,
    reps: int = 10,
    max_kv_gib: float | None = None,
    max_decode_ms: float | None = None,
    tolerance: float | None = None,
    free_bytes: Callable[[str, int | None], int | None] | None = None,
    profile: str | None = None,
    on_stage: Callable[[str], None] = lambda stage: None,
) -> VerifyReport:
    """Build ``loaded.model`` under ``deployment`` on ``device`` (rank 0 of its tp) and measure it.

    ``profile`` names the device profile the predicted times use (``verify.prediction.active_profile``).
    ``free_bytes(device_type, index)`` reports free device memory for the precheck (default
    ``device_free_bytes``, looked up at call time so tests can replace it with a small figure).
    Raises ``BadInputError`` (exit 2) for bad options and ``OutOfMemoryError`` (exit 3) when it cannot fit.
    """
    validate_options(
        reps=reps, layers=layers, prefill_tokens=prefill_tokens, tolerance=tolerance, max_kv_gib=max_kv_gib,
        max_decode_ms=max_decode_ms,
    )  # fmt: skip
    on_stage("plan")
    target = resolve_device(device)
    plan = make_plan(
        loaded.model, deployment, device_type=target.type, layers=layers, prefill_tokens=prefill_tokens,
        free_bytes=(free_bytes or device_free_bytes)(target.type, target.index),
    )  # fmt: skip
    chosen = active_profile(profile, target, plan.dtype)  # a bad --profile is refused before any work
    torch.manual_seed(0)
    try:  # every allocation of the run, the bandwidth probe's buffers included, fails as exit 3
        rank = measure_rank(plan, target, reps=reps, tolerance=tolerance, on_stage=on_stage)
        on_stage("bandwidth")
        return build_report(
            loaded, plan, [rank], target, max_kv_gib=max_kv_gib, max_decode_ms=max_decode_ms, profile=chosen,
            single_process=True,
        )  # fmt: skip
    except (RuntimeError, MemoryError) as exc:  # torch.OutOfMemoryError is a RuntimeError too
        if not is_out_of_memory(exc):
            raise
        raise OutOfMemoryError(
            f"the device ran out of memory with {plan.n_layers_built} layer(s) at seq {deployment.seq_len}"
            f" x batch {deployment.batch}: try --layers {max(1, plan.n_layers_built // 2)}, a smaller --batch"
            " or a shorter --seq"
        ) from None


def build_report(
    loaded: ModelSource,
    plan: VerifyPlan,
    ranks: list[RankResult],
    device: torch.device,
    *,
    max_kv_gib: float | None = None,
    max_decode_ms: float | None = None,
    profile: tuple[DeviceProfile | None, str] = (None, "no profile given"),
    single_process: bool = False,
) -> VerifyReport:
    """The report of measured ``ranks`` (``ranks[0]`` gives the top-level, built-stack figures); ``profile`` is
    (the profile the predicted times use, or None; how it was chosen), ``active_profile``'s answer."""
    rank = ranks[0]
    deployment = plan.deployment
    batch, n_model, n_built = deployment.batch, plan.model.n_layers, plan.n_layers_built
    per_rank, whole = assemble(plan, ranks)
    decode_bytes = decode_bytes_read(plan, n_built)
    decode_s = rank.decode.median_ms / 1e3
    peak, peak_source = _peak_bandwidth(device)
    roofline_ms = None if peak is None else decode_bytes / peak * 1e3

    hybrid = has_state_layers(plan.model)
    predicted_state = state_bytes(plan, n_built)
    checks = {"weight_bytes_match": rank.measured_weight_bytes == plan.predicted_weight_bytes}
    checks["cache_bytes_match"] = rank.measured_cache_bytes == plan.predicted_cache_bytes
    if hybrid:
        checks["state_bytes_match"] = rank.measured_state_bytes == predicted_state
    checks["numerics"] = rank.numerics.passed
    if rank.allocator is not None:
        checks["allocator_weights"] = rank.allocator.weights_ok
        checks["allocator_cache"] = rank.allocator.cache_ok
    thresholds: dict[str, float] = {"tolerance": rank.numerics.tolerance}
    if max_kv_gib is not None:
        thresholds["max_kv_gib"] = max_kv_gib
        checks["max_kv_gib"] = whole.cache_bytes <= max_kv_gib * GIB
    if max_decode_ms is not None:
        thresholds["max_decode_ms"] = max_decode_ms
        checks["max_decode_ms"] = whole.decode_ms <= max_decode_ms
    rank_note = f", rank {rank.tp_rank} of {plan.tp}" if plan.tp > 1 else ""
    prediction = None if profile[0] is None else predict_stack(plan, rank, profile[0], single_process=single_process)
    return VerifyReport(
        source=loaded.origin, source_kind=loaded.kind, model_name=plan.model.name, variant=_variant(plan.model),
        mla_cache=plan.mla_cache, device=str(device), device_name=device_name(device), torch_version=torch.__version__,
        dtype=plan.dtype, seq_len=deployment.seq_len, batch=batch, tp=plan.tp,
        ranks_measured=[r.tp_rank for r in ranks], n_layers_model=n_model, n_layers_built=n_built,
        layers_note=plan.layers_note, extrapolated=whole.extrapolated,
        built=f"embedding, {n_built} of {n_model} decoder layers, final norm, LM head{rank_note}",
        predicted_weight_bytes=plan.predicted_weight_bytes, measured_weight_bytes=rank.measured_weight_bytes,
        weight_bytes_per_layer=rank.layer_weight_bytes[0],
        predicted_weight_bytes_per_layer=plan.predicted_layer_weight_bytes[0],
        predicted_cache_bytes=plan.predicted_cache_bytes, measured_cache_bytes=rank.measured_cache_bytes,
        predicted_bytes_per_token_per_layer=token_bytes_per_layer(plan), predicted_state_bytes=predicted_state,
        measured_state_bytes=rank.measured_state_bytes, weights_approximate=mixer_weights_note(plan.model) is not None,
        cache_fill=rank.cache_fill, allocator=rank.allocator, precheck=_precheck(plan), per_rank=per_rank,
        whole_model=whole,
        prefill_tokens=plan.prefill_tokens, prefill_note=plan.prefill_note, prefill_ms=rank.prefill.median_ms,
        prefill_tokens_per_s=batch * plan.prefill_tokens / (rank.prefill.median_ms / 1e3), prefill=rank.prefill,
        decode_ms=rank.decode.median_ms, decode_tokens_per_s=batch / decode_s, decode=rank.decode,
        decode_bytes_read=decode_bytes, achieved_gb_per_s=decode_bytes / decode_s / 1e9,
        peak_gb_per_s=None if peak is None else peak / 1e9, peak_source=peak_source, roofline_decode_ms=roofline_ms,
        decode_vs_roofline=None if roofline_ms is None else rank.decode.median_ms / roofline_ms,
        roofline_efficiency=None if peak is None else decode_bytes / decode_s / peak,
        predicted_decode_ms=None if prediction is None else prediction.decode_ms,
        predicted_prefill_ms=None if prediction is None else prediction.prefill_ms,
        prediction_ratio=None if prediction is None else rank.decode.median_ms / prediction.decode_ms,
        prefill_prediction_ratio=None if prediction is None else rank.prefill.median_ms / prediction.prefill_ms,
        prediction_profile=profile[1] if prediction is None else f"{prediction.profile} ({prediction.profile_kind})",
        prediction_how=None if prediction is None else prediction.how,
        sdpa_backends=rank.sdpa_backends, numerics=rank.numerics, thresholds=thresholds, checks=checks,
        check_details=_check_details(checks, plan, rank, whole, thresholds, predicted_state),
        passed=all(checks.values()),
        notes=[*(f"assumed: {note}" for note in loaded.assumptions), *_notes(plan, rank, per_rank),
               *_prediction_notes(prediction, profile, rank, plan.dtype)],
    )  # fmt: skip


def _variant(model: ModelSpec) -> str:
    """The report's variant: the spec's, or "attention-free" where no layer attends (trial 374 #2: a Mamba was
    titled MHA from its placeholder heads)."""
    return "attention-free" if model.attention_free else model.attention.variant or ""


def _prediction_notes(
    prediction: Prediction | None, profile: tuple[DeviceProfile | None, str], rank: RankResult, built_dtype: str
) -> list[str]:
    """Why there is no prediction; that the profile was measured in another dtype than the model is built in (its
    rates then stand for the built dtype's: trial 258, an fp32 profile on a bf16 build); or, when a measured time
    falls outside the profile's band, that it did."""
    if prediction is None or profile[0] is None:
        return [f"predicted times: {profile[1]}"]
    band = profile[0].relative_error
    unstable = profile[0].unstable_reason  # trial 374 #3
    notes = [] if unstable is None else [f"predicted times: {profile[0].name} was {unstable}"]
    if profile[0].dtype != built_dtype and built_dtype not in profile[0].matmul_by_dtype:
        notes.append(
            f"{prediction.profile} was measured in {profile[0].dtype}, the model is built in {built_dtype}: its"
            f" {profile[0].dtype} rates price the {built_dtype} steps (calibrate in {built_dtype} for this build)"
        )
    low, high = measured_within(band, profile[0].kind, profile[0].source)  # as the band's error was measured
    for phase, measured, predicted in (("decode", rank.decode.median_ms, prediction.decode_ms),
                                       ("prefill", rank.prefill.median_ms, prediction.prefill_ms)):  # fmt: skip
        ratio = measured / predicted
        if not low <= ratio <= high:
            notes.append(
                f"{phase} measured / predicted {ratio:.2f} is outside {prediction.profile}'s {band_words(low, high)}: the"
                " machine was busier (or freer) than when it was calibrated, or the profile is another device's"
            )
    return notes


def _precheck(plan: VerifyPlan) -> MemoryPrecheck:
    free = plan.free_bytes
    return MemoryPrecheck(
        weight_bytes=plan.predicted_weight_bytes, cache_bytes=plan.predicted_cache_bytes,
        workspace_bytes=plan.workspace_bytes, required_bytes=plan.required_bytes, free_bytes=free,
        usable_bytes=None if free is None else int(free * USABLE_FRACTION),
    )  # fmt: skip


BUSY_COPY_SPREAD = 1.5
"""The best copy over the median beyond which the CPU peak is flagged as measured on a busy machine (an idle one
repeats within a few per cent; trial 262 saw 17 to 106 GB/s between identical runs on a shared 2-core machine)."""


def _peak_bandwidth(device: torch.device) -> tuple[float | None, str]:
    """(peak bytes per second, where it comes from): the targets database on a GPU, a measured copy on CPU."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        target = measure.match_target(name)
        if target is None:
            return None, f"{name} is not in the targets database: no roofline"
        return target.bandwidth_bytes_per_s, f"{target.name} datasheet ({target.memory_bandwidth_gbs:g} GB/s)"
    rates = sorted(measure.copy_rates(device))
    best, median = rates[-1], rates[len(rates) // 2]
    copy = f"best of {measure.COPY_REPS} copies of {measure.COPY_BYTES // 2**20} MiB, median {median / 1e9:.1f} GB/s"
    if best > BUSY_COPY_SPREAD * median:  # a busy machine: the peak and every roofline ratio read against it vary
        copy += (
            f"; UNSTABLE: the best copy was {best / median:.1f}x the median, a busy machine (the peak swings between"
            " runs, and the roofline ratios with it): rerun on an idle machine"
        )
    return best, f"measured CPU copy bandwidth ({copy})"


def _check_details(
    checks: dict[str, bool],
    plan: VerifyPlan,
    rank: RankResult,
    whole: ScopeFigures,
    thresholds: dict[str, float],
    predicted_state: int = 0,
) -> dict[str, str]:
    """Each check's figure against its limit, e.g. ``whole-model cache 128.0 MiB > 0.001 GiB``."""

    def sign(name: str, holds: str, fails: str) -> str:
        return holds if checks[name] else fails

    numerics = rank.numerics
    details = {}
    if "weight_bytes_match" in checks:
        details["weight_bytes_match"] = (
            f"measured {rank.measured_weight_bytes:,} B {sign('weight_bytes_match', '==', '!=')}"
            f" predicted {plan.predicted_weight_bytes:,} B"
        )
    details["cache_bytes_match"] = (
        f"measured {rank.measured_cache_bytes:,} B {sign('cache_bytes_match', '==', '!=')}"
        f" predicted {plan.predicted_cache_bytes:,} B"
    )
    if "state_bytes_match" in checks:
        details["state_bytes_match"] = (
            f"measured {rank.measured_state_bytes:,} B {sign('state_bytes_match', '==', '!=')}"
            f" predicted {predicted_state:,} B (fixed state of the built linear layers)"
        )
    details["numerics"] = (
        f"relative error {numerics.relative_error:.2e} {sign('numerics', '<=', '>')} tolerance {numerics.tolerance:g}"
    )
    allocator = rank.allocator
    if allocator is not None:
        for part in ("weights", "cache"):
            change, expected = getattr(allocator, f"{part}_change_bytes"), getattr(allocator, f"{part}_expected_bytes")
            tolerance = getattr(allocator, f"{part}_tolerance_bytes")
            details[f"allocator_{part}"] = (
                f"allocator change {change:,} B - expected {expected:,} B = {change - expected:+,} B"
                f" {sign(f'allocator_{part}', 'within', 'outside')} [0, {tolerance:,}]"
            )
    if "max_kv_gib" in checks:
        details["max_kv_gib"] = (
            f"whole-model cache {format_bytes(whole.cache_bytes)} {sign('max_kv_gib', '<=', '>')}"
            f" {thresholds['max_kv_gib']:g} GiB"
        )
    if "max_decode_ms" in checks:
        details["max_decode_ms"] = (
            f"whole-model decode step {whole.decode_ms:.3f} ms {sign('max_decode_ms', '<=', '>')}"
            f" {thresholds['max_decode_ms']:g} ms"
        )
    return details


def _notes(plan: VerifyPlan, rank: RankResult, per_rank: ScopeFigures) -> list[str]:
    notes = list(plan.notes)
    if mixer_weights_note(plan.model) is not None:  # the built layers count exactly; the family's rest may not
        notes.append(f"family {mixer_weights_note(plan.model)}")
    if plan.tp > 1:
        notes.append(
            f"tp={plan.tp}: the stack is rank {rank.tp_rank}'s shard ({plan.rank_shape.attention.n_heads} query heads,"
            f" {plan.rank_shape.attention.n_kv_heads} KV heads, d_ff {plan.rank_shape.block.d_ff}); run in one process, the"
            " all-reduces are identities"
        )
    if per_rank.extrapolated:
        notes.append(
            f"EXTRAPOLATED: {plan.n_layers_built} of {plan.model.n_layers} layers built; per_rank and whole_model count"
            " every layer as a built layer of its kind and scale the decode step by the bytes it reads (their `how`)"
        )
        unbuilt = unbuilt_kinds_note(plan.model, plan.n_layers_built)
        if unbuilt is not None:
            notes.append(unbuilt)
    if plan.prefill_tokens < plan.deployment.seq_len:
        notes.append(f"prefill timed over {plan.prefill_note}")
    notes.append(f"cache filled: {rank.cache_fill.how}")
    if plan.paged_model_cache_bytes is not None:
        notes.append(
            f"torch caches are contiguous: predicted unpaged; the deployment's blocks of {plan.deployment.block_size}"
            f" tokens would hold {format_bytes(plan.paged_model_cache_bytes)} per rank over all layers"
            f" ({format_bytes(plan.paged_model_cache_bytes - plan.predicted_model.total_bytes)} padding)"
        )
    notes.append("prefill computes the logits of every position (as transformers does), not only the last")
    return notes


def unbuilt_kinds_note(model: ModelSpec, built: int) -> str | None:
    """Which layer kinds of ``model`` its first ``built`` layers leave out (a sliding-window design's global layers
    behind five local ones), whose rows are the calculator's figures, and the ``--layers`` that builds one of each;
    None where every kind was built (trial 262: a 1M-token design passed with no global layer built, unsaid)."""
    every = [model.layer_kind(i) for i in range(model.n_layers)]
    missing = sorted(set(every) - set(every[:built]))
    if not missing:
        return None
    wanted = max(every.index(kind) for kind in missing) + 1
    return (
        f"no {' or '.join(missing)} layer built (the first {built} are {', '.join(sorted(set(every[:built])))}): the"
        f" whole model's rows take the calculator's figure for them, not a measurement; --layers {wanted} builds one"
        " of each kind"
    )
