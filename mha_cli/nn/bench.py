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

import torch

from mha_cli.core.errors import BadInputError, OutOfMemoryError
from mha_cli.core.record import Record
from mha_cli.nn.attention import Attention
from mha_cli.nn.cache_ops import bytes_per_token, fill_random
from mha_cli.nn.device import device_name, is_out_of_memory, resolve_device
from mha_cli.nn.kv_cache import DTYPE_NAMES, KVCache, LatentCache, resolve_cache_dtype
from mha_cli.nn.mla import MLAttention
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
    speedup_vs_mha: float
    """MHA's median time / this row's (higher is faster)."""
    bytes_vs_mha: float
    """This row's bytes_read / MHA's."""
    effective_gb_per_s: float
    """bytes_read / median time, in 1e9 bytes per second."""
    sdpa_backend: str
    """The backend SDPA's dispatcher chose for the step."""


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
    rows: list[BenchRow]


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
) -> tuple[list[float], list[str]]:
    """Seconds per decode step of ``x`` (b, 1, d) at position ``pos``, and the SDPA backends it uses."""

    def step() -> torch.Tensor:
        return layer(x, cache, pos)  # (b, 1, d)

    with record_sdpa_backends() as seen:
        step()
    times, _timer = time_calls(step, x.device, warmup, reps)
    return times, seen


def validate_bench_options(
    *,
    seq_len: int,
    batch: int,
    d_model: int,
    n_heads: int,
    head_dim: int,
    gqa_kv_heads: int,
    kv_lora_rank: int | None,
    rope_dim: int | None,
    warmup: int,
    reps: int,
) -> None:
    """Every number checked before anything is built: one ``BadInputError`` (exit 2) naming the option.

    ``None`` (kv_lora_rank, rope_dim) means "use the default"; 0 is a value, and a bad one.
    """
    minimum = {"--seq": (seq_len, 2), "--batch": (batch, 1), "--d-model": (d_model, 1), "--heads": (n_heads, 1),
               "--head-dim": (head_dim, 1), "--kv-heads": (gqa_kv_heads, 1), "--kv-lora-rank": (kv_lora_rank, 1),
               "rope_dim": (rope_dim, 0), "--warmup": (warmup, 0), "--reps": (reps, 1)}  # fmt: skip
    for option, (value, least) in minimum.items():
        if value is not None and value < least:
            raise BadInputError(f"{option} must be at least {least} (got {value})")
    if n_heads % gqa_kv_heads or not 1 < gqa_kv_heads < n_heads:
        raise BadInputError(
            f"--kv-heads ({gqa_kv_heads}) must divide --heads ({n_heads}) and lie strictly between 1 and it"
        )


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
) -> BenchResult:
    """Time one decode step of each variant; MLA defaults to DeepSeek's proportions (4 x, 1/2 x head_dim)."""
    validate_bench_options(
        seq_len=seq_len, batch=batch, d_model=d_model, n_heads=n_heads, head_dim=head_dim, gqa_kv_heads=gqa_kv_heads,
        kv_lora_rank=kv_lora_rank, rope_dim=rope_dim, warmup=warmup, reps=reps,
    )  # fmt: skip
    target = resolve_device(device)
    torch_dtype = resolve_cache_dtype(dtype, default=torch.bfloat16 if target.type == "cuda" else torch.float32)
    rank = 4 * head_dim if kv_lora_rank is None else kv_lora_rank
    rope = head_dim // 2 if rope_dim is None else rope_dim
    torch.manual_seed(0)
    measured: list[tuple[str, int, int, int, int, list[float], str]] = []
    for label, n_kv, factory in _variants(d_model, n_heads, head_dim, gqa_kv_heads, rank, rope):
        try:
            with torch.inference_mode():
                layer = factory(dtype=torch_dtype, device=target)
                cache = layer.new_cache(batch, seq_len)
                fill_random(cache)
                x = torch.randn(batch, 1, d_model, dtype=torch_dtype, device=target)  # (b, 1, d)
                times, seen = _measure_decode(layer, cache, x, seq_len - 1, warmup, reps)
        except RuntimeError as exc:  # torch.OutOfMemoryError is a RuntimeError too
            if not is_out_of_memory(exc):
                raise
            raise OutOfMemoryError(
                f"{label} at seq {seq_len} x batch {batch} does not fit in {target.type} memory: lower --seq or --batch"
            ) from None
        weight_bytes = sum(p.nbytes for p in layer.parameters())
        per_token = bytes_per_token(cache)
        measured.append((label, n_kv, per_token, weight_bytes, per_token * seq_len * batch, times, ", ".join(seen)))
        del layer, cache, x
        if target.type == "cuda":
            torch.cuda.empty_cache()
    mha_ms = statistics.median(measured[0][5]) * 1e3
    mha_bytes = measured[0][3] + measured[0][4]
    rows = []
    for label, n_kv, per_token, weight_bytes, kv_bytes, times, backend in measured:
        median_s = statistics.median(times)
        read = weight_bytes + kv_bytes
        rows.append(
            BenchRow(
                label=label, n_kv_heads=n_kv, cache_bytes_per_token=per_token, weight_bytes=weight_bytes,
                kv_bytes_read=kv_bytes, bytes_read=read, median_ms=round(median_s * 1e3, 4),
                min_ms=round(min(times) * 1e3, 4), speedup_vs_mha=round(mha_ms / (median_s * 1e3), 3),
                bytes_vs_mha=round(read / mha_bytes, 4), effective_gb_per_s=round(read / median_s / 1e9, 2),
                sdpa_backend=backend,
            )
        )  # fmt: skip
    return BenchResult(
        device=str(target),
        device_name=device_name(target),
        torch_version=torch.__version__,
        dtype=DTYPE_NAMES[torch_dtype],
        seq_len=seq_len, batch=batch, d_model=d_model, n_heads=n_heads, head_dim=head_dim,
        gqa_kv_heads=gqa_kv_heads, mla_kv_lora_rank=rank, mla_rope_dim=rope, warmup=warmup, reps=reps, rows=rows,
    )  # fmt: skip
