"""What experiment ``mla`` records: its settings, every training run, one row per model, the floors and answers."""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from pydantic import Field

from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec
from mha_cli.experiments.common import Environment
from mha_cli.experiments.outputs import OutputFiles
from mha_cli.experiments.seeds import MIN_SEEDS, SeedSpread

CACHE_LIMIT = Fraction(1, 8)
"""The cache must be strictly below this fraction of full MHA's."""
QUALITY_LIMIT_BITS = 1.0
"""The lesson's limit: validation log2 perplexity may exceed the baseline's by at most this."""

Verdict = Literal["yes", "no", "unclear"]
"""Whether every seed meets a limit (yes), none does (no), or the seeds disagree (unclear)."""
ModelKind = Literal["mha", "mla", "no-attention"]
Limit = Literal["one-bit", "seed-spread"]
"""The two quality limits: the lesson's 1 bit, and the baseline's own seed range."""


class MlaSettings(Record):
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    head_dim: int = 16
    """MHA's head width, all of it rotated by RoPE; MLA's value heads have this width too."""
    qk_nope_head_dim: int = 16
    """MLA's per-head query/key width without position: head_dim, in rule MHA030's (DeepSeek's) proportions."""
    qk_rope_head_dim: int = 8
    """MLA's decoupled RoPE key (shared by all heads, cached beside the latent): head_dim / 2 (MHA030)."""
    rule_rank: int = 64
    """The latent rule MHA030 recommends for this head_dim (4 x head_dim, ``core.variants.mla_for_shape``)."""
    d_ff: int = 192
    ranks: list[int] = Field(default_factory=lambda: [1, 2, 4, 8, 16, 64])
    """Latent ranks tried: down to 1, on both sides of the cache limit, and the rule's."""
    seq_len: int = 128
    batch: int = 16
    steps: int = 1000
    learning_rate: float = 3e-3
    warmup_steps: int = 50
    final_lr_fraction: float = 0.1
    """Cosine decay from the end of the warm-up to this fraction of the learning rate."""
    eval_windows: int = 128
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    ngram_orders: list[int] = Field(default_factory=lambda: [2, 3, 4, 5])
    """Orders of the count-based Kneser-Ney floors (2: the previous byte)."""
    kv_dtype: Literal["fp32"] = "fp32"
    """Cache format (the models train in fp32; the fraction does not depend on it)."""

    @classmethod
    def for_run(cls, *, quick: bool, seed: int = 0, device_type: str = "cpu") -> MlaSettings:
        """The default CPU run (about 10 minutes on 2 cores), a seconds-long smoke run, or a larger GPU run."""
        seeds = [seed + i for i in range(MIN_SEEDS)]
        if quick:
            return cls(ranks=[2, 16], seq_len=32, batch=8, steps=10, warmup_steps=2, eval_windows=8,
                       seeds=[seed], ngram_orders=[2, 3])  # fmt: skip
        if device_type == "cuda":  # sized for a data-centre GPU; not measured on this project's CPU machines
            return cls(d_model=256, n_layers=4, n_heads=8, head_dim=32, qk_nope_head_dim=32, qk_rope_head_dim=16,
                       rule_rank=128, d_ff=768, ranks=[1, 2, 4, 8, 16, 32, 128], seq_len=256, batch=32, steps=3000, learning_rate=2e-3,
                       warmup_steps=100, eval_windows=120, seeds=seeds)  # fmt: skip
        return cls(seeds=seeds)


class MlaJob(Record):
    """One training run: a model and a seed."""

    kind: ModelKind
    spec: ModelSpec
    seed: int
    settings: MlaSettings
    device: str


class MlaRun(Record):
    """What one training run measured."""

    kind: ModelKind
    kv_lora_rank: int | None
    seed: int
    params_measured: int
    kv_bytes_measured: int
    """Bytes of the trained model's cache tensors after a cached decode of one validation window (batch 1)."""
    train_curve_bits: list[float]
    """Mean training loss (bits per byte) of each block of ``CURVE_EVERY`` steps."""
    validation_bits: float
    """Validation log2 perplexity: bits per byte."""
    decode_max_abs_diff: float | None
    """Largest |logit| difference between cached decoding and the plain forward (None: no cache)."""


class NgramFloor(Record):
    order: int
    """Bytes the model reads: order - 1 before the predicted one."""
    validation_bits: float


class MlaRow(Record):
    label: str
    kind: ModelKind
    kv_lora_rank: int | None
    cache_values_per_token_per_layer: int
    kv_bytes_computed: int
    """``kv_footprint`` total at seq_len tokens, batch 1, all layers (0 without attention)."""
    kv_bytes_measured: int
    cache_fraction: float
    """kv_bytes_computed / the MHA baseline's."""
    below_cache_limit: bool
    params_measured: int
    params_computed: int
    validation_bits: SeedSpread
    delta_bits: SeedSpread
    """validation_bits - the baseline's, seed by seed (same seed: same initial stream and batches)."""
    within_quality_limit: Verdict
    """Every seed's delta <= QUALITY_LIMIT_BITS (yes), none (no), or some (unclear)."""
    within_seed_spread: Verdict | None
    """Every seed's delta <= the baseline's seed range (max - min of its seeds: the noise between seeds) (yes),
    none (no), or some (unclear); None with one seed, which has no spread to judge by (trial 350 #2: "yes" for every
    row, the control's too)."""
    decode_max_abs_diff: float | None
    """Largest over the seeds; None for the no-attention control (nothing cached)."""


class MlaAnswer(Record):
    """The lesson's question at one quality limit."""

    limit: str
    chosen_rank: int | None
    """Smallest r under the cache limit that meets this quality limit on every seed; None when none did."""
    sentence: str


class MlaResult(Record):
    experiment: Literal["mla"] = "mla"
    command: str
    environment: Environment
    settings: MlaSettings
    quick: bool = False
    """A --quick smoke run: tiny sizes and few steps, its conclusions are not evidence."""
    corpus: str
    train_bytes: int
    validation_bytes: int
    train_topics: int
    validation_topics: int
    seeds: list[int]
    cache_limit: float
    quality_limit_bits: float
    chance_bits: float
    """log2(256): guessing bytes uniformly."""
    ngram_bits: list[NgramFloor]
    """Count-based Kneser-Ney floors on the same validation windows."""
    no_attention_bits: SeedSpread
    """The control: the same decoder with its attention zeroed."""
    baseline_bits: SeedSpread
    """The MHA baseline."""
    attention_matters: bool
    """The baseline is clearly below the no-attention control and more than QUALITY_LIMIT_BITS below it on
    every seed: only then can the 1-bit limit fail."""
    rows: list[MlaRow]
    """The MHA baseline first, then one row per rank (ascending), then the no-attention control."""
    runs: list[MlaRun]
    answers: list[MlaAnswer]
    """At the lesson's 1-bit limit, then at the seed spread."""
    conclusion: str
    files: OutputFiles
