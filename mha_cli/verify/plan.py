"""What ``mha verify`` builds, what the calculator predicts for it, and whether it fits, before torch allocates.

A verify run builds the whole decoder (token embedding, ``n_layers_built`` decoder layers, final
norm, LM head) as one tensor-parallel rank holds it: under ``tp`` ranks the rank's query and KV
heads (KV heads replicated when tp > n_kv; an MLA latent unsharded), d_ff / tp of every MLP and
expert, and its rows of the padded vocabulary in the embedding and head; norms replicated (``core.tensor_parallel``). The
predictions come from the core ring, never from the modules: ``kv_footprint`` of exactly those
layers for the cache, ``count_params`` of the rank's shape times the dtype for the weights.

The modules and the cache share one dtype, the deployment's ``kv_dtype`` (fp32, fp16 or bf16).
torch's caches are contiguous, so the cache is predicted unpaged, and a fixed state as transformers' cache
classes hold it (conv_kernel conv columns, an fp32 recurrent state: what the torch mixers keep); a paged
deployment's cache, as the engine allocates it, is reported beside it.

The memory precheck compares weights + cache + prefill workspace of the whole built stack with the
device's free memory (``USABLE_FRACTION`` of it) and either builds fewer layers (when the layer count
was a default) or refuses with ``OutOfMemoryError`` and a concrete smaller --layers/--batch/--seq.
Pure Python: torch is imported only to ask a CUDA device for its free memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from mha_cli.core.decoder_omissions import spec_family
from mha_cli.core.deployment import context_warning
from mha_cli.core.dtypes import BUILDABLE, storage_format
from mha_cli.core.errors import BadInputError, OutOfMemoryError
from mha_cli.core.inventory import tensor_groups
from mha_cli.core.kv import KvFootprint, footprint_for, recurrent_state_format
from mha_cli.core.memory import resolve_tp
from mha_cli.core.model_edit import with_fields
from mha_cli.core.params import count_params, group_params
from mha_cli.core.quantities import format_bytes
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import DeploymentSpec, LayerKind, MlaCacheMode, ModelSpec
from mha_cli.core.targets import resolve_target
from mha_cli.core.tensor_parallel import built_vocab_padding, kv_heads_per_rank, vocab_rows_per_rank

DeviceType = Literal["cuda", "cpu"]
WeightKind = Literal["dense", "moe"]
STAGES = ("plan", "build", "prefill", "decode", "numerics", "bandwidth")
"""What a verify run does, in order (``run_verify`` reports each through ``on_stage``, for a progress bar)."""
CPU_DEFAULT_LAYERS = 2
"""Decoder layers built on CPU unless --layers says otherwise (the rest is extrapolated, labelled)."""
CPU_DEFAULT_PREFILL_TOKENS = 128
"""Prefill length on CPU unless --prefill-tokens says otherwise (GPU: the configured length)."""
USABLE_FRACTION = 0.90
"""Share of the free memory a run may plan to use; the rest covers the allocator's rounding and the runtime."""


