"""Decode benchmark: one token's attention step at long context, MHA vs GQA vs MQA vs MLA.

Each variant is one attention layer of the same width whose cache is pre-filled to ``seq_len - 1``
tokens; a step is ``layer(x, cache, start_pos=seq_len - 1)`` for one new token (projections, cache
write, attention over ``seq_len`` tokens, output projection). Warm-up first, then each repetition is
timed as ``mha verify`` times it (``nn.timing.time_calls``: CUDA events on CUDA, perf_counter between
device synchronisations elsewhere); the median is reported. A step must read the layer's weights
and the whole cache, so on a memory-bound device time tracks ``bytes_read``; GQA with group size g
reads about g times less cache than MHA.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch
from pydantic import Field

from mha_cli.core.cost.eager import predict_attention_step
from mha_cli.core.errors import OutOfMemoryError
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.torch_inputs import validate_bench_options
from mha_cli.nn.attention import Attention
from mha_cli.nn.cache_ops import bytes_per_token, fill_random
from mha_cli.nn.device import device_name, is_out_of_memory, resolve_device
from mha_cli.nn.dispatch import count_dispatches
from mha_cli.nn.kv_cache import DTYPE_NAMES, KVCache, LatentCache, resolve_cache_dtype
from mha_cli.nn.mla import MLAttention
from mha_cli.nn.profile_choice import active_profile
from mha_cli.nn.sdpa import record_sdpa_backends
from mha_cli.nn.timing import time_calls


class BenchRow(Record):
    label: str
    n_kv_heads: int
    """KV heads (MLA absorbed: 1 shared latent)."""
    cache_bytes_per_token: int
    """Bytes the cache holds per token (this layer, whole batch row)."""
    weight_bytes: int
    kv_bytes_read: int
    """Cache bytes one step reads: seq_len tokens x batch."""
    bytes_read: int
    """weight_bytes + kv_bytes_read: the memory-bound floor's numerator."""
    median_ms: float
    min_ms: float
    max_ms: float
    p25_ms: float
    """First quartile of the timed steps (inclusive method; the one time when reps is 1)."""
    p75_ms: float
    """Third quartile of the timed steps."""
    iqr_ms: float
    """p75_ms - p25_ms: the spread of the step time (0 with one repetition)."""
    speedup_vs_mha: float
    """MHA's median time / this row's (higher is faster)."""
    speedup_low: float
    """The ratio's low end from the quartiles: MHA's p25 / this row's p75."""
    speedup_high: float
    """The ratio's high end: MHA's p75 / this row's p25."""
    within_noise: bool
    """True when this row's and MHA's interquartile ranges overlap, either range is over half its median, or
    there is one repetition: the speedup is not distinguishable from 1 in this run. False for the MHA row."""
    beyond_its_bytes: bool = False
    """True when even the ratio's low end is over ``IMPLAUSIBLE_BYTES_FACTOR`` times what the bytes read allow
    (1 / bytes_vs_mha): no cache level is that much faster than memory, so MHA's steps were slowed by something
    else (a busy machine, threads waiting for a core, swapping). False for the MHA row."""
    slower_reading_less: bool = False
    """True when even the ratio's high end is under 1 (slower than MHA beyond the noise) though the row reads fewer
    bytes than MHA: the step is bound by something other than its bytes at this size (kernel launches, MLA's latent
    matmuls) or the machine was busy (trial 303 #5). False for the MHA row."""
    bytes_vs_mha: float
    """This row's bytes_read / MHA's (exact: no spread)."""
    effective_gb_per_s: float
    """bytes_read / median time, in 1e9 bytes per second."""
    gb_per_s_low: float
    """bytes_read / p75 time."""
    gb_per_s_high: float
    """bytes_read / p25 time."""
    sdpa_backend: str
    """The backend SDPA's dispatcher chose for the step."""
    predicted_ms: float | None = None
    """The cost model's step on the active profile (``core.cost.eager.predict_attention_step``); None without one."""
    prediction_ratio: float | None = None
    """median_ms / predicted_ms."""


class BenchResult(Record):
    device: str
    device_name: str
    torch_version: str
    dtype: str
    seq_len: int
    batch: int
    d_model: int
    n_heads: int
    head_dim: int
    gqa_kv_heads: int
    mla_kv_lora_rank: int
    mla_rope_dim: int
    warmup: int
    reps: int
    cpu_threads: int
    """Threads torch ran its CPU operators on (``--threads``, else torch's own: one per core)."""
    rows: list[BenchRow]
    prediction_profile: str = ""
    """The profile the predicted times use and how it was chosen, or why there is none."""
    warnings: list[str] = Field(default_factory=empty_list)
    """Ratios within the noise, or no spread at all (one repetition): what not to read into the table."""


