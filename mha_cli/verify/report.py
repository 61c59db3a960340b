"""The result of ``mha verify``: pydantic objects, rendered as a table or printed as JSON.

Every figure says what it covers. Top level: the stack built on one rank (embedding, the built
layers, final norm, LM head). ``per_rank``: every layer on one rank. ``whole_model``: every layer on
every rank, the deployment. Figures not measured directly are extrapolated from measured ones and
say so (``extrapolated``, ``how``).

Scripts rely on these top-level names: ``predicted_cache_bytes``, ``measured_cache_bytes``,
``predicted_weight_bytes``, ``measured_weight_bytes``, ``weight_bytes_per_layer`` (integers, the
built stack on one rank), ``decode_ms`` (median per token, built stack), ``prefill_ms``, ``device``,
``checks`` (name -> true/false), ``per_rank``, ``whole_model`` and ``allocator`` (CUDA; null
elsewhere). ``passed`` is ``all(checks.values())``. With ``--hook``, ``hook`` holds the induction
hook's result and ``checks`` an ``induction_hook`` entry.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from mha_cli.hook.result import HookResult


class TimingStats(BaseModel):
    """Repeated timings of one step, in milliseconds."""

    reps: int
    warmup: int
    median_ms: float
    min_ms: float
    max_ms: float
    spread_ms: float
    """Interquartile range (p75 - p25); 0 with fewer than 2 repetitions."""
    timer: str
    """cuda-events or perf_counter (between device synchronisations)."""


class NumericsResult(BaseModel):
    """Cached decode against the full forward, on the whole built stack (logits)."""

    tokens: int
    """Sequence length of the test: a prefill, then one token at a time."""
    decode_tokens: int
    """How many of those tokens went through the cache one at a time."""
    max_abs_error: float
    reference_max_abs: float
    relative_error: float
    """max |cached - full| / max |full|."""
    tolerance: float
    passed: bool
    routing_differing: int | None = None
    """MoE stacks: (token, MoE layer) expert choices the cached pass would have made differently from the full
    forward (near-ties under rounding); the check replays the full forward's choices. None for a dense stack."""
    window_unchecked: str | None = None
    """Why the comparison stops short of the model's sliding window (``verify.rank.window_unchecked``): its mask and
    ring cache are then not compared; None where it runs past it, or there is none."""


class CacheFill(BaseModel):
    """What wrote each position of the cache before the decode timing: every figure in tokens of one sequence."""

    prefilled_tokens: int
    """Positions [0, prefilled_tokens) written by the model's own prefill (the timed one)."""
    decode_position: int
    """Each timed decode step writes this position (seq_len - 1) and attends to every position before it."""
    unwritten_tokens: int
    """Positions between the prefill and the decode position left as allocated (zeros); 0 when the prefill
    covered them. A decode step's time does not depend on the values it reads."""
    how: str


class AllocatorCheck(BaseModel):
    """CUDA only: ``torch.cuda.memory_allocated`` around each allocation, against the prediction.

    The caching allocator rounds every block up to a multiple of 512 B and may hand out a block up
    to 1 MiB larger than asked (a remainder of a segment of at most 1 MiB is not split off), so for
    ``k`` tensors: expected <= change <= expected + k x (1 MiB + 512 B) (``tolerance_bytes``).
    """

    baseline_bytes: int
    """Allocated before the build (the CUDA context's own tensors, if any)."""
    weights_change_bytes: int
    """After the build minus before: parameters and buffers."""
    weights_expected_bytes: int
    """predicted_weight_bytes + buffer_bytes (buffers, e.g. RoPE tables, are not parameters: measured)."""
    weights_tolerance_bytes: int
    weights_tensors: int
    cache_change_bytes: int
    """After ``new_cache`` minus after the build."""
    cache_expected_bytes: int
    """predicted_cache_bytes."""
    cache_tolerance_bytes: int
    cache_tensors: int
    prefill_peak_bytes: int
    """torch.cuda.max_memory_allocated during the prefill, minus what was allocated before it: the workspace."""
    predicted_workspace_bytes: int
    """The plan's workspace estimate (used by the memory precheck), for comparison; not a check."""
    tolerance_rule: str
    weights_ok: bool
    cache_ok: bool