class VerifyPlan(Record):
    """Everything decided before torch allocates: shapes, layer count, predicted bytes, the fit."""

    model: ModelSpec
    """The configured model (all layers, unsharded)."""
    rank_shape: ModelSpec
    """What one rank builds per layer: n_heads / tp query heads, its KV heads, d_ff / tp (experts too)."""
    deployment: DeploymentSpec
    device_type: DeviceType
    tp: int
    dtype: str
    """dtype of the modules and the cache: the deployment's kv_dtype."""
    mla_cache: Literal["absorbed", "naive"] | None
    n_layers_built: int
    layers_note: str
    """Why that many layers: all, --layers, the CPU default, or what fits in memory."""
    layer_kinds: list[LayerKind]
    """Kind of each built layer (the model's first n_layers_built layers): global or local (sliding window)."""
    prefill_tokens: int
    prefill_note: str
    predicted: KvFootprint
    """kv_footprint of the built layers on one rank, unpaged: ``total_bytes`` is the predicted cache."""
    predicted_model: KvFootprint
    """kv_footprint of every layer of the model on one rank, unpaged."""
    paged_model_cache_bytes: int | None
    """The deployment's paged cache (whole blocks), every layer, one rank; None when not paged."""
    predicted_weight_bytes: int
    """count_params of the built stack (embedding, built layers, final norm, head) on one rank, times the dtype."""
    predicted_model_weight_bytes: int
    """The same for every layer of the model (one rank)."""
    predicted_layer_weight_bytes: list[int]
    """Each decoder layer of the model on one rank, its own tensors (attention or mixer, MLP or MoE, norms), times
    the dtype."""
    workspace_bytes: int
    """Estimated activations of the largest step (the prefill): one layer at a time, plus the logits."""
    required_bytes: int
    """weights + cache + workspace of the built stack: what the precheck compares with free memory."""
    free_bytes: int | None
    """Free device memory when planned; ``None`` when unknown (no precheck)."""
    notes: list[str] = Field(default_factory=empty_list)
    """What the plan changed or ignored from the options (a clamped prefill, an --mla-cache that does not apply)."""

    @property
    def predicted_cache_bytes(self) -> int:
        return self.predicted.total_bytes

    @property
    def value_bytes(self) -> int:
        return storage_format(self.dtype).bits // 8

    def weight_kind(self, layer: int) -> WeightKind:
        """``moe`` for an MoE layer of the model, ``dense`` otherwise (MoE models' leading or interleaved dense ones)."""
        return weight_kind(self.model, layer)


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
    """One rank's shape: query heads / tp, its KV heads (replicated when tp > n_kv), d_ff / tp of every MLP, and as
    ``vocab_size`` the rows of the embedding and LM head it holds (``core.tensor_parallel.vocab_rows_per_rank``).

    Raises ``BadInputError`` when tp does not split the heads or an MLP width evenly.
    """
    kv_per_rank = kv_heads_per_rank(model, tp, mla_cache)  # raises BadInputError when tp does not split the heads
    n_heads = model.attention.n_heads // tp
    n_kv = n_heads if model.attention.mla is not None else kv_per_rank
    widths = {"d_ff": model.block.d_ff}
    if model.block.moe is not None:
        widths["d_ff_expert"] = model.block.moe.d_ff_expert
        if model.block.moe.d_ff_shared is not None:
            widths["d_ff_shared"] = model.block.moe.d_ff_shared
    for name, width in widths.items():
        if width % tp:
            raise BadInputError(f"{name} ({width}) must be divisible by tp ({tp}): pick a tp that divides it")
    # Re-validated, so the variant follows the shard's heads: 64 / 8 GQA over 16 ranks is 4 / 1, MQA.
    changes: dict[str, object] = {"attention.n_heads": n_heads, "attention.n_kv_heads": n_kv}
    changes["block.d_ff"] = model.block.d_ff // tp
    changes["vision"] = None  # the torch decoder builds no vision tower: the rank's shape is the decoder's
    if tp > 1:  # the rank's rows of the padded vocabulary (embedding and LM head), as nn.vocab_parallel builds them
        changes["embeddings.vocab_size"] = vocab_rows_per_rank(model.embeddings.vocab_size, tp, built_vocab_padding(tp))
    for name, width in widths.items():
        if name != "d_ff":
            changes[f"block.moe.{name}"] = width // tp
    return with_fields(model, changes, derive=["attention.variant"])


def layer_kinds(model: ModelSpec, n_layers: int) -> list[LayerKind]:
    """The kind (global or local) of each of the model's first ``n_layers`` layers."""
    return [model.layer_kind(i) for i in range(n_layers)]


def weight_kind(model: ModelSpec, layer: int) -> WeightKind:
    """``moe`` when layer ``layer`` of ``model`` has an MoE MLP, else ``dense``."""
    return "moe" if model.is_moe_layer(layer) else "dense"


def attended_context(model: ModelSpec, n_layers: int, seq: int, prefill_tokens: int) -> int:
    """Keys one prefill chunk attends at most in the first ``n_layers`` layers: ``seq``, but where every attending
    layer built is a sliding-window one, its window's ring plus the chunk (the K/V repeated and the mask the
    workspace holds are that wide, not the context's: a 1,024-token window at 4M was sized at 4M)."""
    kinds = {kind for kind in layer_kinds(model, n_layers) if kind != "linear"}
    window = model.layers.sliding_window
    if kinds == {"local"} and window is not None:
        return min(seq, window + prefill_tokens)
    return seq


def first_layers(model: ModelSpec, n_layers: int) -> ModelSpec:
    """The model cut to its first ``n_layers`` layers, each keeping its kind (global or local, dense or MoE)."""
    pattern = layer_kinds(model, n_layers) if model.layers.pattern else None
    mlps = [model.mlp_kind(i) for i in range(n_layers)] if model.layers.mlp_pattern else None
    layers = model.layers.model_copy(update={"pattern": pattern, "mlp_pattern": mlps})
    return model.model_copy(update={"n_layers": n_layers, "layers": layers})


