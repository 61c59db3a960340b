"""The markdown report of experiment ``mla``: setup, results table, the conclusion."""

from __future__ import annotations

from pathlib import Path

from mha_cli.experiments.common import markdown_table, report_header
from mha_cli.experiments.mla_models import MlaResult


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
