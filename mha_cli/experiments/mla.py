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

import torch

from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.schemas import MLASpec, ModelSpec
from mha_cli.experiments.common import command_line, deterministic_run, progress_bar, seeded_generator
from mha_cli.experiments.data import ByteTokenizer, TextCorpus, evaluation_windows, load_pydoc_corpus, random_windows
from mha_cli.experiments.lm import build_lm, cache_nbytes, n_parameters
from mha_cli.experiments.mla_models import (
    CACHE_LIMIT,
    QUALITY_LIMIT_BITS,
    MlaResult,
    MlaRow,
    MlaSettings,
    TrainedModel,
)
from mha_cli.experiments.mla_plot import mla_figure
from mha_cli.experiments.mla_report import mla_report
from mha_cli.experiments.outputs import ExperimentOutputs
from mha_cli.experiments.train import TrainSettings, evaluate, nats_to_bits, train
from mha_cli.nn.device import resolve_device
from mha_cli.nn.model import DecoderLM

__all__ = ["MlaResult", "MlaSettings", "choose_rank", "run_mla"]


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
    *,
    quick: bool = False,
    seed: int = 0,
    device: str = "auto",
    out_dir: Path | None = None,
    force: bool = False,
    workers: int | None = None,
) -> MlaResult:
    """Train the baseline and every rank, measure caches, pick the rank, plot and write the outputs.

    ``workers``: the shared ``--workers`` option (not used yet: the models train one after another here)."""
    settings = MlaSettings.for_run(quick=quick)
    outputs = ExperimentOutputs("mla", out_dir, force=force)
    torch_device = resolve_device(device)  # a bad --device is refused before the folder is created
    outputs.check_writable()
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
        command=command_line("mla", quick=quick, seed=seed, device=device, out_dir=out_dir, force=force),
        quick=quick,
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


def train_one(
    settings: MlaSettings,
    spec: ModelSpec,
    corpus: TextCorpus,
    seed: int,
    device: torch.device,
    on_step: Callable[[], None],
) -> TrainedModel:
    torch.manual_seed(seed)
    model = build_lm(spec, mla_mode="absorbed", device=device)
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
def cached_decode_difference(model: DecoderLM, tokens: torch.Tensor, caches: list) -> float:
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