def stack_weight_bytes(rank_shape: ModelSpec, n_layers: int, value_bytes: int) -> int:
    """Weights of the stack a rank builds with its first ``n_layers`` layers: count_params x bytes per value."""
    return count_params(first_layers(rank_shape, n_layers)).total * value_bytes


def layer_weight_bytes(rank_shape: ModelSpec, value_bytes: int) -> list[int]:
    """Each decoder layer on one rank: the weights the inventory lists for it (an attention layer's or a mixer's,
    its MLP or MoE, its norms), times the dtype (trial 374 #1: a hybrid's or a Mamba's layer 0 was priced as an
    attention layer, a Mamba layer as its norm alone)."""
    sizes = [0] * rank_shape.n_layers
    for group in tensor_groups(rank_shape)[1:-1]:
        for place in group.places:
            sizes[place] = group_params(group) * value_bytes
    return sizes


def workspace_bytes(
    rank_shape: ModelSpec, *, batch: int, prefill_tokens: int, context: int, value_bytes: int, tp: int = 1
) -> int:
    """Activations of the prefill, the largest step: one layer's at a time (earlier ones are freed), plus logits.

    Per layer: the residual and its norm, q, k, v, the attention output, the MLP's hidden tensors
    (gate, up and their product; an MoE layer's active and shared experts, and the router's scores),
    all at the prefill's ``batch x prefill_tokens`` tokens; twice that, for the temporaries the
    projections and casts make. Plus K and V repeated per query head (the math backend's GQA
    fallback), the boolean causal mask, and the logits (the head's output and an fp32 copy; under tp > 1 the rank's
    block of the vocabulary, and the whole padded width it is gathered into).
    Fused SDPA kernels never materialise the score matrix; a run that falls back to one that does and
    runs out of memory is still exit 3 (``run_verify`` turns the allocator's error into it).
    """
    shape = rank_shape
    if shape.attention.mla is not None:
        mla = shape.attention.mla
        q_width = shape.attention.n_heads * (mla.qk_head_dim + mla.kv_lora_rank + mla.qk_rope_head_dim)
        kv_width = shape.attention.n_heads * (mla.qk_head_dim + mla.v_head_dim) + mla.latent_dim
        q_per_kv = shape.attention.n_heads
        repeated_kv = 0
    else:
        q_width = shape.attention.n_heads * shape.attention.head_dim
        kv_width = 2 * shape.attention.n_kv_heads * shape.attention.head_dim
        q_per_kv = shape.attention.q_per_kv
        repeated_kv = 2 * shape.attention.n_heads * shape.attention.head_dim * context if q_per_kv > 1 else 0
    hidden_per_mlp = 3 if shape.block.mlp == "gated" else 1
    mlp_width = hidden_per_mlp * shape.block.d_ff
    if shape.block.moe is not None:
        moe = shape.block.moe
        experts = moe.n_active_experts * moe.d_ff_expert + moe.n_shared_experts * (moe.d_ff_shared or moe.d_ff_expert)
        mlp_width = max(mlp_width, hidden_per_mlp * experts + moe.n_experts)
    tokens = batch * prefill_tokens
    layer = tokens * (2 * shape.d_model + 2 * q_width + kv_width + mlp_width) * value_bytes
    mask = q_per_kv * prefill_tokens * context if q_per_kv > 1 else prefill_tokens * context  # bool
    logits = tokens * shape.embeddings.vocab_size * (value_bytes + 4)
    if tp > 1:  # rank_shape.vocab_size is the rank's rows; the gather fills tp times as many
        logits += tokens * shape.embeddings.vocab_size * tp * value_bytes
    return 2 * layer + batch * repeated_kv * value_bytes + mask + logits


def unpaged(deployment: DeploymentSpec) -> DeploymentSpec:
    """The deployment as torch builds its cache: contiguous, no paging, a fixed state as transformers holds it."""
    return deployment.model_copy(update={"block_size": None, "state_convention": "transformers"})


