"""What ``mha verify`` builds, and whether it fits the device before anything is allocated.

A verify run builds the attention layers one device of the deployment holds: under tensor
parallelism each rank's shard (n_heads / tp query heads, its KV heads; an MLA latent unsharded),
for ``n_layers_built`` layers, each with a pre-allocated cache of the configured batch and length
(sliding-window layers hold the window; a paged deployment rounds up to whole blocks). The
prediction is ``kv_footprint`` of exactly those layers, so measured and predicted bytes must agree.

The memory precheck compares cache + weights + a workspace estimate with the device's free memory
(``USABLE_FRACTION`` of it) and either builds fewer layers (when the layer count was a default) or
refuses with ``OutOfMemoryError`` and a suggestion. Pure Python: torch is imported only to ask a
CUDA device for its free memory.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field

from mha_cli.core.dtypes import BUILDABLE, storage_format
from mha_cli.core.errors import BadInputError, OutOfMemoryError
from mha_cli.core.kv import KvFootprint, footprint_for, kv_heads_per_rank
from mha_cli.core.memory import resolve_tp
from mha_cli.core.params import attention_params
from mha_cli.core.quantities import format_bytes
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, LayerKind, MlaCacheMode, ModelSpec
from mha_cli.core.targets import resolve_target

DeviceType = Literal["cuda", "cpu"]
CPU_DEFAULT_LAYERS = 2
"""Layers built on CPU unless --layers says otherwise (the rest is extrapolated)."""
CPU_DEFAULT_PREFILL_TOKENS = 128
"""Prefill length timed on CPU unless --prefill-tokens says otherwise (GPU: the configured length)."""
USABLE_FRACTION = 0.90
"""Share of the free memory a run may plan to use; the rest covers the allocator's rounding and the runtime."""


class VerifyPlan(Record):
    """Everything decided before torch allocates: shapes, layer count, predicted bytes, the fit."""

    model: ModelSpec
    """The configured model (all layers, unsharded)."""
    shard: ModelSpec
    """What one device builds per layer: n_heads / tp query heads and the rank's KV heads."""
    deployment: DeploymentSpec
    device_type: DeviceType
    tp: int
    kv_dtype: str
    mla_cache: Literal["absorbed", "naive"] | None
    n_layers_built: int
    layers_note: str
    """Why that many layers: all, --layers, the CPU default, or what fits in memory."""
    layer_kinds: list[LayerKind]
    """Kind of each built layer (the model's first n_layers_built layers)."""
    cache_tokens: dict[str, int]
    """Tokens a layer's cache holds, by kind (window and paging applied)."""
    context_tokens: dict[str, int]
    """Tokens a decode step at full context attends to, by kind."""
    prefill_tokens: int
    prefill_note: str
    predicted: KvFootprint
    """kv_footprint of the built layers, on one rank: ``total_bytes`` is the predicted cache."""
    predicted_model: KvFootprint
    """kv_footprint of every layer of the model, on one rank."""
    weight_bytes_per_layer: int
    """Attention weights of one built layer (estimate from the parameter count)."""
    workspace_bytes: int
    """Estimated activations of the largest step (prefill), one layer at a time."""
    required_bytes: int
    free_bytes: int | None
    """Free device memory when planned; ``None`` when unknown (no precheck)."""
    notes: list[str] = Field(default_factory=list)
    """What the plan changed or ignored from the options (a clamped prefill, an --mla-cache that does not apply)."""

    @property
    def predicted_cache_bytes(self) -> int:
        return self.predicted.total_bytes


def device_free_bytes(device_type: DeviceType, device_index: int | None = None) -> int | None:
    """Free memory in bytes: ``torch.cuda.mem_get_info`` on CUDA, MemAvailable on CPU (None if unknown)."""
    if device_type == "cuda":
        import torch

        free, _total = torch.cuda.mem_get_info(device_index)
        return int(free)
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def validate_options(
    *,
    reps: int = 1,
    layers: int | None = None,
    prefill_tokens: int | None = None,
    tolerance: float | None = None,
    max_kv_gib: float | None = None,
    max_decode_ms: float | None = None,
) -> None:
    """The one rule for verify's own numbers: counts >= 1, limits > 0, ``--tolerance`` >= 0 (0: exact).

    Raises ``BadInputError`` (exit 2) naming the first bad option; ``None`` means unset, never a bad value.
    """
    counts = {"--reps": reps, "--layers": layers, "--prefill-tokens": prefill_tokens}
    for option, count in counts.items():
        if count is not None and count < 1:
            raise BadInputError(f"{option} must be at least 1 (got {count})")
    limits = {"--max-kv-gib": max_kv_gib, "--max-decode-ms": max_decode_ms}
    for option, limit in limits.items():
        if limit is not None and not limit > 0:  # also refuses NaN
            raise BadInputError(f"{option} must be greater than 0 (got {limit:g})")
    if tolerance is not None and not tolerance >= 0:
        raise BadInputError(f"--tolerance must be 0 (exact) or greater (got {tolerance:g})")


