"""Experiment ``mqa``: what sharing K/V heads saves, MHA vs GQA vs MQA on one model shape.

For each variant the decoder (``experiments.lm.build_lm``) is instantiated and measured: its parameters
(counted on the module, compared with ``core.params``) and its KV cache for N tokens (the bytes of the
cache tensors after a prefill of N tokens, compared with ``core.kv.kv_footprint``). The variants differ
only in n_kv_heads. The control that must lose: a calculator that ignores GQA (K/V heads = query heads,
the common mistake) predicts MHA's cache for every variant, and the measurement must refute it for GQA
and MQA. Nothing here is trained, so the figures do not depend on the seed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import torch

from mha_cli.core.kv import kv_footprint
from mha_cli.core.markdown import markdown_table
from mha_cli.core.params import attention_params, count_params
from mha_cli.core.quantities import format_bytes
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec, Variant
from mha_cli.experiments.common import (
    MQA_QUICK_CAVEAT,
    Environment,
    bytes_unit,
    command_line,
    count_unit,
    deterministic_run,
    new_figure,
    progress_bar,
    report_header,
)
from mha_cli.experiments.lm import build_lm, cache_nbytes, n_parameters
from mha_cli.experiments.outputs import ExperimentOutputs, OutputFiles
from mha_cli.nn.device import resolve_device

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class MqaSettings(Record):
    d_model: int = 512
    n_layers: int = 4
    n_heads: int = 8
    head_dim: int = 64
    gqa_kv_heads: int = 2
    d_ff: int = 1376
    vocab_size: int = 256
    seq_len: int = 2048
    """N: tokens the cache holds (and the prefill writes)."""
    batch: int = 1
    kv_dtype: Literal["fp32", "fp16", "bf16"] = "bf16"
    """Storage format of the cache (inference); the weights stay fp32."""

    @classmethod
    def for_run(cls, *, quick: bool) -> MqaSettings:
        if quick:
            return cls(d_model=64, n_layers=2, n_heads=8, head_dim=8, gqa_kv_heads=2, d_ff=128)
        return cls()


class MqaRow(Record):
    variant: Variant
    n_kv_heads: int
    params_measured: int
    """Parameters of the instantiated model (sum of numel)."""
    params_computed: int
    """``count_params(spec).total``."""
    attention_params_measured: int
    """Parameters of one instantiated attention module."""
    attention_params_computed: int
    kv_bytes_per_token_per_layer: int
    """The calculator's figure."""
    kv_bytes_computed: int
    """``kv_footprint(...).total_bytes`` at seq_len x batch."""
    kv_bytes_measured: int
    """Bytes of the model's cache tensors, allocated for seq_len x batch and filled by a prefill."""
    kv_bytes_if_gqa_ignored: int
    """The control: what a calculator that takes n_heads for the K/V heads predicts (MHA's cache)."""
    kv_fraction_of_mha: float
    params_fraction_of_mha: float
    attention_params_fraction_of_mha: float


class MqaResult(Record):
    experiment: Literal["mqa"] = "mqa"
    command: str
    environment: Environment
    settings: MqaSettings
    quick: bool = False
    """A --quick run (a smaller model; the measured = computed comparison is just as exact)."""
    rows: list[MqaRow]
    all_match: bool
    """Every measured figure equals its computed one."""
    control_refuted: bool
    """The GQA-ignoring calculator is wrong for every variant with fewer K/V heads than query heads."""
    files: OutputFiles


def variant_spec(settings: MqaSettings, n_kv_heads: int) -> ModelSpec:
    return ModelSpec(
        name=f"tiny-{n_kv_heads}kv",
        d_model=settings.d_model,
        n_layers=settings.n_layers,
        n_heads=settings.n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=settings.head_dim,
        vocab_size=settings.vocab_size,
        d_ff=settings.d_ff,
        position_embeddings=settings.seq_len,
    )