@dataclass(frozen=True)
class _Sizer:
    """Bytes of the built stack for any (layers, batch, seq): what the precheck and its suggestions compare."""

    model: ModelSpec
    rank_shape: ModelSpec
    deployment: DeploymentSpec
    tp: int
    device_type: DeviceType
    prefill_tokens: int | None
    value_bytes: int

    def prefill(self, seq: int) -> int:
        default = seq if self.device_type == "cuda" else min(seq, CPU_DEFAULT_PREFILL_TOKENS)
        return min(default if self.prefill_tokens is None else self.prefill_tokens, seq)

    def cache(self, n_layers: int, batch: int, seq: int) -> int:
        deployment = unpaged(self.deployment).model_copy(update={"batch": batch, "seq_len": seq})
        return footprint_for(first_layers(self.model, n_layers), deployment, self.tp).total_bytes

    def required(self, n_layers: int, batch: int, seq: int) -> int:
        prefill = self.prefill(seq)
        workspace = workspace_bytes(
            self.rank_shape, batch=batch, prefill_tokens=prefill,
            context=attended_context(self.model, n_layers, seq, prefill), value_bytes=self.value_bytes, tp=self.tp,
        )  # fmt: skip
        weights = stack_weight_bytes(self.rank_shape, n_layers, self.value_bytes)
        return weights + self.cache(n_layers, batch, seq) + workspace


BUILT_MIXERS = ("gated_deltanet", "mamba", "mamba2", "lightning", "kda", "short_conv")
"""Recurrent kinds whose ``linear`` layers the torch ring builds (``mha_cli.nn.mixers.BUILT_KINDS``, kept torch-free)."""
ACTIVATION_STATE_MIXERS = ("lightning",)
"""Of those, the kinds built with a recurrent state in the activations' dtype (``state_dtype`` activation); the
others keep fp32 only."""


def refuse_unbuilt_layers(model: ModelSpec) -> None:
    """The torch ring builds global attention (MHA/GQA/MQA/MLA) and sliding-window MHA/GQA/MQA (MLA layers take no
    window: refused, as the cache priced for them is a window's), Gated DeltaNet, Mamba, Mamba-2,
    lightning, KDA and short-conv ``linear`` layers, and Mamba-2 beside attention (Falcon-H1): refuse, in one line, a
    model with chunked, other linear-attention / state-space, other parallel-hybrid, KV-sharing or indexer layers,
    or global layers at their own head geometry (``mha kv`` prices them)."""
    kinds = {model.layer_kind(i) for i in range(model.n_layers)}
    built = {"global", "local"}
    recurrent = model.recurrent
    if (
        recurrent is not None
        and recurrent.kind in BUILT_MIXERS
        and (recurrent.state_dtype != "activation" or recurrent.kind in ACTIVATION_STATE_MIXERS)
    ):
        built.add("linear")
    unbuilt = sorted(kinds - built)
    if "linear" in unbuilt and recurrent is not None:
        unbuilt[unbuilt.index("linear")] = f"linear ({recurrent.kind})"
    if recurrent is not None and recurrent.on_attention_layers and recurrent.kind != "mamba2":  # Falcon-H1's
        unbuilt.append(f"{recurrent.kind} beside attention")
    if model.layers.n_kv_shared_layers:
        unbuilt.append("shared K/V")
    if model.attention.mla is not None and model.attention.mla.indexer is not None:
        unbuilt.append("indexer")
    if model.attention.mla is not None and "local" in kinds:  # the MLA module has no window: it would cache all
        unbuilt.append("sliding-window MLA")
    if model.attention.per_kind_geometry:  # Gemma 4: the decoder builds one head geometry
        unbuilt.append("per-kind head geometry")
    if model.embeddings.per_layer_inputs is not None:  # Gemma 4 E2B, E4B
        unbuilt.append("per-layer-embedding")
    with_mlp = {model.has_mlp(i) for i in range(model.n_layers)}
    if len(with_mlp) > 1:  # layer sizes by kind assume all or none have an MLP (Mamba, Mamba-2: none)
        unbuilt.append("MLP-free")
    family = spec_family(model)
    if not unbuilt and family is not None and family.unbuilt is not None:  # Nemotron-H's MLP-only blocks
        unbuilt.append(family.unbuilt)
    if unbuilt:
        raise BadInputError(
            "mha verify builds global attention, sliding-window attention (not on MLA layers) and Gated DeltaNet /"
            " Mamba / Mamba-2 / lightning /"
            f" KDA / short-conv layers only; {model.name} has {', '.join(unbuilt)} layers: price its cache with `mha kv` instead"
        )


def has_state_layers(model: ModelSpec) -> bool:
    """Whether any layer keeps a fixed per-sequence state (a hybrid's linear layers)."""
    return any(model.holds_state(i) for i in range(model.n_layers))