def torch_dtype_name(kv_dtype: str) -> str:
    """The deployment's KV format if the torch modules build it; quantised formats are refused (exit 2)."""
    if kv_dtype not in BUILDABLE:
        raise BadInputError(
            f"kv_dtype {kv_dtype} is priced by `mha kv` but not built in torch (its scale layout is not implemented):"
            " rerun with --kv-dtype bf16 to verify the unquantised layout"
        )
    return kv_dtype


def shard_model(model: ModelSpec, tp: int, mla_cache: MlaCacheMode) -> ModelSpec:
    """The per-rank attention shape: query heads / tp, the rank's KV heads (replicated when tp > n_kv)."""
    kv_per_rank = kv_heads_per_rank(model, tp, mla_cache)  # raises BadInputError when tp does not split the heads
    n_heads = model.n_heads // tp
    n_kv = n_heads if model.mla is not None else kv_per_rank
    # Re-validated, so the variant follows the shard's heads: 64 / 8 GQA over 16 ranks is 4 / 1, MQA.
    fields = model.model_dump(exclude={"variant"}) | {"n_heads": n_heads, "n_kv_heads": n_kv}
    return ModelSpec.model_validate(fields)


def layer_kinds(model: ModelSpec, n_layers: int) -> list[LayerKind]:
    """The kind (global or local) of each of the model's first ``n_layers`` layers."""
    return [model.layer_kind(i) for i in range(n_layers)]


def first_layers(model: ModelSpec, n_layers: int) -> ModelSpec:
    """The model cut to its first ``n_layers`` layers, each keeping its kind (global or local)."""
    pattern = layer_kinds(model, n_layers) if model.layer_pattern else None
    return model.model_copy(update={"n_layers": n_layers, "layer_pattern": pattern})


def workspace_bytes(shard: ModelSpec, *, batch: int, prefill_tokens: int, context: int, value_bytes: int) -> int:
    """Activations of one layer's prefill: x, q, k, v, the output and the boolean causal mask.

    Twice the tensors' sizes, for the temporaries the projections and the cast make. The fused SDPA
    kernels do not materialise the scores; should a run fall back to one that does and run out of
    memory, ``run_verify`` still turns the allocator's error into exit 3.
    """
    if shard.mla is not None:
        mla = shard.mla
        q_width = shard.n_heads * (mla.qk_head_dim + mla.kv_lora_rank + mla.qk_rope_head_dim)
        kv_width = shard.n_heads * (mla.qk_head_dim + mla.v_head_dim) + mla.latent_dim
        q_per_kv = shard.n_heads
    else:
        q_width = shard.n_heads * shard.dim_per_head
        kv_width = 2 * shard.kv_heads * shard.dim_per_head
        q_per_kv = shard.q_per_kv
    activations = batch * prefill_tokens * (2 * shard.d_model + 2 * q_width + kv_width) * value_bytes
    mask = q_per_kv * prefill_tokens * context if q_per_kv > 1 else 0  # bool (q_per_kv * s, t)
    return 2 * activations + mask


def refuse_unbuilt_layers(model: ModelSpec) -> None:
    """The torch ring builds global and sliding-window attention (MHA/GQA/MQA/MLA): refuse, in one line, a model
    with chunked, linear-attention / state-space, KV-sharing or indexer layers (``mha kv`` prices them)."""
    kinds = {model.layer_kind(i) for i in range(model.n_layers)}
    unbuilt = sorted(kinds - {"global", "local"})
    if model.recurrent is not None and model.recurrent.on_attention_layers:
        unbuilt.append(f"{model.recurrent.kind} beside attention")
    if model.n_kv_shared_layers:
        unbuilt.append("shared K/V")
    if model.mla is not None and model.mla.indexer is not None:
        unbuilt.append("indexer")
    if unbuilt:
        raise BadInputError(
            f"mha verify builds global and sliding-window attention only; {model.name} has {', '.join(unbuilt)}"
            " layers: price its cache with `mha kv` instead"
        )


