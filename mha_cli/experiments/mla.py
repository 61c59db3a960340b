"""Experiment ``mla``: how small can MLA's latent be before the language model suffers?

A tiny byte-level LM is trained on Python's help topics (``data.load_pydoc_corpus``), once with
full MHA (the baseline) and once per latent rank r with absorbed MLA: K and V compressed to one
r-wide latent (plus a decoupled RoPE key if ``qk_rope_head_dim`` > 0; none by default, so that
position reaches MLA and the baseline the same way), which is all the cache stores; heads
decompress it at attention time. All models share width, depth, heads, learned positions,
batches and settings. Goal: the smallest r whose cache is below 1/8 of MHA's while its validation log2
perplexity (bits per byte) is within 1 bit of the baseline's.

Cache figures are per layer per token, computed by ``core.kv`` and measured on each trained
model's cache after a prefill + token-by-token decode of one validation window (which must give
the logits of the plain forward pass: ``decode_max_abs_diff``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import torch
from pydantic import BaseModel

from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.schemas import MLASpec, ModelSpec, Variant
from mha_cli.experiments.common import (
    Environment,
    ExperimentOutputs,
    OutputFiles,
    command_line,
    deterministic_run,
    markdown_table,
    new_figure,
    progress_bar,
    report_header,
    seeded_generator,
)
from mha_cli.experiments.data import ByteTokenizer, TextCorpus, evaluation_windows, load_pydoc_corpus, random_windows
from mha_cli.experiments.tiny_lm import TinyLM, cache_nbytes, n_parameters
from mha_cli.experiments.train import TrainSettings, evaluate, nats_to_bits, trailing_mean, train
from mha_cli.nn.device import resolve_device

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CACHE_LIMIT = Fraction(1, 8)
"""The cache must be strictly below this fraction of full MHA's."""
QUALITY_LIMIT_BITS = 1.0
"""Validation log2 perplexity may exceed the baseline's by at most this."""


class MlaSettings(BaseModel):
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    head_dim: int = 16
    """MHA's head width; MLA uses qk_nope + qk_rope = head_dim and v_head_dim = head_dim."""
    qk_rope_head_dim: int = 0
    """MLA's decoupled RoPE key width. 0: position comes from the learned positions alone, as in the
    baseline (a RoPE key would give MLA relative positions that the MHA baseline lacks)."""
    d_ff: int = 192
    ranks: list[int] = [1, 2, 4, 8, 16, 32]
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


class MlaRow(BaseModel):
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


class MlaResult(BaseModel):
    experiment: Literal["mla"] = "mla"
    command: str
    environment: Environment
    settings: MlaSettings
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


def baseline_spec(settings: MlaSettings) -> ModelSpec:
    return tiny_spec(settings, "tiny-mha", mla=None)


def mla_spec(settings: MlaSettings, rank: int) -> ModelSpec:
    latent = MLASpec(
        kv_lora_rank=rank,
        qk_rope_head_dim=settings.qk_rope_head_dim,
        qk_nope_head_dim=settings.head_dim - settings.qk_rope_head_dim,
        v_head_dim=settings.head_dim,
    )
    return tiny_spec(settings, f"tiny-mla-r{rank}", mla=latent)


def tiny_spec(settings: MlaSettings, name: str, mla: MLASpec | None) -> ModelSpec:
    """The shape every model shares; ``mla`` turns the attention into MLA (head_dim then follows from it)."""
    return ModelSpec(
        name=name,
        d_model=settings.d_model,
        n_layers=settings.n_layers,
        n_heads=settings.n_heads,
        head_dim=settings.head_dim,
        mla=mla,
        vocab_size=ByteTokenizer.vocab_size,
        d_ff=settings.d_ff,
        position_embeddings=settings.seq_len,
    )


def run_mla(
    *, quick: bool = False, seed: int = 0, device: str = "auto", out_dir: Path | None = None, force: bool = False
) -> MlaResult:
    """Train the baseline and every rank, measure caches, pick the rank, plot and write the outputs."""
    settings = MlaSettings.for_run(quick=quick)
    outputs = ExperimentOutputs("mla", out_dir, force=force)
    outputs.check_writable()
    torch_device = resolve_device(device)
    corpus = load_pydoc_corpus()
    specs = [baseline_spec(settings)] + [mla_spec(settings, rank) for rank in sorted(settings.ranks)]
    started = time.perf_counter()
    trained = []
    with deterministic_run(seed, torch_device) as environment, progress_bar() as progress:
        task = progress.add_task("mla: training", total=len(specs) * settings.steps)
        for spec in specs:
            progress.update(task, description=f"mla: {spec.name}")
            trained.append(train_one(settings, spec, corpus, seed, torch_device, lambda: progress.advance(task)))
    environment.wall_seconds = round(time.perf_counter() - started, 1)
    rows = build_rows(settings, trained)
    chosen = choose_rank(rows)
    result = MlaResult(
        command=command_line("mla", quick=quick, seed=seed, device=device, out_dir=out_dir),
        environment=environment,
        settings=settings,
        corpus=corpus.source,
        train_bytes=len(corpus.train),
        validation_bytes=len(corpus.validation),
        train_topics=corpus.n_train_topics,
        validation_topics=corpus.n_validation_topics,
        cache_limit=float(CACHE_LIMIT),
        quality_limit_bits=QUALITY_LIMIT_BITS,
        rows=rows,
        chosen_rank=chosen,
        conclusion=conclusion(rows, chosen),
        files=outputs.files,
    )
    outputs.write(mla_report(result), mla_figure(result), result)
    return result