class MemoryPrecheck(BaseModel):
    """What the plan compared with free memory before allocating: the whole built stack on one rank, in bytes."""

    weight_bytes: int
    cache_bytes: int
    workspace_bytes: int
    """Estimated activations of the prefill (one layer at a time) and its logits."""
    required_bytes: int
    """weight_bytes + cache_bytes + workspace_bytes."""
    free_bytes: int | None
    """Free device memory when planned (CUDA: mem_get_info; CPU: MemAvailable); None when unknown."""
    usable_bytes: int | None
    """The share of free_bytes a run may use (90%)."""


class ScopeFigures(BaseModel):
    """Bytes and decode time over one scope: every layer of one rank, or every layer of every rank."""

    scope: Literal["per_rank", "whole_model"]
    covers: str
    """In words, e.g. ``all 32 layers, one of 2 tensor-parallel ranks``."""
    n_layers: int
    n_ranks: int
    """Ranks the figures add up (1 for per_rank)."""
    predicted_cache_bytes: int
    """core.kv for every layer (unpaged), these ranks."""
    cache_bytes: int
    """Measured cache bytes; for layers or ranks not built, extrapolated from the built ones of the same kind."""
    predicted_weight_bytes: int
    """count_params of every layer x dtype, these ranks (replicated embeddings counted on each)."""
    weight_bytes: int
    """Measured parameter bytes; extrapolated like cache_bytes."""
    paged_cache_bytes: int | None
    """The deployment's paged cache (core.kv, whole blocks), these ranks; None when not paged."""
    decode_ms: float
    """One decode step of every layer: measured, or scaled from the built stack by the bytes it reads."""
    extrapolated: bool
    how: str
    """How cache_bytes, weight_bytes and decode_ms were obtained."""


class RankResult(BaseModel):
    """What one rank built and measured: ``measure_rank``'s result (one process, one device)."""

    tp_rank: int
    tp_size: int
    n_layers_built: int
    measured_weight_bytes: int
    """Sum of the built parameters' nbytes (shared parameters once)."""
    layer_weight_bytes: list[int]
    """Parameter bytes of each built decoder layer."""
    non_layer_weight_bytes: int
    """Embedding, final norm and LM head: measured_weight_bytes minus the layers."""
    buffer_bytes: int
    """Registered buffers (e.g. RoPE tables): allocated, not parameters."""
    measured_cache_bytes: int
    layer_cache_bytes: list[int]
    """nbytes of each built layer's cache."""
    measured_state_bytes: int = 0
    """Of measured_cache_bytes, the linear layers' fixed states (``MixerState.nbytes``: conv + recurrent)."""
    cache_fill: CacheFill
    prefill: TimingStats
    decode: TimingStats
    numerics: NumericsResult
    sdpa_backends: dict[str, list[str]]
    """Phase (decode, prefill, numerics) -> SDPA backends that ran."""
    allocator: AllocatorCheck | None
    decode_dispatches: int = 0
    """Operators one decode step dispatched (counted on its warm-up): the fixed cost the cost model charges."""
    prefill_dispatches: int = 0


