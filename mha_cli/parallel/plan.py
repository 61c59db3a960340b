"""Plan a tensor-parallel verify once, before any rank starts: single-device verify's plan at the
deployment's tp (shapes, layers built, predictions, the memory fit of one rank) plus the tp check's
token counts. Refused with exit 2 when the device cannot host the ranks, exit 3 when a rank cannot fit.
"""

from __future__ import annotations

from collections.abc import Callable

from mha_cli.core.errors import BadInputError, OutOfMemoryError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.pipeline import first_moe_layer
from mha_cli.core.quantities import format_bytes
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.sources import ModelSource
from mha_cli.parallel.report import TpJob
from mha_cli.verify.plan import (
    USABLE_FRACTION,
    DeviceType,
    VerifyPlan,
    deployment_tp_degree,
    device_free_bytes,
    first_layers,
    make_plan,
    validate_options,
    workspace_bytes,
)

CHECK_PREFILL_TOKENS = 32
"""Longest prefill of the tp-vs-one-device logits check (the split's rounding does not grow with length)."""
CHECK_DECODE_TOKENS = 4
"""Tokens decoded one at a time after that prefill, each compared."""
CHECK_VALUE_BYTES = 4
"""The check runs in float32 (``rank_run.CHECK_DTYPE``)."""
DEFAULT_TIMEOUT_S = 900.0
"""Bound on a whole tensor-parallel run and on each of its collectives (--tp-timeout)."""


def resolve_tp_device(device: str, tp: int, asked: str | None = None) -> DeviceType:
    """``cpu`` or ``cuda`` for ``tp`` ranks: CUDA needs one visible device per rank (else exit 2, offering the CPU).
    ``asked``: the options that make the ``tp`` processes, as the message names them (default ``--tp N``)."""
    import torch

    from mha_cli.nn.device import resolve_device

    target = resolve_device(device)
    if target.type != "cuda":
        return "cpu"
    visible = torch.cuda.device_count()
    if visible < tp:
        raise BadInputError(
            f"{asked or f'--tp {tp}'} needs {tp} CUDA devices, {visible} visible: rerun with --device cpu to run {tp}"
            " gloo processes on the host"
        )
    return "cuda"


def rank_free_bytes(device_type: DeviceType, tp: int) -> int | None:
    """Free memory one rank may plan with: a GPU's own (cuda:0's, the ranks' GPUs alike), or the host's / tp on CPU."""
    free = device_free_bytes(device_type, 0 if device_type == "cuda" else None)
    if free is None or device_type == "cuda":
        return free
    return free // tp


def check_layers_wanted(model: ModelSpec) -> int:
    """Layers that hold one of each of ``model``'s layer kinds (``layers_for_each_kind``), at least 2 (one layer's
    output feeding the next across the ranks)."""
    return max(2, layers_for_each_kind(model))


def layers_for_each_kind(model: ModelSpec) -> int:
    """The first layers that hold one of each of ``model``'s layer kinds: a full local/global pattern, the dense
    layers before the first MoE one (1 where every layer is alike)."""
    return max(1, len(model.layers.pattern or []), (first_moe_layer(model) + 1) if model.block.moe else 0)


def check_layers(plan: VerifyPlan) -> int:
    """Layers the tp-vs-one-device check builds: ``check_layers_wanted``, at most the layers measured."""
    return min(plan.n_layers_built, check_layers_wanted(plan.model))


def one_device_stack_bytes(check: ModelSpec, tokens: int, batch: int = 1) -> int:
    """Bytes of a check stack built whole on one device in float32 (the tp and pp checks' reference): every weight
    of ``check`` and its cache of ``tokens`` for each of ``batch`` sequences."""
    cache = kv_footprint(check, seq_len=tokens, batch=batch, kv_dtype="fp32").total_bytes
    return count_params(check).total * CHECK_VALUE_BYTES + cache


def check_reference_bytes(plan: VerifyPlan, check_tokens: int) -> int:
    """Bytes of the tp check's one-device reference: the whole check stack (its first ``check_layers`` layers, the
    embedding and the head) in float32, as rank 0 builds it, and its cache of ``check_tokens`` a sequence."""
    return one_device_stack_bytes(first_layers(plan.model, check_layers(plan)), check_tokens, plan.deployment.batch)