class TrainedModel(BaseModel):
    """What ``train_one`` hands to ``build_rows``: the spec and everything measured on the model."""

    spec: ModelSpec
    params_measured: int
    kv_bytes_measured: int
    train_loss: list[float]
    validation_bits: float
    decode_max_abs_diff: float


def train_one(
    settings: MlaSettings,
    spec: ModelSpec,
    corpus: TextCorpus,
    seed: int,
    device: torch.device,
    on_step: Callable[[], None],
) -> TrainedModel:
    torch.manual_seed(seed)
    model = TinyLM(spec, mla_mode="absorbed", device=device)
    batches = seeded_generator(seed)  # the same batches for every model
    losses = train(
        model,
        lambda: random_windows(corpus.train, settings.batch, settings.seq_len, batches),
        TrainSettings(steps=settings.steps, learning_rate=settings.learning_rate),
        device,
        on_step,
    )
    inputs, targets = evaluation_windows(corpus.validation, settings.seq_len, settings.eval_windows)  # (n, s) each
    validation_bits = nats_to_bits(evaluate(model, inputs, targets, device))
    caches = model.new_cache(1, settings.seq_len, dtype=settings.kv_dtype)
    difference = cached_decode_difference(model, inputs[:1].to(device), caches)
    return TrainedModel(
        spec=spec,
        params_measured=n_parameters(model),
        kv_bytes_measured=cache_nbytes(caches),
        train_loss=losses,
        validation_bits=validation_bits,
        decode_max_abs_diff=difference,
    )


@torch.no_grad()
def cached_decode_difference(model: TinyLM, tokens: torch.Tensor, caches: list) -> float:
    """Prefill half of ``tokens`` (1, s) into ``caches``, decode the rest one token at a time; return
    the largest |logit| difference from the plain forward pass (float rounding only, if the cache works)."""
    model.eval()
    s = tokens.shape[1]
    prefill = s // 2
    reference = model(tokens)  # (1, s, v)
    steps = [model(tokens[:, :prefill], caches, start_pos=0)]  # (1, prefill, v)
    for position in range(prefill, s):
        steps.append(model(tokens[:, position : position + 1], caches, start_pos=position))  # (1, 1, v)
    decoded = torch.cat(steps, dim=1)  # (1, s, v)
    return float((decoded - reference).abs().max())


def build_rows(settings: MlaSettings, trained: list[TrainedModel]) -> list[MlaRow]:
    baseline = trained[0]
    baseline_bytes = kv_footprint(baseline.spec, seq_len=settings.seq_len, kv_dtype=settings.kv_dtype).total_bytes
    rows = []
    for model in trained:
        spec = model.spec
        footprint = kv_footprint(spec, seq_len=settings.seq_len, kv_dtype=settings.kv_dtype)
        fraction = Fraction(footprint.total_bytes, baseline_bytes)
        delta = model.validation_bits - baseline.validation_bits
        rank = spec.mla.kv_lora_rank if spec.mla is not None else None
        values = spec.mla.latent_dim if spec.mla is not None else 2 * spec.kv_heads * spec.dim_per_head
        rows.append(
            MlaRow(
                label="MHA (baseline)" if rank is None else f"MLA r={rank}",
                variant=spec.variant or "MHA",
                kv_lora_rank=rank,
                cache_values_per_token_per_layer=values,
                kv_bytes_computed=footprint.total_bytes,
                kv_bytes_measured=model.kv_bytes_measured,
                cache_fraction=float(fraction),
                below_cache_limit=fraction < CACHE_LIMIT,
                params_measured=model.params_measured,
                params_computed=count_params(spec).total,
                train_loss=model.train_loss,
                validation_bits=model.validation_bits,
                delta_bits=delta,
                within_quality_limit=delta <= QUALITY_LIMIT_BITS,
                decode_max_abs_diff=model.decode_max_abs_diff,
            )
        )
    return rows


def choose_rank(rows: list[MlaRow]) -> int | None:
    """The smallest latent rank below the cache limit and within the quality limit, if any."""
    passing = [
        r.kv_lora_rank for r in rows if r.kv_lora_rank is not None and r.below_cache_limit and r.within_quality_limit
    ]
    return min(passing) if passing else None


