"""What a tensor-parallel verify asks of its ranks (``TpJob``) and what it reports (``TpVerifyReport``).

The report is single-device verify's ``VerifyReport`` (built by ``verify.run.build_report`` from every
rank's ``measure_rank`` result) with the tensor-parallel figures added: one entry per rank in ``ranks``,
the all-reduce time of a decode step, and the check that the ranks' logits equal one device's.
"""

from __future__ import annotations

from pydantic import BaseModel

from mha_cli.core.sources import ModelSource
from mha_cli.verify.plan import VerifyPlan
from mha_cli.verify.report import RankResult, VerifyReport


class TpJob(BaseModel):
    """One tensor-parallel verification, as every rank receives it (planned once, in the parent)."""

    loaded: ModelSource
    plan: VerifyPlan
    """Single-device verify's plan at the deployment's tp: shapes, layers built, predictions, the memory fit."""
    reps: int
    tolerance: float | None = None
    """Relative error allowed (numerics checks); ``None``: the dtype's default."""
    max_kv_gib: float | None = None
    max_decode_ms: float | None = None
    check_layers: int
    """Layers of the tp-vs-one-device check: the first few, one of each kind (global/local, dense/MoE)."""
    check_prefill_tokens: int
    """Tokens of the prefill whose last logits start the tp-vs-one-device comparison."""
    check_decode_tokens: int
    """Tokens then decoded one at a time, each one's logits compared."""
    seed: int = 0
    profile: str | None = None
    """``--profile``: the device profile the predicted times use (None: the one ``active_profile`` finds)."""
    timeout_s: float
    """Bound on the whole run and on every collective, in seconds."""

    @property
    def tp(self) -> int:
        return self.plan.tp


class TpBatch(BaseModel):
    """Jobs one launch runs in turn on the same ranks (tests batch several to pay process start-up once)."""

    jobs: list[TpJob]


class TpRank(BaseModel):
    """One rank's figures (JSON ``ranks[i]``): its own tensors' bytes against the calculator, its timings."""

    rank: int
    n_heads: int
    """Query heads of the rank's first attention layer (its own attribute)."""
    n_kv_heads: int
    """KV heads of the rank's first attention layer (its own attribute; MLA: the heads it decompresses, while
    its cache holds one shared latent)."""
    measured_cache_bytes: int
    """nbytes of the rank's caches, the built layers, at seq_len x batch."""
    predicted_cache_bytes: int
    """core.kv's per-rank cache of the built layers (kv_footprint(..., tp).total_bytes)."""
    measured_weight_bytes: int
    """nbytes of the rank's parameters (the built stack)."""
    predicted_weight_bytes: int
    """core.params.params_per_rank of the built stack x bytes per value."""
    decode_ms: float
    """Median decode step on this rank (ms)."""
    allreduce_ms: float
    """All-reduce time per decode step on this rank (median over the timed steps, between synchronisations, ms)."""
    allreduce_calls: int
    """All-reduces per decode step."""


class RankOutcome(BaseModel):
    """What a rank sends rank 0: single-device verify's measurement and the tensor-parallel figures."""

    measured: RankResult
    figures: TpRank


class TpNumerics(BaseModel):
    """The ranks' logits against one device's: same seed-derived weights and tokens, both in fp32."""

    positions: int
    """Logit positions compared: the prefill's last and every decoded token's."""
    max_abs_error: float
    reference_max_abs: float
    relative_error: float
    """max |tp - single| / max |single|."""
    tolerance: float


class TpVerifyReport(VerifyReport):
    """``mha verify --tp N``: single-device verify's report over every rank, plus the tensor-parallel figures."""

    backend: str
    """torch.distributed backend: gloo (CPU) or nccl (CUDA)."""
    ranks: list[TpRank]
    allreduce_ms: float
    """All-reduce time per decode step, averaged over the ranks (ms)."""
    allreduce_share: float
    """allreduce_ms / the ranks' mean decode step (each rank's median)."""
    tp_numerics: TpNumerics
