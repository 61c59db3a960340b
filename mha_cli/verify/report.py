"""The result of ``mha verify``: one pydantic object, rendered as a table or printed as JSON.

Scripts rely on these top-level names: ``predicted_cache_bytes``, ``measured_cache_bytes``
(integers, for the layers actually built), ``decode_ms`` (median per token), ``prefill_ms``,
``device`` and ``checks`` (name -> true/false). ``passed`` is ``all(checks.values())``. With ``--hook``,
``hook`` holds the induction hook's result and ``checks`` an ``induction_hook`` entry.
"""

from __future__ import annotations

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
    """Cached decode against the full forward, on the first built layer."""

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


class VerifyReport(BaseModel):
    """Predicted vs measured cache, latency, bandwidth against the roofline, numerics, checks."""

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
    """Tensor-parallel degree: the layers built are one rank's shard."""
    n_layers_model: int
    n_layers_built: int
    layers_note: str
    extrapolated: bool
    """True when fewer layers were built than the model has: model_* figures are scaled up."""

    predicted_cache_bytes: int
    """kv_footprint(...).total_bytes of the built layers (one rank)."""
    measured_cache_bytes: int
    """Sum of the cache tensors' nbytes of the built layers."""
    allocator_cache_delta_bytes: int | None
    """CUDA: torch.cuda.memory_allocated after the caches minus before; None on CPU."""
    peak_allocated_bytes: int | None
    """CUDA: torch.cuda.max_memory_allocated over the decode and prefill timings; None on CPU."""
    predicted_bytes_per_token_per_layer: int
    """One built layer, one token, one rank (the calculator)."""
    weight_bytes: int
    """Attention weights of the built layers (exact, from the modules)."""
    model_predicted_cache_bytes: int
    """kv_footprint of every layer of the model (one rank)."""
    model_cache_bytes: int
    """Every layer's cache: measured, or extrapolated per layer kind when not all layers were built."""

    prefill_tokens: int
    prefill_note: str
    prefill_ms: float
    """Median time of a prefill of prefill_tokens x batch through the built layers."""
    prefill_tokens_per_s: float
    prefill: TimingStats
    decode_ms: float
    """Median time of one decode step (one token per sequence) at full context through the built layers."""
    decode_tokens_per_s: float
    """batch / decode time."""
    decode: TimingStats
    model_decode_ms: float
    """decode_ms scaled to every layer (n_layers_model / n_layers_built) when extrapolated."""

    decode_bytes_read: int
    """Bytes a decode step must read: the built layers' weights + their caches at full context."""
    achieved_gb_per_s: float
    """decode_bytes_read / decode time, 1e9 bytes per second."""
    peak_gb_per_s: float | None
    peak_source: str
    """Where the peak comes from: the targets database, or the best of several measured copies (CPU)."""
    roofline_decode_ms: float | None
    """decode_bytes_read / peak bandwidth: the memory-bound floor of a decode step."""
    roofline_efficiency: float | None
    """achieved / peak bandwidth (1.0 = at the roof). Above 1 when the peak measurement (CPU: a copy) came out
    below what this run achieved, e.g. because the built layers' caches fit in the CPU's caches."""

    sdpa_backends: dict[str, list[str]]
    """Phase (decode, prefill, numerics) -> SDPA backends that ran."""
    numerics: NumericsResult
    thresholds: dict[str, float]
    """Thresholds given on the command line (max_kv_gib, max_decode_ms, tolerance)."""
    checks: dict[str, bool]
    check_details: dict[str, str] = {}
    """Check name -> its figure against the limit, e.g. ``model cache 128.0 MiB > 0.001 GiB``."""
    passed: bool
    notes: list[str]
    hook: HookResult | None = None
    """The testability hook (``--hook``): the scaled copy's induction accuracy and its control; None without it."""
