"""The figure of experiment ``mla``: validation bits against cache size with the floors, and the training curves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.experiments.common import new_figure
from mha_cli.experiments.mla_models import MlaResult
from mha_cli.experiments.train import CURVE_EVERY

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def mla_figure(result: MlaResult) -> Figure:
    figure, (tradeoff, curves) = new_figure(2, width=5.6)
    mla_rows = [r for r in result.rows if r.kind == "mla"]
    baseline, no_attention = result.baseline_bits, result.no_attention_bits
    x = [r.cache_fraction for r in mla_rows]
    y = [r.validation_bits.mean for r in mla_rows]
    error = [[r.validation_bits.mean - r.validation_bits.low for r in mla_rows],
             [r.validation_bits.high - r.validation_bits.mean for r in mla_rows]]  # fmt: skip
    tradeoff.errorbar(x, y, yerr=error, marker="o", capsize=3, label="MLA (seed range)")
    for row in mla_rows:
        tradeoff.annotate(
            f"r={row.kv_lora_rank}",
            (row.cache_fraction, row.validation_bits.mean),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=8,
        )
    tradeoff.errorbar([1.0], [baseline.mean], yerr=[[baseline.mean - baseline.low], [baseline.high - baseline.mean]],
                      marker="s", color="black", linestyle="", capsize=3, label="MHA")  # fmt: skip
    tradeoff.axhspan(baseline.low, baseline.high, color="black", alpha=0.08)
    tradeoff.axhline(no_attention.mean, color="tab:purple", linestyle="-.", label="no attention (control)")
    for floor in result.ngram_bits:
        tradeoff.axhline(floor.validation_bits, color="tab:gray", linestyle=":", linewidth=0.8)
        tradeoff.annotate(f"KN {floor.order}-gram", (0.35, floor.validation_bits), fontsize=7, color="tab:gray",
                          textcoords="offset points", xytext=(0, 2))  # fmt: skip
    tradeoff.axvline(result.cache_limit, color="tab:red", linestyle="--", label="1/8 of MHA's cache")
    tradeoff.axhline(baseline.mean + result.quality_limit_bits, color="tab:green", linestyle="--",
                     label="baseline + 1 bit")  # fmt: skip
    shown = [f.validation_bits for f in result.ngram_bits] + [r.validation_bits.low for r in mla_rows]
    limit = baseline.mean + result.quality_limit_bits  # the line drawn above: kept on the axis
    tradeoff.set_ylim(
        min([*shown, baseline.low]) - 0.08, max(no_attention.mean, limit, *shown) + 0.12
    )  # room for labels
    tradeoff.set_xscale("log", base=2)
    tradeoff.set(xlabel="KV cache, fraction of MHA's", ylabel="validation bits per byte", title="Cache vs quality")
    tradeoff.legend(fontsize=7, loc="center right")
    for row in result.rows:
        runs = [run for run in result.runs if run.kind == row.kind and run.kv_lora_rank == row.kv_lora_rank]
        mean_curve = [sum(values) / len(values) for values in zip(*(run.train_curve_bits for run in runs), strict=True)]
        steps = [CURVE_EVERY * (i + 1) for i in range(len(mean_curve))]
        few = len(mean_curve) < 3  # a --quick run's curve is a point or two: markers, or the panel looks empty
        curves.plot(steps, mean_curve, label=row.label, linewidth=0.8, marker="o" if few else None, markersize=3)
    finals = [run.train_curve_bits[-1] for run in result.runs]
    curves.set_ylim(min(finals) - 0.2, no_attention.mean + 1.0)  # the first steps (8 bits) would flatten the rest
    curves.set(xlabel="step", ylabel=f"training bits per byte ({CURVE_EVERY}-step mean, seed mean)", title="Training")
    curves.legend(fontsize=7)
    if result.quick:
        figure.suptitle("smoke run (--quick): not evidence", color="tab:red")
    return figure
