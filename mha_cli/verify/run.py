"""Run a verification: plan, build the layers and their caches, measure, check.

Stages (``STAGES``, reported through ``on_stage`` for a progress bar): plan and precheck; build the
layers and allocate the caches; time one decode step at full context (caches filled with random
values, no real prefill); time a prefill; compare cached decode with the full forward; measure the
copy bandwidth (CPU only) for the roofline.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from mha_cli.core.errors import OutOfMemoryError
from mha_cli.core.quantities import format_bytes
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import ModelSource
from mha_cli.nn.build import build_attention
from mha_cli.nn.cache_ops import bytes_per_token
from mha_cli.nn.device import device_name, is_out_of_memory, resolve_device
from mha_cli.nn.kv_cache import CACHE_DTYPES, KVCache, LatentCache
from mha_cli.nn.sdpa import record_sdpa_backends
from mha_cli.verify import measure
from mha_cli.verify.numerics import check_cached_decode
from mha_cli.verify.plan import VerifyPlan, device_free_bytes, make_plan, validate_options
from mha_cli.verify.report import NumericsResult, VerifyReport

STAGES = ("plan", "build", "decode", "prefill", "numerics", "bandwidth")
DECODE_WARMUP = 3
PREFILL_WARMUP = 1
GIB = 2**30


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
    on_stage: Callable[[str], None] = lambda stage: None,
) -> VerifyReport:
    """Build ``loaded.model`` under ``deployment`` on ``device`` and measure it.

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
    dtype = CACHE_DTYPES[plan.kv_dtype]
    torch.manual_seed(0)
    try:
        return _measure(loaded, plan, target, dtype, reps, max_kv_gib, max_decode_ms, tolerance, on_stage)
    except RuntimeError as exc:  # torch.OutOfMemoryError is a RuntimeError too
        if not is_out_of_memory(exc):
            raise
        raise OutOfMemoryError(
            f"the device ran out of memory building {plan.n_layers_built} layer(s) at seq {deployment.seq_len}"
            f" x batch {deployment.batch}: try --layers {max(1, plan.n_layers_built // 2)}, a smaller --batch"
            " or a shorter --seq"
        ) from None


