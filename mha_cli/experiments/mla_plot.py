"""The figure of experiment ``mla``: validation bits against cache size, and the training curves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.experiments.common import new_figure
from mha_cli.experiments.mla_models import MlaResult
from mha_cli.experiments.train import nats_to_bits, trailing_mean

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
    if result.quick:
        figure.suptitle("smoke run (--quick): not evidence", color="tab:red")
    return figure
