"""What a pipeline-parallel verify asks of its stages (``PpJob``) and what it reports (``PpVerifyReport``).

Each of ``pp`` stages (of ``tp`` processes each, its tensor-parallel ranks) is one stage of the built stack (``core.pipeline``'s layout: its layers, the embedding on
the first, the norm and head on the last). Every stage measures its own weights and cache against the layout's
prediction and times its share of a prefill and of a decode step and its send to the next stage; rank 0 times a
whole decode step through the pipeline (the last stage sends the next token back). The stages also run
seed-derived fp32 weights over the same tokens, and the last compares their logits with the whole stack's on one
device.
"""

from __future__ import annotations

from pydantic import BaseModel

from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.parallel.report import TpNumerics

PP_CHECK_PREFILL, PP_CHECK_DECODE = 16, 4
"""Tokens of the stages-vs-one-device check: a prefill, then tokens decoded one at a time, each compared."""


class PpJob(BaseModel):
    """One pipeline-parallel verification, as every stage receives it (planned once, in the parent)."""

    source: str
    model: ModelSpec
    deployment: DeploymentSpec
    pp: int
    tp: int = 1
    """Tensor-parallel ranks of each stage: tp x pp processes, rank = stage x tp + its tp rank."""
    device_type: str
    n_layers_built: int
    """Layers of the built stack (a multiple of pp): the model's first, split into pp stages."""
    check_layers: int
    """Layers of the stages-vs-one-device check (a multiple of pp, one of each layer kind where it can)."""
    prefill_tokens: int
    reps: int
    tolerance: float
    seed: int = 0
    timeout_s: float
    assumptions: list[str] = []
    """What loading the source assumed (an unknown model_type read as llama ...), at the head of the report's notes."""


class PpBatch(BaseModel):
    """The pipeline jobs one launch runs (the launcher's job file; ``TpBatch`` is its tensor-parallel twin)."""

    pp_jobs: list[PpJob]


class PpStage(BaseModel):
    """One stage's figures (JSON ``stages[i]``)."""

    stage: int
    tp_rank: int = 0
    first_layer: int
    n_layers: int
    embedding: bool
    head: bool
    predicted_weight_bytes: int
    """core.pipeline.stage_params of the built stack's stage (this tp rank's share) x bytes per value."""
    measured_weight_bytes: int
    predicted_cache_bytes: int
    """core.kv of the stage's layers at seq_len x batch, this tp rank's heads."""
    measured_cache_bytes: int
    prefill_compute_ms: float
    """Median time of this stage's share of a prefill (its layers; the embedding or head where it holds them)."""
    decode_compute_ms: float
    """Median time of this stage's share of a decode step."""
    send_ms: float
    """Median time of sending one decode step's hidden states (or, from the last stage, the next token) on."""


class PpOutcome(BaseModel):
    """What a stage sends rank 0: its figures, and on the last stage the numerics."""

    figures: PpStage
    numerics: TpNumerics | None = None


class DeploymentStage(BaseModel):
    """One stage of the whole model as the deployment splits it (predicted: core.pipeline and core.kv)."""

    stage: int
    n_layers: int
    weight_bytes: int
    """One tensor-parallel rank of the stage."""
    cache_bytes: int


class PpVerifyReport(BaseModel):
    """``mha verify --pp N``: every stage measured against its prediction, the pipeline timed, the output checked."""

    source: str
    model_name: str
    device: str
    dtype: str
    seq_len: int
    batch: int
    pp: int
    tp: int = 1
    backend: str
    n_layers_model: int
    n_layers_built: int
    stages: list[PpStage]
    """One entry per process: stage by stage, each stage's tp ranks in turn."""
    prefill_tokens: int
    prefill_ms: float
    """Median prefill of prefill_tokens x batch through every stage in turn (rank 0: its start to the last's end)."""
    decode_ms: float
    """Median decode step through the pipeline: rank 0 embeds, each stage runs and sends on, the last sends the next
    token back (one token per sequence, no micro-batching)."""
    numerics: TpNumerics
    deployment_stages: list[DeploymentStage]
    """The whole model split into pp stages, predicted: what each GPU of the deployment holds."""
    checks: dict[str, bool]
    check_details: dict[str, str]
    passed: bool
    notes: list[str]
