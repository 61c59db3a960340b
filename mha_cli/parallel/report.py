"""What a tensor-parallel verify asks of its ranks (``TpJob``) and what they report (``RankResult``,
``TpVerifyReport``). Pydantic only: the parent reads the report without importing torch."""

from __future__ import annotations

from typing import Literal

from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, MlaCacheMode, ModelSpec

DeviceType = Literal["cpu", "cuda"]


class TpJob(Record):
    """One tensor-parallel verification, as every rank receives it."""

    source: str
    source_kind: str
    model: ModelSpec
    """The configured model (all layers, unsharded)."""
    deployment: DeploymentSpec
    tp: int
    device_type: DeviceType
    n_layers: int
    """Layers built: the model's first n_layers (the rest is not measured)."""
    layers_note: str
    mla_mode: MlaCacheMode
    prefill_tokens: int
    """Tokens of the prefill whose last logits start the comparison."""
    decode_tokens: int
    """Tokens decoded one at a time after the prefill, each compared with the single device."""
    reps: int
    """Timed decode steps (median reported), after ``DECODE_WARMUP`` untimed ones."""
    seed: int = 0
    tolerance: float | None = None
    """Relative error allowed between the tp and single-device logits; ``None``: the dtype's default."""
    timeout_s: float
    """Bound on the whole run and on every collective, in seconds."""


class TpBatch(Record):
    """Jobs one launch runs in turn on the same ranks (tests batch several to pay process start-up once)."""

    jobs: list[TpJob]


class RankResult(Record):
    """What one rank built and measured."""

    rank: int
    device: str
    n_heads: int
    """Query heads of the rank's first attention layer (its own attribute)."""
    n_kv_heads: int
    """KV heads of the rank's first attention layer (its own attribute; the latent counts as 1 for MLA)."""
    measured_cache_bytes: int
    """nbytes of the rank's caches, every built layer, at seq_len x batch."""
    predicted_cache_bytes: int
    """core.kv's per-rank cache of the built layers (kv_footprint(..., tp).total_bytes)."""
    measured_weight_bytes: int
    """nbytes of the rank's parameters."""
    predicted_weight_bytes: int
    """core.tensor_parallel.params_per_rank of the built layers x bytes per value."""
    decode_ms: float
    """Median time of one decode step on this rank (ms)."""
    allreduce_ms: float
    """Median time per decode step spent in all-reduces on this rank, timed between synchronisations (ms)."""
    allreduce_calls: int
    """All-reduces in one decode step."""


class TpNumerics(Record):
    """The tensor-parallel logits against one device's, same seed-derived weights and tokens."""

    positions: int
    """Logit positions compared: the prefill's last and every decoded token's."""
    max_abs_error: float
    reference_max_abs: float
    relative_error: float
    """max |tp - single| / max |single|."""
    tolerance: float


class TpVerifyReport(Record):
    """``mha verify --tp N``: every rank's cache and weights against the calculator, the output against one device."""

    source: str
    source_kind: str
    model_name: str
    variant: str
    mla_cache: MlaCacheMode | None
    device: str
    device_name: str
    backend: str
    """torch.distributed backend: gloo (CPU) or nccl (CUDA)."""
    torch_version: str
    dtype: str
    seq_len: int
    batch: int
    tp: int
    n_layers_model: int
    n_layers_built: int
    layers_note: str
    prefill_tokens: int
    decode_tokens: int
    decode_context: int
    """Tokens a timed decode step attends to: seq_len (the step at position seq_len - 1)."""
    ranks: list[RankResult]
    decode_ms: float
    """Median decode step, averaged over the ranks (ms)."""
    allreduce_ms: float
    """All-reduce time per decode step, averaged over the ranks (ms)."""
    allreduce_share: float
    """allreduce_ms / decode_ms."""
    deployment_cache_bytes: int
    """Measured caches summed over the ranks (replicated KV heads counted on every rank)."""
    deployment_predicted_cache_bytes: int
    """core.kv's total_bytes_all_ranks of the built layers."""
    deployment_weight_bytes: int
    """Measured parameters summed over the ranks (replicated weights counted on every rank)."""
    numerics: TpNumerics
    checks: dict[str, bool]
    check_details: dict[str, str]
    passed: bool
    notes: list[str]