def _measure(
    loaded: ModelSource,
    plan: VerifyPlan,
    device: torch.device,
    dtype: torch.dtype,
    reps: int,
    max_kv_gib: float | None,
    max_decode_ms: float | None,
    tolerance: float | None,
    on_stage: Callable[[str], None],
) -> VerifyReport:
    deployment, shard = plan.deployment, plan.shard
    batch, d_model = deployment.batch, shard.d_model
    mla_mode = plan.mla_cache or "absorbed"

    on_stage("build")
    with torch.inference_mode():
        layers = [build_attention(shard, mla_mode=mla_mode, dtype=dtype, device=device) for _ in plan.layer_kinds]
        before = measure.allocated_bytes(device)
        caches = [
            layer.new_cache(batch, plan.cache_tokens[kind])
            for layer, kind in zip(layers, plan.layer_kinds, strict=True)
        ]
        after = measure.allocated_bytes(device)
        generator = torch.Generator(device=device).manual_seed(0)
        for cache in caches:
            measure.fill_random(cache, generator)
    measured_bytes = measure.total_cache_bytes(caches)
    weight_bytes = sum(p.nbytes for layer in layers for p in layer.parameters())
    positions = [plan.context_tokens[kind] - 1 for kind in plan.layer_kinds]

    measure.reset_peak(device)
    on_stage("decode")
    x_decode = torch.randn(batch, 1, d_model, dtype=dtype, device=device)  # (b, 1, d)

    def decode_step() -> torch.Tensor:
        y = x_decode  # (b, 1, d)
        for layer, cache, pos in zip(layers, caches, positions, strict=True):
            y = layer(y, cache, pos)  # (b, 1, d)
        return y

    with torch.inference_mode():
        with record_sdpa_backends() as decode_backends:
            decode_step()
        decode_times, timer = measure.time_calls(decode_step, device, DECODE_WARMUP, reps)
    decode = measure.summarise(decode_times, warmup=DECODE_WARMUP, timer=timer)

    on_stage("prefill")
    x_prefill = torch.randn(batch, plan.prefill_tokens, d_model, dtype=dtype, device=device)  # (b, p, d)

    def prefill_step() -> torch.Tensor:
        y = x_prefill  # (b, p, d)
        for layer, cache in zip(layers, caches, strict=True):
            y = layer(y, cache, 0)  # (b, p, d)
        return y

    prefill_reps = reps if device.type == "cuda" else min(reps, 3)
    with torch.inference_mode():
        with record_sdpa_backends() as prefill_backends:
            prefill_step()
        prefill_times, timer = measure.time_calls(prefill_step, device, PREFILL_WARMUP - 1, prefill_reps)
    prefill = measure.summarise(prefill_times, warmup=PREFILL_WARMUP, timer=timer)
    peak_allocated = measure.peak_allocated_bytes(device)

    on_stage("numerics")
    with record_sdpa_backends() as numerics_backends:
        numerics = check_cached_decode(layers[0], d_model=d_model, dtype=dtype, device=device, tolerance=tolerance)

    on_stage("bandwidth")
    decode_bytes = weight_bytes + _cache_bytes_read(caches, positions, batch)
    decode_s = decode.median_ms / 1e3
    achieved = decode_bytes / decode_s
    peak, peak_source = _peak_bandwidth(device)

    n_model, n_built = plan.model.n_layers, plan.n_layers_built
    extrapolated = n_built < n_model
    model_cache = _model_cache_bytes(plan, caches) if extrapolated else measured_bytes
    model_decode_ms = decode.median_ms * n_model / n_built
    checks = {"cache_bytes_match": measured_bytes == plan.predicted_cache_bytes, "numerics": numerics.passed}
    thresholds: dict[str, float] = {"tolerance": numerics.tolerance}
    if max_kv_gib is not None:
        thresholds["max_kv_gib"] = max_kv_gib
        checks["max_kv_gib"] = model_cache <= max_kv_gib * GIB
    if max_decode_ms is not None:
        thresholds["max_decode_ms"] = max_decode_ms
        checks["max_decode_ms"] = model_decode_ms <= max_decode_ms
    details = _check_details(checks, plan, measured_bytes, numerics, model_cache, model_decode_ms, thresholds)
    return VerifyReport(
        source=loaded.origin, source_kind=loaded.kind, model_name=plan.model.name, variant=plan.model.variant or "",
        mla_cache=plan.mla_cache, device=str(device), device_name=device_name(device), torch_version=torch.__version__,
        dtype=plan.kv_dtype, seq_len=deployment.seq_len, batch=batch, tp=plan.tp, n_layers_model=n_model,
        n_layers_built=n_built, layers_note=plan.layers_note, extrapolated=extrapolated,
        predicted_cache_bytes=plan.predicted_cache_bytes, measured_cache_bytes=measured_bytes,
        allocator_cache_delta_bytes=None if before is None or after is None else after - before,
        peak_allocated_bytes=peak_allocated,
        predicted_bytes_per_token_per_layer=_per_token_per_layer_per_rank(plan),
        weight_bytes=weight_bytes, model_predicted_cache_bytes=plan.predicted_model.total_bytes,
        model_cache_bytes=model_cache, prefill_tokens=plan.prefill_tokens, prefill_note=plan.prefill_note,
        prefill_ms=prefill.median_ms, prefill_tokens_per_s=batch * plan.prefill_tokens / (prefill.median_ms / 1e3),
        prefill=prefill, decode_ms=decode.median_ms, decode_tokens_per_s=batch / decode_s, decode=decode,
        model_decode_ms=model_decode_ms, decode_bytes_read=decode_bytes, achieved_gb_per_s=achieved / 1e9,
        peak_gb_per_s=None if peak is None else peak / 1e9, peak_source=peak_source,
        roofline_decode_ms=None if peak is None else decode_bytes / peak * 1e3,
        roofline_efficiency=None if peak is None else achieved / peak,
        sdpa_backends={"decode": sorted(set(decode_backends)), "prefill": sorted(set(prefill_backends)),
                       "numerics": sorted(set(numerics_backends))},
        numerics=numerics, thresholds=thresholds, checks=checks, check_details=details, passed=all(checks.values()),
        notes=_notes(plan, extrapolated),
    )  # fmt: skip