def run_mqa(
    *,
    quick: bool = False,
    seed: int = 0,
    device: str = "auto",
    out_dir: Path | None = None,
    force: bool = False,
    workers: int | None = None,
) -> MqaResult:
    """Instantiate the three variants, measure them, compare with the calculator, write the outputs.

    ``workers`` is the shared ``--workers`` option, ignored here: nothing is trained."""
    settings = MqaSettings.for_run(quick=quick)
    outputs = ExperimentOutputs("mqa", out_dir, force=force)
    torch_device = resolve_device(device)  # a bad --device is refused before the folder is created
    outputs.check_writable()
    started = time.perf_counter()
    kv_head_counts = [settings.n_heads, settings.gqa_kv_heads, 1]
    measured = []
    with deterministic_run(seed, torch_device) as environment, progress_bar() as progress:
        task = progress.add_task("mqa: measuring", total=len(kv_head_counts))
        for n_kv_heads in kv_head_counts:
            progress.update(task, description=f"mqa: {n_kv_heads} KV head(s), prefill of {settings.seq_len} tokens")
            measured.append(measure_variant(settings, variant_spec(settings, n_kv_heads), torch_device))
            progress.advance(task)
    environment.wall_seconds = round(time.perf_counter() - started, 1)
    rows = build_rows(settings, measured)
    result = MqaResult(
        command=command_line("mqa", quick=quick, seed=seed, device=device, out_dir=out_dir, force=force),
        quick=quick,
        environment=environment,
        settings=settings,
        rows=rows,
        files=outputs.files,
        all_match=all(
            r.params_measured == r.params_computed
            and r.kv_bytes_measured == r.kv_bytes_computed
            and r.attention_params_measured == r.attention_params_computed
            for r in rows
        ),
        control_refuted=all(
            r.kv_bytes_if_gqa_ignored != r.kv_bytes_measured for r in rows if r.n_kv_heads < settings.n_heads
        ),
    )
    outputs.write(mqa_report(result), mqa_figure(result), result)
    return result


@torch.no_grad()
def measure_variant(settings: MqaSettings, spec: ModelSpec, device: torch.device) -> tuple[ModelSpec, int, int, int]:
    """(spec, model parameters, one attention module's parameters, cache bytes after a prefill of N tokens)."""
    model = build_lm(spec, device=device).eval()
    caches = model.new_cache(settings.batch, settings.seq_len, dtype=settings.kv_dtype)
    tokens = torch.randint(0, spec.embeddings.vocab_size, (settings.batch, settings.seq_len), device=device)  # (b, N)
    model(tokens, caches, start_pos=0)  # the prefill writes all N positions of every layer's cache
    return spec, n_parameters(model), n_parameters(model.model.layers[0].self_attn), cache_nbytes(caches)


def build_rows(settings: MqaSettings, measured: list[tuple[ModelSpec, int, int, int]]) -> list[MqaRow]:
    rows = []
    for spec, params, attention, cache_bytes in measured:
        footprint = kv_footprint(spec, seq_len=settings.seq_len, batch=settings.batch, kv_dtype=settings.kv_dtype)
        gqa_ignored = variant_spec(settings, n_kv_heads=settings.n_heads)  # the same shape, read as MHA
        naive = kv_footprint(gqa_ignored, seq_len=settings.seq_len, batch=settings.batch, kv_dtype=settings.kv_dtype)
        rows.append(
            MqaRow(
                variant=spec.attention.variant or "MHA",
                n_kv_heads=spec.attention.n_kv_heads,
                params_measured=params,
                params_computed=count_params(spec).total,
                attention_params_measured=attention,
                attention_params_computed=attention_params(spec),
                kv_bytes_per_token_per_layer=footprint.bytes_per_token_per_layer,
                kv_bytes_computed=footprint.total_bytes,
                kv_bytes_measured=cache_bytes,
                kv_bytes_if_gqa_ignored=naive.total_bytes,
                kv_fraction_of_mha=0.0,
                params_fraction_of_mha=0.0,
                attention_params_fraction_of_mha=0.0,
            )
        )
    mha = rows[0]
    for row in rows:
        row.kv_fraction_of_mha = row.kv_bytes_measured / mha.kv_bytes_measured
        row.params_fraction_of_mha = row.params_measured / mha.params_measured
        row.attention_params_fraction_of_mha = row.attention_params_measured / mha.attention_params_measured
    return rows