def _variants(d_model: int, n_heads: int, head_dim: int, gqa_kv_heads: int, rank: int, rope: int) -> list:
    """(label, n_kv_heads, factory) for each variant at the same width."""

    def mla(mode: str) -> Callable[..., MLAttention]:
        return lambda **kw: MLAttention(d_model, n_heads, rank, head_dim, rope, head_dim, mode=mode, **kw)

    def gqa(n_kv: int) -> Callable[..., Attention]:
        return lambda **kw: Attention(d_model, n_heads, n_kv, head_dim, **kw)

    rows = [("MHA", n_heads, gqa(n_heads)), (f"GQA-{gqa_kv_heads}", gqa_kv_heads, gqa(gqa_kv_heads))]
    rows += [("MQA", 1, gqa(1)), ("MLA absorbed", 1, mla("absorbed")), ("MLA naive", n_heads, mla("naive"))]
    return rows


def _measure_decode(
    layer: Attention | MLAttention, cache: KVCache | LatentCache, x: torch.Tensor, pos: int, warmup: int, reps: int
) -> tuple[list[float], list[str], int]:
    """Seconds per decode step of ``x`` (b, 1, d) at position ``pos``, the SDPA backends it uses, and the operators
    one step dispatches (counted on the first, untimed call)."""

    def step() -> torch.Tensor:
        return layer(x, cache, pos)  # (b, 1, d)

    with record_sdpa_backends() as seen, count_dispatches() as dispatched:
        step()
    times, _timer = time_calls(step, x.device, warmup, reps)
    return times, seen, dispatched.total


def _variant_spec(label: str, n_kv: int, d_model: int, n_heads: int, head_dim: int, rank: int, rope: int) -> ModelSpec:
    """The one-layer model of a variant, for the cost model (its MLP and vocabulary play no part: only the
    attention's ops are priced)."""
    fields: dict = {"name": label, "d_model": d_model, "n_layers": 1, "n_heads": n_heads, "vocab_size": 1, "d_ff": 1}
    if label.startswith("MLA"):
        fields["mla"] = {"kv_lora_rank": rank, "qk_rope_head_dim": rope, "qk_nope_head_dim": head_dim,
                         "v_head_dim": head_dim}  # fmt: skip
    else:
        fields |= {"n_kv_heads": n_kv, "head_dim": head_dim}
    return ModelSpec.model_validate(fields)


IMPLAUSIBLE_BYTES_FACTOR = 16.0
"""A speedup over this many times 1 / bytes_vs_mha is not the bytes: a step that reads a quarter of MHA's bytes is
at most about 4x faster from memory traffic, and a working set that drops into a cache level gains about an order of
magnitude at most (an L1 or L2 cache against DRAM). A busy CPU printed 1,064x for MQA (trial 258)."""

UNSTABLE_IQR_FRACTION = 0.5
"""A timing whose interquartile range exceeds this fraction of its median makes every ratio with it noise."""


@dataclass(frozen=True)
class Quartiles:
    """p25, median, p75, min and max of repeated timings, in milliseconds."""

    p25: float
    median: float
    p75: float
    low: float
    high: float

    @classmethod
    def of(cls, seconds: list[float]) -> Quartiles:
        ms = [t * 1e3 for t in seconds]
        if len(ms) < 2:
            return cls(ms[0], ms[0], ms[0], ms[0], ms[0])
        p25, median, p75 = statistics.quantiles(ms, n=4, method="inclusive")
        return cls(p25, median, p75, min(ms), max(ms))

    @property
    def unstable(self) -> bool:
        """The interquartile range is over half the median: a busy machine, whose ratios mean little."""
        return self.p75 - self.p25 > UNSTABLE_IQR_FRACTION * self.median

    def overlaps(self, other: Quartiles) -> bool:
        """True when the interquartile ranges [p25, p75] share any time."""
        return self.p25 <= other.p75 and other.p25 <= self.p75