def conclusion(rows: list[MlaRow], chosen: int | None) -> str:
    baseline = rows[0]
    mla_rows = rows[1:]
    small = [r for r in mla_rows if r.below_cache_limit]
    if chosen is not None:
        row = next(r for r in mla_rows if r.kv_lora_rank == chosen)
        if chosen == 1:
            bound = " No smaller latent exists."
        elif chosen == min(r.kv_lora_rank or chosen for r in mla_rows):
            bound = " It is the smallest rank tried: a smaller one may pass too."
        else:
            bound = ""
        return (
            f"r = {chosen} is the smallest latent rank that meets both limits: its cache is {row.cache_fraction:.4f}"
            f" of MHA's (< 1/8) and its validation log2 perplexity is {row.validation_bits:.3f} bits against the"
            f" baseline's {baseline.validation_bits:.3f} ({row.delta_bits:+.3f} bits, limit +1).{bound}"
        )
    if not small:
        return "No rank tried has a cache below 1/8 of MHA's: try smaller ranks."
    best = min(small, key=lambda r: r.delta_bits)
    return (
        f"No rank meets both limits: of the ranks with a cache below 1/8 of MHA's, the closest is r ="
        f" {best.kv_lora_rank} at {best.delta_bits:+.3f} bits from the baseline ({baseline.validation_bits:.3f})."
    )


def mla_report(result: MlaResult) -> str:
    s = result.settings
    rows = [
        [
            r.label,
            str(r.cache_values_per_token_per_layer),
            f"{r.kv_bytes_computed:,}",
            f"{r.kv_bytes_measured:,}",
            f"{r.cache_fraction:.4f}",
            "yes" if r.below_cache_limit else "no",
            f"{r.params_measured:,}",
            f"{r.validation_bits:.3f}",
            f"{r.delta_bits:+.3f}",
            "yes" if r.within_quality_limit else "no",
            f"{r.decode_max_abs_diff:.1e}",
        ]
        for r in result.rows
    ]
    return (
        report_header("Experiment: MLA latent rank against an MHA baseline", result.command, result.environment)
        + "## Setup\n\n"
        f"Byte-level LM on `{result.corpus}` (Python {result.environment.python}'s help topics):"
        f" {result.train_bytes:,} training bytes ({result.train_topics} topics), {result.validation_bytes:,}"
        f" validation bytes ({result.validation_topics} held-out topics, every tenth by name).\n"
        f"Every model: d_model {s.d_model}, {s.n_layers} layers, {s.n_heads} heads, learned positions, gated MLP"
        f" {s.d_ff}, {s.steps} AdamW steps (lr {s.learning_rate}) on the same {s.batch} x {s.seq_len}-byte batches."
        f" Baseline: MHA, head width {s.head_dim}. MLA (absorbed): latent rank r, per-head q/k"
        f" {s.head_dim - s.qk_rope_head_dim} (no RoPE) + {s.qk_rope_head_dim} (decoupled RoPE key), v {s.head_dim};"
        f" the cache holds r + {s.qk_rope_head_dim} values per token per layer.\n"
        f"Cache bytes at {s.seq_len} tokens ({s.kv_dtype}, batch 1, all layers): computed by"
        " `mha_cli.core.kv.kv_footprint`, measured on the trained model's cache after a cached decode of one"
        f" validation window. Validation: {s.eval_windows} evenly spaced windows, log2 perplexity = bits per byte.\n\n"
        "## Results\n\n"
        + markdown_table(
            [
                "model",
                "cache values / token / layer",
                "KV bytes (computed)",
                "KV bytes (measured)",
                "vs MHA",
                "< 1/8",
                "params",
                "val bits/byte",
                "vs baseline",
                "<= +1 bit",
                "decode vs forward",
            ],
            rows,
        )
        + f"\n## What the data shows\n\n{result.conclusion}\n\n"
        f"![validation bits against cache size]({Path(result.files.plot).name})\n"
    )


def mla_figure(result: MlaResult) -> Figure:
    figure, (tradeoff, curves) = new_figure(2)
    baseline, mla_rows = result.rows[0], result.rows[1:]
    tradeoff.plot([r.cache_fraction for r in mla_rows], [r.validation_bits for r in mla_rows], marker="o", label="MLA")
    for row in mla_rows:
        tradeoff.annotate(
            f"r={row.kv_lora_rank}",
            (row.cache_fraction, row.validation_bits),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=8,
        )
    tradeoff.plot([1.0], [baseline.validation_bits], marker="s", color="black", linestyle="", label="MHA")
    tradeoff.axvline(result.cache_limit, color="tab:red", linestyle="--", label="1/8 of MHA's cache")
    tradeoff.axhline(
        baseline.validation_bits + result.quality_limit_bits, color="tab:green", linestyle=":", label="baseline + 1 bit"
    )
    tradeoff.set_xscale("log", base=2)
    tradeoff.set(xlabel="KV cache, fraction of MHA's", ylabel="validation bits per byte", title="Cache vs quality")
    tradeoff.legend(fontsize=8)
    for row in result.rows:
        bits = trailing_mean([nats_to_bits(loss) for loss in row.train_loss])
        curves.plot(range(1, len(bits) + 1), bits, label=row.label, linewidth=0.8)
    curves.set(xlabel="step", ylabel="training bits per byte (10-step mean)", title="Training")
    curves.legend(fontsize=8)
    return figure