def refuse_split_hybrid(model: ModelSpec, *, tp: int = 1, pp: int | None = None) -> None:
    """A hybrid's mixers are built on one rank, one stage: refuse ``--tp`` / ``--pp`` above 1 in one line."""
    splits = [f"--{name} {degree}" for name, degree in (("tp", tp), ("pp", pp or 1)) if degree > 1]
    if splits and has_state_layers(model):
        raise BadInputError(
            f"mha verify builds {model.name}'s {model.recurrent.kind} layers unsplit: run it without"
            f" {' and '.join(splits)} (one rank, one stage)"
        )


def deployment_tp_degree(deployment: DeploymentSpec) -> int:
    """The tensor-parallel degree: the deployment's tp, else its target's device count, else 1."""
    target = resolve_target(deployment.target) if deployment.target else None
    return resolve_tp(deployment.tp, target)


def check_buildable(
    model: ModelSpec, deployment: DeploymentSpec, *, layers: int | None = None, prefill_tokens: int | None = None
) -> ModelSpec:
    """Every refusal that needs no device: layer kinds the torch ring lacks, a quantised KV dtype, a tp that does not
    split the model, --layers beyond the model. Pure Python, so ``mha verify`` runs it before importing torch.

    Returns one rank's shape (``shard_model``). Raises ``BadInputError`` (exit 2).
    """
    refuse_unbuilt_layers(model)
    refuse_split_hybrid(model, tp=deployment_tp_degree(deployment))
    torch_dtype_name(deployment.kv_dtype)
    rank_shape = shard_model(model, deployment_tp_degree(deployment), deployment.mla_cache)
    validate_options(layers=layers, prefill_tokens=prefill_tokens)
    if layers is not None and layers > model.n_layers:
        raise BadInputError(f"--layers ({layers}) must be between 1 and the model's {model.n_layers} layers")
    learned = model.embeddings.positions - model.embeddings.position_offset  # positions a learned table holds
    if model.embeddings.positions and deployment.seq_len > learned:
        raise BadInputError(
            f"--seq {deployment.seq_len}: {model.name} learns {learned:,} absolute positions (a position table of"
            f" {model.embeddings.positions:,} rows), so no token past them can be built: give --seq {learned} or less"
        )
    return rank_shape


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
    rank_shape = check_buildable(model, deployment, layers=layers, prefill_tokens=prefill_tokens)
    dtype = deployment.kv_dtype
    value_bytes = storage_format(dtype).bits // 8
    tp = deployment_tp_degree(deployment)
    mla_cache = deployment.mla_cache if model.attention.mla is not None else None
    seq, batch = deployment.seq_len, deployment.batch
    notes = []
    past = context_warning(model, seq)  # as kv and check say it (trial 291 #2)
    if past is not None:
        notes.append(past)
    if model.attention.mla is None and "mla_cache" in deployment.model_fields_set:
        notes.append(
            f"--mla-cache {deployment.mla_cache} ignored: {model.name} is {model.attention.variant}, not MLA; its cache is"
            " per-head K/V either way"
        )
    if model.recurrent is not None and deployment.state_convention == "engine":
        torch_state = footprint_for(model, unpaged(deployment), 1).state_bytes_per_seq
        engine_state = footprint_for(model, deployment, 1).state_bytes_per_seq
        state_format = recurrent_state_format(model.recurrent, dtype, "transformers").name
        notes.append(
            f"fixed state predicted as the torch ring holds it (transformers: conv_kernel conv columns, {state_format}"
            f" recurrent state), {torch_state:,} B a sequence over the whole model; vLLM holds {engine_state:,} B"
            " (`mha kv`)"
        )
    if deployment.weight_dtype != dtype:
        notes.append(
            f"weights built in {dtype}, the KV dtype (the modules compute in one dtype); the deployment's"
            f" weight_dtype is {deployment.weight_dtype}"
        )

    if layers is not None:
        wanted, note = layers, f"{layers} of {model.n_layers} (--layers)"
    elif device_type == "cpu" and model.n_layers > CPU_DEFAULT_LAYERS:
        wanted = CPU_DEFAULT_LAYERS
        note = f"{wanted} of {model.n_layers} (CPU default; --layers N to change)"
    else:
        wanted, note = model.n_layers, f"all {model.n_layers}"

    sizer = _Sizer(model, rank_shape, deployment, tp, device_type, prefill_tokens, value_bytes)
    prefill = sizer.prefill(seq)
    if prefill_tokens is not None and prefill < prefill_tokens:
        notes.append(f"--prefill-tokens {prefill_tokens:,} capped at {prefill:,}, the --seq ({seq:,})")
    if prefill == seq:
        prefill_note = f"{prefill:,} tokens (the configured length)"
    elif prefill_tokens is None and device_type == "cpu":
        prefill_note = f"{prefill:,} of {seq:,} tokens (capped on CPU; --prefill-tokens N to change)"
    else:
        prefill_note = f"{prefill:,} of {seq:,} tokens"

    built = wanted
    if free_bytes is not None:
        usable = int(free_bytes * USABLE_FRACTION)
        if sizer.required(wanted, batch, seq) > usable:
            fitting = max((n for n in range(1, wanted + 1) if sizer.required(n, batch, seq) <= usable), default=0)
            if layers is not None or fitting == 0:
                raise OutOfMemoryError(_no_fit_message(sizer, usable, wanted, fitting, batch, seq, device_type))
            built, note = fitting, f"{fitting} of {model.n_layers} (all that fit in free memory)"

    plain = unpaged(deployment)
    predicted_model = footprint_for(model, plain, tp)
    paged = footprint_for(model, deployment, tp).total_bytes if deployment.block_size else None
    workspace = workspace_bytes(
        rank_shape, batch=batch, prefill_tokens=prefill, context=attended_context(model, built, seq, prefill),
        value_bytes=value_bytes, tp=tp,
    )  # fmt: skip
    return VerifyPlan(
        model=model, rank_shape=rank_shape, deployment=deployment, device_type=device_type, tp=tp, dtype=dtype,
        mla_cache=mla_cache, n_layers_built=built, layers_note=note, layer_kinds=layer_kinds(model, built),
        prefill_tokens=prefill, prefill_note=prefill_note,
        predicted=footprint_for(first_layers(model, built), plain, tp), predicted_model=predicted_model,
        paged_model_cache_bytes=paged,
        predicted_weight_bytes=stack_weight_bytes(rank_shape, built, value_bytes),
        predicted_model_weight_bytes=stack_weight_bytes(rank_shape, model.n_layers, value_bytes),
        predicted_layer_weight_bytes=layer_weight_bytes(rank_shape, value_bytes), workspace_bytes=workspace,
        required_bytes=sizer.required(built, batch, seq), free_bytes=free_bytes, notes=notes,
    )  # fmt: skip