def _cache_bytes_read(caches: list[KVCache | LatentCache], positions: list[int], batch: int) -> int:
    """Cache bytes a decode step at ``positions`` reads: positions + 1 tokens of each layer, whole batch."""
    total = 0
    for cache, pos in zip(caches, positions, strict=True):
        total += bytes_per_token(cache) * batch * (pos + 1)
    return total


def _per_token_per_layer_per_rank(plan: VerifyPlan) -> int:
    """Bytes one built layer caches per token (one rank's heads; the whole latent for absorbed MLA)."""
    return plan.predicted.bytes_per_token_per_rank // plan.n_layers_built


def _model_cache_bytes(plan: VerifyPlan, caches: list[KVCache | LatentCache]) -> int:
    """Every layer's cache from the measured layers: per kind, the measured bytes of a built layer of that kind.

    A kind that was not built (e.g. a global layer when only local ones were) takes its predicted size.
    """
    measured = {kind: cache.nbytes for kind, cache in zip(plan.layer_kinds, caches, strict=True)}
    per_token_layer = _per_token_per_layer_per_rank(plan)
    total = 0
    for i in range(plan.model.n_layers):
        kind = plan.model.layer_kind(i)
        total += measured.get(kind, plan.deployment.batch * plan.cache_tokens[kind] * per_token_layer)
    return total


def _peak_bandwidth(device: torch.device) -> tuple[float | None, str]:
    """(peak bytes per second, where it comes from): the targets database on a GPU, a measured copy on CPU."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        target = measure.match_target(name)
        if target is None:
            return None, f"{name} is not in the targets database: no roofline"
        return target.bandwidth_bytes_per_s, f"{target.name} datasheet ({target.memory_bandwidth_gbs:g} GB/s)"
    copy = f"best of {measure.COPY_REPS} copies of {measure.COPY_BYTES // 2**20} MiB"
    return measure.copy_bandwidth(device), f"measured CPU copy bandwidth ({copy})"


def _check_details(
    checks: dict[str, bool],
    plan: VerifyPlan,
    measured_bytes: int,
    numerics: NumericsResult,
    model_cache: int,
    model_decode_ms: float,
    thresholds: dict[str, float],
) -> dict[str, str]:
    """Each check's figure against its limit, e.g. ``model cache 128.0 MiB > 0.001 GiB``."""

    def sign(name: str, holds: str, fails: str) -> str:
        return holds if checks[name] else fails

    details = {
        "cache_bytes_match": f"measured {measured_bytes:,} B {sign('cache_bytes_match', '==', '!=')}"
        f" predicted {plan.predicted_cache_bytes:,} B",
        "numerics": f"relative error {numerics.relative_error:.2e} {sign('numerics', '<=', '>')}"
        f" tolerance {numerics.tolerance:g}",
    }
    if "max_kv_gib" in checks:
        details["max_kv_gib"] = (
            f"model cache {format_bytes(model_cache)} {sign('max_kv_gib', '<=', '>')} {thresholds['max_kv_gib']:g} GiB"
        )
    if "max_decode_ms" in checks:
        details["max_decode_ms"] = (
            f"model decode step {model_decode_ms:.3f} ms {sign('max_decode_ms', '<=', '>')}"
            f" {thresholds['max_decode_ms']:g} ms"
        )
    return details


def _notes(plan: VerifyPlan, extrapolated: bool) -> list[str]:
    notes = ["attention layers only (no MLP, norms or embeddings); RoPE only inside MLA, sliding windows as cache size"]
    notes += plan.notes
    if plan.tp > 1:
        notes.append(f"tp={plan.tp}: each layer is one rank's shard ({plan.shard.n_heads} query heads)")
    if extrapolated:
        notes.append(
            f"EXTRAPOLATED: {plan.n_layers_built} of {plan.model.n_layers} layers built; model_cache_bytes and"
            " model_decode_ms scale the measured layers to the whole model"
        )
    if plan.prefill_tokens < plan.deployment.seq_len:
        notes.append(f"prefill timed over {plan.prefill_note}")
    return notes