def make_plan(
    model: ModelSpec,
    deployment: DeploymentSpec,
    *,
    device_type: DeviceType,
    layers: int | None = None,
    prefill_tokens: int | None = None,
    free_bytes: int | None = None,
) -> VerifyPlan:
    """Decide shapes and the layer count; refuse (exit 3) when even the smallest useful run does not fit.

    ``free_bytes``: free device memory in bytes (``device_free_bytes`` when measuring; tests pass a figure).
    """
    refuse_unbuilt_layers(model)
    kv_dtype = torch_dtype_name(deployment.kv_dtype)
    value_bytes = storage_format(kv_dtype).bits // 8
    target = resolve_target(deployment.target) if deployment.target else None
    tp = resolve_tp(deployment.tp, target)
    mla_cache = deployment.mla_cache if model.mla is not None else None
    shard = shard_model(model, tp, deployment.mla_cache)
    seq, batch = deployment.seq_len, deployment.batch
    validate_options(layers=layers, prefill_tokens=prefill_tokens)
    if layers is not None and layers > model.n_layers:
        raise BadInputError(f"--layers ({layers}) must be between 1 and the model's {model.n_layers} layers")
    notes = []
    if model.mla is None and "mla_cache" in deployment.model_fields_set:
        notes.append(
            f"--mla-cache {deployment.mla_cache} ignored: {model.name} is {model.variant}, not MLA; its cache is"
            " per-head K/V either way"
        )

    whole = footprint_for(model, deployment, tp)
    cache_tokens = {"global": whole.tokens_held_global}
    context_tokens = {"global": seq}
    if model.sliding_window and whole.tokens_held_local is not None:
        cache_tokens["local"] = whole.tokens_held_local
        context_tokens["local"] = min(seq, model.sliding_window)

    if layers is not None:
        wanted, note = layers, f"{layers} of {model.n_layers} (--layers)"
    elif device_type == "cpu" and model.n_layers > CPU_DEFAULT_LAYERS:
        wanted = CPU_DEFAULT_LAYERS
        note = f"{wanted} of {model.n_layers} (CPU default; --layers N to change)"
    else:
        wanted, note = model.n_layers, f"all {model.n_layers}"

    shortest_context = min(context_tokens[kind] for kind in layer_kinds(model, wanted))
    default_prefill = seq if device_type == "cuda" else min(seq, CPU_DEFAULT_PREFILL_TOKENS)
    prefill = min(default_prefill if prefill_tokens is None else prefill_tokens, shortest_context)
    if prefill_tokens is not None and prefill < prefill_tokens:
        limit = "--seq" if shortest_context == seq else "sliding window of the built layers"
        notes.append(f"--prefill-tokens {prefill_tokens:,} capped at {prefill:,}, the {limit} ({shortest_context:,})")
    if prefill == seq:
        prefill_note = f"{prefill:,} tokens (the configured length)"
    elif prefill_tokens is None and device_type == "cpu" and prefill < seq:
        prefill_note = f"{prefill:,} of {seq:,} tokens (capped on CPU; --prefill-tokens N to change)"
    else:
        prefill_note = f"{prefill:,} of {seq:,} tokens"

    weights = attention_params(shard) * value_bytes
    workspace = workspace_bytes(
        shard, batch=batch, prefill_tokens=prefill, context=max(context_tokens.values()), value_bytes=value_bytes
    )

    def predicted(n: int) -> KvFootprint:
        """The cache of the first ``n`` layers, on one rank."""
        return footprint_for(first_layers(model, n), deployment, tp)

    def required(n: int, cache: KvFootprint | None = None) -> int:
        return (cache or predicted(n)).total_bytes + n * weights + workspace

    built = wanted
    if free_bytes is not None:
        usable = int(free_bytes * USABLE_FRACTION)
        if required(wanted) > usable:
            fitting = max((n for n in range(1, wanted + 1) if required(n) <= usable), default=0)
            if layers is not None or fitting == 0:
                cache = predicted(wanted).total_bytes
                raise OutOfMemoryError(
                    _no_fit_message(required(wanted), cache, usable, wanted, fitting, batch, seq, device_type)
                )
            built, note = fitting, f"{fitting} of {model.n_layers} (all that fit in free memory)"

    footprint = predicted(built)
    return VerifyPlan(
        model=model, shard=shard, deployment=deployment, device_type=device_type, tp=tp, kv_dtype=kv_dtype,
        mla_cache=mla_cache, n_layers_built=built, layers_note=note, layer_kinds=layer_kinds(model, built),
        cache_tokens=cache_tokens, context_tokens=context_tokens, prefill_tokens=prefill, prefill_note=prefill_note,
        predicted=footprint, predicted_model=whole, weight_bytes_per_layer=weights, workspace_bytes=workspace,
        required_bytes=required(built, footprint), free_bytes=free_bytes, notes=notes,
    )  # fmt: skip


def _no_fit_message(
    needed: int, cache: int, usable: int, layers: int, fitting: int, batch: int, seq: int, device_type: DeviceType
) -> str:
    """One line: what was asked, what is free, and the changes that would fit. A smaller batch or a
    shorter context shrinks only the cache; they are offered only when the rest (weights and
    workspace, ``needed - cache``) leaves room for some cache."""
    ideas = []
    if fitting:
        ideas.append(f"--layers {fitting}")
    room_for_cache = usable - (needed - cache)
    if room_for_cache > 0 and cache > 0:
        if batch > 1 and batch * room_for_cache // cache >= 1:
            ideas.append(f"--batch {batch * room_for_cache // cache}")
        if seq * room_for_cache // cache >= 1:
            ideas.append(f"--seq {seq * room_for_cache // cache}")
    if device_type == "cuda":
        ideas.append("--device cpu")
    if not ideas:
        ideas.append("--layers 1 on a device with more memory")
    return (
        f"{layers} layer(s) need about {format_bytes(needed)} (cache + weights + workspace) but the device has"
        f" {format_bytes(usable)} usable: try {' or '.join(ideas)}"
    )