def _largest(fits: Callable[[int], bool], upper: int) -> int:
    """The largest n in [1, upper) with ``fits(n)`` (monotone), or 0 when none does."""
    low, high = 0, upper  # fits(low) holds (vacuously for 0), fits(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _no_fit_message(
    sizer: _Sizer, usable: int, layers: int, fitting: int, batch: int, seq: int, device_type: DeviceType
) -> str:
    """One line: what was asked, what is free, and concrete changes that fit (each checked with the same sizer).

    A smaller batch or shorter context shrinks the cache and the workspace but not the weights: each is
    offered only when some value of it fits.
    """
    needed = sizer.required(layers, batch, seq)
    weights = stack_weight_bytes(sizer.rank_shape, layers, sizer.value_bytes)
    ideas = []
    if fitting:
        ideas.append(f"--layers {fitting}")
    smaller_batch = _largest(lambda b: sizer.required(layers, b, seq) <= usable, batch)
    if smaller_batch:
        ideas.append(f"--batch {smaller_batch}")
    shorter_seq = _largest(lambda s: sizer.required(layers, batch, s) <= usable, seq)
    if shorter_seq:
        ideas.append(f"--seq {shorter_seq}")
    if device_type == "cuda":
        ideas.append("--device cpu")
    if not ideas and layers > 1:  # no one change fits: one layer with a shorter context or a smaller batch
        one_layer_seq = _largest(lambda s: sizer.required(1, batch, s) <= usable, seq)
        one_layer_batch = _largest(lambda b: sizer.required(1, b, seq) <= usable, batch)
        ideas += [f"--layers 1 --seq {one_layer_seq}"] if one_layer_seq else []
        ideas += [f"--layers 1 --batch {one_layer_batch}"] if one_layer_batch else []
    if not ideas:
        ideas.append("--layers 1 on a device with more memory")
    return (
        f"{layers} layer(s) need about {format_bytes(needed)} (weights {format_bytes(weights)} + cache + workspace,"
        f" the whole built stack) but the device has {format_bytes(usable)} usable: try {' or '.join(ideas)}"
    )