def bench_row(
    label: str, n_kv: int, per_token: int, weight_bytes: int, kv_bytes: int, times: Quartiles, mha: Quartiles,
    mha_bytes: int, backend: str,
) -> BenchRow:  # fmt: skip
    """One variant's row: exact bytes, then every timed figure with its spread from the quartiles."""
    read = weight_bytes + kv_bytes
    is_mha = times is mha
    noisy = not is_mha and (times.p75 == times.p25 or times.overlaps(mha) or times.unstable or mha.unstable)
    beyond = not is_mha and (mha.p25 / times.p75) * (read / mha_bytes) > IMPLAUSIBLE_BYTES_FACTOR
    slower = not is_mha and mha.p75 / times.p25 < 1 and read < mha_bytes
    return BenchRow(
        label=label, n_kv_heads=n_kv, cache_bytes_per_token=per_token, weight_bytes=weight_bytes,
        kv_bytes_read=kv_bytes, bytes_read=read, median_ms=round(times.median, 4), min_ms=round(times.low, 4),
        max_ms=round(times.high, 4), p25_ms=round(times.p25, 4), p75_ms=round(times.p75, 4),
        iqr_ms=round(times.p75 - times.p25, 4), speedup_vs_mha=round(mha.median / times.median, 3),
        speedup_low=round(mha.p25 / times.p75, 3), speedup_high=round(mha.p75 / times.p25, 3), within_noise=noisy,
        beyond_its_bytes=beyond, slower_reading_less=slower,
        bytes_vs_mha=round(read / mha_bytes, 4), effective_gb_per_s=round(read / times.median / 1e6, 2),
        gb_per_s_low=round(read / times.p75 / 1e6, 2), gb_per_s_high=round(read / times.p25 / 1e6, 2),
        sdpa_backend=backend,
    )  # fmt: skip


def noise_warnings(rows: list[BenchRow], reps: int, cpu_threads: int | None = None) -> list[str]:
    """What the table cannot show: no spread with one repetition; speedups whose quartile ranges overlap MHA's;
    speedups far beyond what the bytes read allow; variants slower than MHA though they read less; and, when the
    steps ran on ``cpu_threads`` > 1 CPU threads (None: not on a CPU) and any of those flags is up, the threads."""
    warnings = []
    if reps < 2:
        warnings.append("1 repetition: no spread to judge the ratios by; rerun with --reps 10 or more")
    noisy = [f"{row.label} {row.speedup_vs_mha:.2f}x ({row.speedup_low:.2f}-{row.speedup_high:.2f}x)"
             for row in rows if row.within_noise and reps >= 2]  # fmt: skip
    if noisy:
        warnings.append(
            "within the noise (interquartile range overlapping MHA's, or wider than half the median):"
            f" {', '.join(noisy)}; these speedups may be 1x: rerun with more --reps, on an idle machine"
        )
    beyond = _against_bytes([row for row in rows if row.beyond_its_bytes])
    if beyond:
        warnings.append(
            f"beyond what the bytes allow (over {IMPLAUSIBLE_BYTES_FACTOR:.0f}x 1 / bytes ratio): {', '.join(beyond)};"
            " MHA's steps were slowed by something else (a busy machine, threads waiting for a core, swapping):"
            " rerun on an idle machine"
        )
    slower = _against_bytes([row for row in rows if row.slower_reading_less])
    if slower:
        warnings.append(
            f"slower than MHA though reading fewer bytes: {', '.join(slower)}; at this size the step is bound by more"
            " than its bytes (kernel launches, MLA's latent matmuls) or the machine was busy: a longer --seq or a"
            " larger --batch shows what the bytes save; rerun on an idle machine"
        )
    flagged = any(row.within_noise or row.beyond_its_bytes or row.slower_reading_less for row in rows)
    if cpu_threads is not None and cpu_threads > 1 and flagged and reps >= 2:
        warnings.append(  # trial 350 #1: 2 threads on 2 shared cores timed MHA at 8 ms, 0.18 ms with 1 thread
            f"threads: torch ran each step on {cpu_threads} CPU threads; where the cores are shared with other work a"
            " step waits for its slowest thread, a scheduler tick at a time: rerun with --threads 1"
        )
    return warnings


def _against_bytes(rows: list[BenchRow]) -> list[str]:
    """Each row's ratio beside its bytes: ``MQA 0.25x reading 0.44 of MHA's bytes``."""
    return [f"{row.label} {row.speedup_vs_mha:,.2f}x reading {row.bytes_vs_mha:.2f} of MHA's bytes" for row in rows]


def run_decode_bench(
    *,
    device: str = "auto",
    seq_len: int = 8192,
    batch: int = 4,
    d_model: int = 2048,
    n_heads: int = 16,
    head_dim: int = 128,
    gqa_kv_heads: int = 4,
    kv_lora_rank: int | None = None,
    rope_dim: int | None = None,
    dtype: str | None = None,
    warmup: int = 3,
    reps: int = 10,
    threads: int | None = None,
    profile: str | None = None,
    on_variant: Callable[[str, int], None] = lambda label, done: None,
) -> BenchResult:
    """Time one decode step of each variant; MLA defaults to DeepSeek's proportions (4 x, 1/2 x head_dim). With
    ``threads``, torch's CPU operators run on that many threads for the bench (restored after)."""
    validate_bench_options(
        seq_len=seq_len, batch=batch, d_model=d_model, n_heads=n_heads, head_dim=head_dim, gqa_kv_heads=gqa_kv_heads,
        kv_lora_rank=kv_lora_rank, rope_dim=rope_dim, warmup=warmup, reps=reps, threads=threads,
    )  # fmt: skip
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _bench_variants(
            device=device, seq_len=seq_len, batch=batch, d_model=d_model, n_heads=n_heads, head_dim=head_dim,
            gqa_kv_heads=gqa_kv_heads, kv_lora_rank=kv_lora_rank, rope_dim=rope_dim, dtype=dtype, warmup=warmup,
            reps=reps, profile=profile, on_variant=on_variant,
        )  # fmt: skip
    finally:
        torch.set_num_threads(previous_threads)