class VerifyReport(BaseModel):
    """Predicted vs measured weights and cache, latency against the roofline, numerics, checks."""

    source: str
    source_kind: str
    model_name: str
    variant: str
    mla_cache: str | None
    device: str
    device_name: str
    torch_version: str
    dtype: str
    """dtype of the modules and the cache (the deployment's kv_dtype)."""
    seq_len: int
    batch: int
    tp: int
    """Tensor-parallel degree: the stack built is one rank's shard (rank ``ranks_measured[0]``)."""
    ranks_measured: list[int]
    n_layers_model: int
    n_layers_built: int
    layers_note: str
    extrapolated: bool
    """True when fewer layers (or ranks) were built than the deployment has: per_rank / whole_model say how."""
    built: str
    """What the top-level figures cover, in words."""

    predicted_weight_bytes: int
    """count_params of the built stack on one rank x dtype (core)."""
    measured_weight_bytes: int
    """Sum of the built parameters' nbytes."""
    weight_bytes_per_layer: int
    """Parameter bytes of one built decoder layer (layer 0) on one rank."""
    predicted_weight_bytes_per_layer: int
    predicted_cache_bytes: int
    """core.kv of the built layers on one rank (unpaged)."""
    measured_cache_bytes: int
    """Sum of the caches' nbytes, sized by ``new_cache`` from the layers' own attributes."""
    predicted_bytes_per_token_per_layer: int
    """One built layer that caches tokens, one token, one rank (core.kv)."""
    predicted_state_bytes: int = 0
    """Of predicted_cache_bytes, the fixed state of the built linear layers, the whole batch, one rank (core.kv's
    ``state_bytes_per_layer``); 0 without such layers."""
    measured_state_bytes: int = 0
    """Of measured_cache_bytes, the built linear layers' ``MixerState`` bytes (conv + recurrent state)."""
    weights_approximate: bool = False
    """True for a family whose ``count_params`` still misses some weights (``core.deployment.MIXER_WEIGHTS_NOTE``);
    the built layers are counted exactly, so ``weight_bytes_match`` is checked all the same."""
    cache_fill: CacheFill
    allocator: AllocatorCheck | None
    """CUDA only; None elsewhere."""
    precheck: MemoryPrecheck
    per_rank: ScopeFigures
    whole_model: ScopeFigures

    prefill_tokens: int
    prefill_note: str
    prefill_ms: float
    """Median time of a prefill of prefill_tokens x batch through the built stack (logits of every position)."""
    prefill_tokens_per_s: float
    prefill: TimingStats
    decode_ms: float
    """Median time of one decode step (one token per sequence, at position seq_len - 1) through the built stack."""
    decode_tokens_per_s: float
    """batch / decode time."""
    decode: TimingStats

    decode_bytes_read: int
    """Bytes a decode step of the built stack must read (core): the weights it touches + the cache it attends to."""
    achieved_gb_per_s: float
    """decode_bytes_read / decode time, 1e9 bytes per second."""
    peak_gb_per_s: float | None
    peak_source: str
    """Where the peak comes from: the targets database, or the best of several measured copies (CPU)."""
    roofline_decode_ms: float | None
    """decode_bytes_read / peak bandwidth: the memory-bound floor of a decode step of the built stack."""
    decode_vs_roofline: float | None
    """decode_ms / roofline_decode_ms (1.0 = at the roof; larger is slower)."""
    roofline_efficiency: float | None
    """achieved / peak bandwidth = 1 / decode_vs_roofline. Above 1 when the peak measurement (CPU: a copy)
    came out below what this run achieved."""

    predicted_decode_ms: float | None = None
    """The cost model's decode step of the built stack on ``prediction_profile`` (None without a profile)."""
    predicted_prefill_ms: float | None = None
    prediction_ratio: float | None = None
    """decode_ms / predicted_decode_ms (1.0: as predicted; above 1: slower)."""
    prefill_prediction_ratio: float | None = None
    """prefill_ms / predicted_prefill_ms."""
    prediction_profile: str | None = None
    """The profile's name and kind (prior or calibrated), or why there is none."""
    prediction_how: str | None = None

    sdpa_backends: dict[str, list[str]]
    numerics: NumericsResult
    thresholds: dict[str, float]
    """Thresholds given on the command line (max_kv_gib, max_decode_ms, tolerance)."""
    checks: dict[str, bool]
    check_details: dict[str, str] = {}
    """Check name -> its figure against the limit, e.g. ``whole-model cache 128.0 MiB > 0.001 GiB``."""
    passed: bool
    notes: list[str]
    hook: HookResult | None = None
    """The testability hook (``--hook``): the scaled copy's induction accuracy and its control; None without it."""
