"""What experiment ``mla`` records: its settings, one row per model, the chosen rank and conclusion."""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from pydantic import Field

from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec, Variant
from mha_cli.experiments.common import Environment
from mha_cli.experiments.outputs import OutputFiles

CACHE_LIMIT = Fraction(1, 8)
"""The cache must be strictly below this fraction of full MHA's."""
QUALITY_LIMIT_BITS = 1.0
"""Validation log2 perplexity may exceed the baseline's by at most this."""


class MlaSettings(Record):
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    head_dim: int = 16
    """MHA's head width; MLA uses qk_nope + qk_rope = head_dim and v_head_dim = head_dim."""
    qk_rope_head_dim: int = 0
    """MLA's decoupled RoPE key width. 0: position comes from the learned positions alone, as in the
    baseline (a RoPE key would give MLA relative positions that the MHA baseline lacks)."""
    d_ff: int = 192
    ranks: list[int] = Field(default_factory=lambda: [1, 2, 4, 8, 16, 32])
    seq_len: int = 64
    batch: int = 16
    steps: int = 500
    learning_rate: float = 3e-3
    eval_windows: int = 128
    kv_dtype: Literal["fp32"] = "fp32"
    """Cache format (the models train in fp32; the fraction does not depend on it)."""

    @classmethod
    def for_run(cls, *, quick: bool) -> MlaSettings:
        if quick:
            return cls(ranks=[2, 16], seq_len=32, batch=8, steps=10, eval_windows=8)
        return cls()


class MlaRow(Record):
    label: str
    variant: Variant
    kv_lora_rank: int | None
    cache_values_per_token_per_layer: int
    kv_bytes_computed: int
    """``kv_footprint`` total at seq_len tokens, batch 1, all layers."""
    kv_bytes_measured: int
    """Bytes of the trained model's cache tensors (seq_len tokens, batch 1, all layers)."""
    cache_fraction: float
    """kv_bytes_computed / the MHA baseline's."""
    below_cache_limit: bool
    params_measured: int
    params_computed: int
    train_loss: list[float]
    """Training loss per step (nats per byte)."""
    validation_bits: float
    """Validation log2 perplexity: bits per byte."""
    delta_bits: float
    """validation_bits - the baseline's."""
    within_quality_limit: bool
    decode_max_abs_diff: float
    """Largest |logit| difference between cached decoding and the plain forward on one window."""


class MlaResult(Record):
    experiment: Literal["mla"] = "mla"
    command: str
    environment: Environment
    settings: MlaSettings
    quick: bool = False
    """A --quick smoke run: tiny sizes and few steps, its conclusion is not evidence."""
    corpus: str
    train_bytes: int
    validation_bytes: int
    train_topics: int
    validation_topics: int
    cache_limit: float
    quality_limit_bits: float
    rows: list[MlaRow]
    """The MHA baseline first, then one row per rank (ascending)."""
    chosen_rank: int | None
    """Smallest r meeting both limits; None when no rank did."""
    conclusion: str
    files: OutputFiles


class TrainedModel(Record):
    """What ``train_one`` hands to ``build_rows``: the spec and everything measured on the model."""

    spec: ModelSpec
    params_measured: int
    kv_bytes_measured: int
    train_loss: list[float]
    validation_bits: float
    decode_max_abs_diff: float
