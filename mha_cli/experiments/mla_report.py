"""The markdown report of experiment ``mla``: setup, floors, results table, what the data shows."""

from __future__ import annotations

from pathlib import Path

from mha_cli.core.markdown import markdown_table
from mha_cli.experiments.common import report_header
from mha_cli.experiments.mla_models import MlaResult, MlaRow


def table_row(row: MlaRow) -> list[str]:
    baseline = row.kind == "mha"
    return [
        row.label,
        str(row.cache_values_per_token_per_layer),
        f"{row.kv_bytes_computed:,}",
        f"{row.kv_bytes_measured:,}",
        f"{row.cache_fraction:.4f}",
        "yes" if row.below_cache_limit else "no",
        f"{row.params_measured:,}",
        row.validation_bits.text(),
        "" if baseline else row.delta_bits.text("+.3f"),
        "" if baseline else row.within_quality_limit,
        "" if baseline else (row.within_seed_spread or "-"),  # one seed: no spread
        "-" if row.decode_max_abs_diff is None else f"{row.decode_max_abs_diff:.1e}",
    ]


def seeds_sentence(n_seeds: int) -> str:
    """How the report reads its seeds: differences seed by seed, and a limit met only when every seed meets it."""
    if n_seeds < 2:
        return "One seed: there is no spread, so no difference below is evidence."
    return (
        f"Figures are mean ± standard deviation over the {n_seeds} seeds (range). For a seed every model starts"
        " from the same initialisation stream and sees the same batches, so differences from the baseline are"
        " taken seed by seed. A limit is met when every seed's difference meets it, missed when none does, and"
        " unclear otherwise. Two limits: the lesson's 1 bit, and the seed spread, the range of the baseline's own"
        " seeds (how far two trainings of the same model land apart)."
    )


def mla_report(result: MlaResult) -> str:
    s = result.settings
    n_seeds = len(result.seeds)
    floors = [[f"Kneser-Ney {f.order}-gram (count-based)", f"{f.validation_bits:.3f}"] for f in result.ngram_bits]
    floors += [
        ["chance (uniform over 256 bytes)", f"{result.chance_bits:.3f}"],
        ["no attention (the decoder, attention zeroed)", result.no_attention_bits.text()],
        ["MHA baseline", result.baseline_bits.text()],
    ]
    answers = "".join(f"- At the limit *{a.limit}*: {a.sentence}\n" for a in result.answers)
    return (
        report_header(
            "Experiment: MLA latent rank against an MHA baseline",
            result.command,
            result.environment,
            quick=result.quick,
        )
        + "## Setup\n\n"
        f"Byte-level LM on `{result.corpus}` (Python {result.environment.python}'s help topics):"
        f" {result.train_bytes:,} training bytes ({result.train_topics} topics), {result.validation_bytes:,}"
        f" validation bytes ({result.validation_topics} held-out topics, every tenth by name).\n"
        f"Every model: the decoder `mha verify` builds (`mha_cli.nn.build_model`), d_model {s.d_model}, {s.n_layers}"
        f" layers, {s.n_heads} heads, RoPE, gated MLP {s.d_ff}; {s.steps} AdamW steps (lr {s.learning_rate},"
        f" {s.warmup_steps} warm-up, cosine to {s.final_lr_fraction:g} of it) on {s.batch} x {s.seq_len}-byte"
        f" batches, the same batches for every model of a seed; seeds {result.seeds}.\n"
        f"Baseline: MHA, head width {s.head_dim}, all of it rotated. MLA (absorbed), in rule MHA030's proportions:"
        f" latent rank r, per-head q/k {s.qk_nope_head_dim} (no position) + {s.qk_rope_head_dim} (the decoupled RoPE"
        f" key, shared by the heads), v {s.head_dim}; the cache holds r + {s.qk_rope_head_dim} values per token per"
        f" layer. The rule's own latent is r = {s.rule_rank}.\n"
        "Control: the same decoder with every attention branch zeroed (each position sees its own byte only).\n"
        f"Cache bytes at {s.seq_len} tokens ({s.kv_dtype}, batch 1, all layers): computed by"
        " `mha_cli.core.kv.kv_footprint`, measured on the trained model's cache after a cached decode of one"
        f" validation window. Validation: {s.eval_windows} evenly spaced {s.seq_len}-byte windows, log2 perplexity"
        " = bits per byte; the n-gram floors are scored on the same windows, each byte seeing the bytes of its"
        " window before it.\n" + seeds_sentence(n_seeds) + "\n\n"
        "## Floors\n\n"
        + markdown_table(["model", "validation bits per byte"], floors)
        + "\n## Results\n\n"
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
                "vs baseline (by seed)",
                "<= +1 bit",
                "within seed spread",
                "decode vs forward",
            ],
            [table_row(row) for row in result.rows],
        )
        + f"\n## What the data shows\n\n{result.conclusion}\n\n"
        + answers
        + f"\n![validation bits against cache size]({Path(result.files.plot).name})\n"
    )