def _bench_variants(
    *, device: str, seq_len: int, batch: int, d_model: int, n_heads: int, head_dim: int, gqa_kv_heads: int,
    kv_lora_rank: int | None, rope_dim: int | None, dtype: str | None, warmup: int, reps: int, profile: str | None,
    on_variant: Callable[[str, int], None],
) -> BenchResult:  # fmt: skip
    """``run_decode_bench`` at the threads it set."""
    target = resolve_device(device)
    torch_dtype = resolve_cache_dtype(dtype, default=torch.bfloat16 if target.type == "cuda" else torch.float32)
    rank = 4 * head_dim if kv_lora_rank is None else kv_lora_rank
    rope = head_dim // 2 if rope_dim is None else rope_dim
    chosen, chosen_how = active_profile(profile, target, DTYPE_NAMES[torch_dtype])
    predicted: dict[str, float] = {}
    torch.manual_seed(0)
    measured: list[tuple[str, int, int, int, int, list[float], str]] = []
    for done, (label, n_kv, factory) in enumerate(_variants(d_model, n_heads, head_dim, gqa_kv_heads, rank, rope)):
        on_variant(label, done)
        try:
            with torch.inference_mode():
                layer = factory(dtype=torch_dtype, device=target)
                cache = layer.new_cache(batch, seq_len)
                fill_random(cache)
                x = torch.randn(batch, 1, d_model, dtype=torch_dtype, device=target)  # (b, 1, d)
                times, seen, dispatches = _measure_decode(layer, cache, x, seq_len - 1, warmup, reps)
        except RuntimeError as exc:  # torch.OutOfMemoryError is a RuntimeError too
            if not is_out_of_memory(exc):
                raise
            raise OutOfMemoryError(
                f"{label} at seq {seq_len} x batch {batch} does not fit in {target.type} memory: lower --seq or --batch"
            ) from None
        weight_bytes = sum(p.nbytes for p in layer.parameters())
        per_token = bytes_per_token(cache)
        measured.append((label, n_kv, per_token, weight_bytes, per_token * seq_len * batch, times, ", ".join(seen)))
        if chosen is not None:
            spec = _variant_spec(label, n_kv, d_model, n_heads, head_dim, rank, rope)
            mode = "naive" if label == "MLA naive" else "absorbed"
            step = predict_attention_step(spec, batch, seq_len, chosen, dispatches=dispatches,
                                          dtype=DTYPE_NAMES[torch_dtype], mla_cache=mode)  # fmt: skip
            predicted[label] = step.seconds * 1e3
        del layer, cache, x
        if target.type == "cuda":
            torch.cuda.empty_cache()
    timings = [Quartiles.of(times) for *_, times, _backend in measured]
    mha, mha_bytes = timings[0], measured[0][3] + measured[0][4]  # the MHA row is the reference
    rows = [
        bench_row(label, n_kv, per_token, weight_bytes, kv_bytes, quartiles, mha, mha_bytes, backend)
        for (label, n_kv, per_token, weight_bytes, kv_bytes, _times, backend), quartiles in zip(
            measured, timings, strict=True
        )
    ]
    rows = [
        row.model_copy(update={"predicted_ms": predicted[row.label], "prediction_ratio": row.median_ms / predicted[row.label]})
        if row.label in predicted else row
        for row in rows
    ]  # fmt: skip
    return BenchResult(
        device=str(target),
        device_name=device_name(target),
        torch_version=torch.__version__,
        dtype=DTYPE_NAMES[torch_dtype],
        seq_len=seq_len, batch=batch, d_model=d_model, n_heads=n_heads, head_dim=head_dim,
        gqa_kv_heads=gqa_kv_heads, mla_kv_lora_rank=rank, mla_rope_dim=rope, warmup=warmup, reps=reps,
        cpu_threads=torch.get_num_threads(), rows=rows,
        prediction_profile=chosen_how if chosen is None else f"{chosen.name} ({chosen.kind}): {chosen_how}",
        warnings=noise_warnings(rows, reps, torch.get_num_threads() if target.type == "cpu" else None)
        + ([] if chosen is None or chosen.unstable_reason is None
           else [f"profile: {chosen.name} was {chosen.unstable_reason}"]),
    )  # fmt: skip