def check_reference_fits(
    plan: VerifyPlan, prefill_tokens: int, decode_tokens: int, device_type: DeviceType, free: int | None
) -> None:
    """Refuse (exit 3) a tp check whose one-device reference cannot fit: rank 0 holds the whole check stack in
    float32 (``check_reference_bytes``) and its prefill's activations and logits (``verify.plan.workspace_bytes``)
    once every rank has freed its shard, on its GPU or on the host the CPU ranks share. ``free``: the whole device's
    free bytes (None: unknown, not checked)."""
    if free is None:
        return
    check = first_layers(plan.model, check_layers(plan))
    workspace = workspace_bytes(
        check, batch=plan.deployment.batch, prefill_tokens=prefill_tokens, context=prefill_tokens + decode_tokens,
        value_bytes=CHECK_VALUE_BYTES,
    )  # fmt: skip
    need = check_reference_bytes(plan, prefill_tokens + decode_tokens) + workspace
    usable = int(free * USABLE_FRACTION)
    if need > usable:
        where = "the host's" if device_type == "cpu" else "cuda:0's"
        raise OutOfMemoryError(
            f"the tp check's one-device reference needs {format_bytes(need)} (the first {check_layers(plan)} layer(s),"
            f" the embedding and the head in float32, and its prompt's activations), {where} usable free memory is"
            f" {format_bytes(usable)}: run it where that much is free, or verify with --tp 1 (no tp check)"
        )


def make_tp_job(
    loaded: ModelSource,
    deployment: DeploymentSpec,
    *,
    device_type: DeviceType,
    layers: int | None = None,
    prefill_tokens: int | None = None,
    reps: int = 10,
    tolerance: float | None = None,
    max_kv_gib: float | None = None,
    max_decode_ms: float | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    seed: int = 0,
    profile: str | None = None,
    free_bytes: Callable[[DeviceType, int], int | None] = rank_free_bytes,
) -> TpJob:
    """The job every rank runs at the deployment's tp; raises ``BadInputError`` (exit 2) or ``OutOfMemoryError``
    (exit 3) as single-device verify's plan does."""
    validate_options(
        reps=reps, layers=layers, prefill_tokens=prefill_tokens, tolerance=tolerance, max_kv_gib=max_kv_gib,
        max_decode_ms=max_decode_ms,
    )  # fmt: skip
    if not timeout_s > 0:
        raise BadInputError(f"--tp-timeout must be greater than 0 (got {timeout_s:g})")
    tp = deployment_tp_degree(deployment)
    try:
        plan = make_plan(
            loaded.model, deployment, device_type=device_type, layers=layers, prefill_tokens=prefill_tokens,
            free_bytes=free_bytes(device_type, tp),
        )  # fmt: skip
    except OutOfMemoryError as exc:
        share = f" (on CPU each rank plans with 1/{tp} of the host's free memory)" if device_type == "cpu" else ""
        raise OutOfMemoryError(f"one of {tp} ranks: {exc.message}{share}") from None
    seq = deployment.seq_len
    if seq < CHECK_DECODE_TOKENS + 2:
        raise BadInputError(f"--seq ({seq}) must be at least {CHECK_DECODE_TOKENS + 2} for a tensor-parallel check")
    check_prefill_tokens = min(CHECK_PREFILL_TOKENS, seq - CHECK_DECODE_TOKENS)
    whole_device = free_bytes(device_type, 1)  # one rank's share when there is one rank: the whole GPU or host
    check_reference_fits(plan, check_prefill_tokens, CHECK_DECODE_TOKENS, device_type, whole_device)
    return TpJob(
        loaded=loaded, plan=plan, reps=reps, tolerance=tolerance, max_kv_gib=max_kv_gib, max_decode_ms=max_decode_ms,
        check_layers=check_layers(plan), check_prefill_tokens=check_prefill_tokens,
        seed=seed,
        check_decode_tokens=CHECK_DECODE_TOKENS, timeout_s=timeout_s, profile=profile,
    )  # fmt: skip