def mqa_report(result: MqaResult) -> str:
    s = result.settings
    rows = [
        [
            r.variant,
            str(r.n_kv_heads),
            f"{r.params_measured:,}",
            f"{r.params_computed:,}",
            f"{r.attention_params_measured:,}",
            f"{r.attention_params_fraction_of_mha:.3f}",
            f"{r.kv_bytes_computed:,}",
            f"{r.kv_bytes_measured:,}",
            f"{r.kv_fraction_of_mha:.4f}",
        ]
        for r in result.rows
    ]
    mha, mqa = result.rows[0], result.rows[-1]
    gqa = result.rows[1]
    return (
        report_header(
            "Experiment: MQA vs GQA vs MHA, parameters and KV cache",
            result.command,
            result.environment,
            quick=result.quick,
            caveat=MQA_QUICK_CAVEAT,
        )
        + "## Setup\n\n"
        f"One model shape, three projections: d_model {s.d_model}, {s.n_layers} layers, {s.n_heads} query heads of"
        f" width {s.head_dim}, gated MLP {s.d_ff}, vocabulary {s.vocab_size}, learned positions. KV heads:"
        f" {s.n_heads} (MHA), {s.gqa_kv_heads} (GQA), 1 (MQA). Measured = the instantiated model's parameters"
        f" and the bytes of its cache tensors after a prefill of N = {s.seq_len:,} tokens (batch {s.batch},"
        f" {s.kv_dtype}); computed = `mha_cli.core.params.count_params` and `mha_cli.core.kv.kv_footprint`."
        " Nothing is trained: the figures are exact counts and do not depend on the seed.\n\n"
        "## Results\n\n"
        + markdown_table(
            [
                "variant",
                "KV heads",
                "params (measured)",
                "params (computed)",
                "attention params / layer",
                "vs MHA",
                f"KV bytes at N={s.seq_len} (computed)",
                "KV bytes (measured)",
                "KV vs MHA",
            ],
            rows,
        )
        + "\n## What the data shows\n\n"
        f"- Measured and computed figures {'agree exactly' if result.all_match else 'DISAGREE'} for every variant.\n"
        f"- Control: a calculator that ignores GQA (K/V heads = query heads) predicts"
        f" {mqa.kv_bytes_if_gqa_ignored:,} bytes for MQA, {mqa.kv_bytes_if_gqa_ignored / mqa.kv_bytes_measured:.0f}x"
        f" what the cache holds; the measurement {'refutes it' if result.control_refuted else 'does NOT refute it'}"
        " for every variant with shared K/V heads.\n"
        f"- MQA caches {format_bytes(mqa.kv_bytes_measured)} for {s.seq_len:,} tokens against MHA's"
        f" {format_bytes(mha.kv_bytes_measured)}: {mqa.kv_fraction_of_mha:.4f} of it (1/{s.n_heads} of the K/V"
        f" heads), saving {format_bytes(mha.kv_bytes_measured - mqa.kv_bytes_measured)}. GQA with"
        f" {s.gqa_kv_heads} KV heads keeps {gqa.kv_fraction_of_mha:.4f}.\n"
        f"- Parameters: MQA's attention layer has {mqa.attention_params_fraction_of_mha:.3f} of MHA's weights"
        " (only K and V shrink; Q and O keep their size), the whole model"
        f" {mqa.params_fraction_of_mha:.3f} ({mha.params_measured - mqa.params_measured:,} fewer parameters)."
        f" The cache shrinks {1 / mqa.kv_fraction_of_mha:.1f}x, the model {1 / mqa.params_fraction_of_mha:.2f}x.\n\n"
        f"![parameters and KV cache]({Path(result.files.plot).name})\n"
    )


MQA_QUICK_BANNER = "quick run (--quick): a smaller model than the experiment's, not its sizes or ratios"


def mqa_figure(result: MqaResult) -> Figure:
    figure, (params, cache) = new_figure(2)
    labels = [f"{r.variant}\n({r.n_kv_heads} KV)" for r in result.rows]
    x = list(range(len(result.rows)))
    counts = [r.attention_params_measured for r in result.rows]
    divisor, unit = count_unit(counts)
    params.bar(x, [c / divisor for c in counts], color="tab:blue")
    params.set_xticks(x, labels)
    unit_text = f" ({unit})" if unit else ""
    params.set(ylabel=f"attention parameters per layer{unit_text}", title="Parameters (measured = computed)")
    width = 0.27
    scale, byte_unit = bytes_unit([r.kv_bytes_computed for r in result.rows])
    cache.bar([i - width for i in x], [r.kv_bytes_computed / scale for r in result.rows], width, label="computed")
    cache.bar(x, [r.kv_bytes_measured / scale for r in result.rows], width, label="measured")
    cache.bar([i + width for i in x], [r.kv_bytes_if_gqa_ignored / scale for r in result.rows], width, color="tab:gray",
              label="control: GQA ignored")  # fmt: skip  # the calculator the measurement refutes (trial 262)
    cache.set_xticks(x, labels)
    cache.set(ylabel=byte_unit, title=f"KV cache at N = {result.settings.seq_len:,} ({result.settings.kv_dtype})")
    cache.legend()
    if result.quick:  # the banner the other experiments' smoke runs carry, in this run's words
        figure.suptitle(MQA_QUICK_BANNER, color="tab:red")
    return figure
