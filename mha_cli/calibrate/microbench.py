"""The microbenchmarks of ``mha calibrate``: each times one kind of operation at several sizes on this device.

- ``dispatch``: a decode step of a tiny decoder (width 64, two layers), whose bytes and FLOPs are negligible: its
  time over the operators it dispatches (counted) is the fixed cost of one eager operator;
- ``weight``: a matrix-vector product (one token through a linear layer) over weights of 256 KiB to 256 MiB (three
  input widths), each
  call on the next of copies that together exceed any cache (a model's step reads every weight from memory);
- ``cache``: attention of one query per head over a cache of 64 KiB to 64 MiB (decode), copies cycled alike;
- ``matmul``: a linear layer over 1 to 1,024 rows (4,096 on CUDA): FLOP/s against the rows;
- ``attention``: causal attention of a prompt of 64 to 1,024 queries (4,096 on CUDA): FLOP/s over the causal pairs;
- ``kernel`` (CUDA only): a CUDA graph of 256 tiny kernels, replayed: the fixed cost of one kernel under graphs.

Each size is timed ``reps`` times after a warm-up and the median kept; the repetitions shrink for large sizes so a
CPU run takes about a minute. Sizes are chosen to fit: a device with less free memory than a size skips it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch
import torch.nn.functional as F

from mha_cli.core.byte_units import MIB
from mha_cli.core.cost.calibration import Sample
from mha_cli.core.schemas import ModelSpec
from mha_cli.nn.dispatch import count_dispatches
from mha_cli.nn.model import build_model
from mha_cli.nn.timing import time_calls

KIB = 2**10
WEIGHT_SIZES = [256 * KIB, 1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]
CACHE_SIZES = [64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB]
CPU_ROWS, CUDA_ROWS = [1, 4, 16, 64, 256, 1024], [1, 4, 16, 64, 256, 1024, 4096]
CPU_QUERIES, CUDA_QUERIES = [64, 256, 1024], [64, 256, 1024, 4096]
WEIGHT_WIDTHS = [1024, 2048, 4096]
HEADS, HEAD_DIM = 8, 128
"""The attention benchmarks' shape: 8 heads of 128."""
TINY = ModelSpec(name="calibration-tiny", d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=128, d_ff=128)
POOL_BYTES_CPU, POOL_BYTES_CUDA = 512 * MIB, 1024 * MIB
"""Operands cycled through per size: several times the largest last-level cache (CPU L3 ~100 MiB, H100 L2 50 MiB)."""
TARGET_SECONDS = 0.6
"""Time spent per size, about (the repetitions are at least 3, at most 50)."""


def _median_seconds(step: Callable[[], object], device: torch.device, share: float = 1.0) -> float:
    """Median seconds of ``step`` over repetitions that take about ``share`` x ``TARGET_SECONDS``."""
    first, _ = time_calls(step, device, 1, 1)
    reps = max(3, min(200, int(share * TARGET_SECONDS / max(first[0], 1e-6))))
    times, _ = time_calls(step, device, 1, reps)
    return statistics.median(times)


def _dispatches(step: Callable[[], object]) -> int:
    with count_dispatches() as counter:
        step()
    return counter.total


def dispatch_samples(device: torch.device, dtype: torch.dtype, share: float) -> list[Sample]:
    """The tiny decoder's decode step at a short context, at batch 1."""
    model = build_model(TINY, dtype=dtype, device=device)
    caches = model.new_cache(1, 64, dtype=dtype)
    token = torch.zeros(1, 1, dtype=torch.long, device=device)  # (1, 1)
    with torch.inference_mode():
        model(torch.zeros(1, 16, dtype=torch.long, device=device), caches, 0)

        def step() -> object:
            return model(token, caches, 32)

        count = _dispatches(step)
        seconds = _median_seconds(step, device, share)
        return [Sample(kind="dispatch", size=count, work=0.0, seconds=seconds, dispatches=count)]


class Pool:
    """One buffer larger than any cache, seen as copies of an operand used in turn, so each call reads memory, as a
    model's step reads each layer's weights (and cache) once. Allocated once per calibration, filled with small
    values (the speed of a matmul does not depend on them)."""

    def __init__(self, device: torch.device, dtype: torch.dtype, n_bytes: int) -> None:
        element = torch.empty((), dtype=dtype).element_size()
        self.buffer = torch.full((n_bytes // element,), 0.01, dtype=dtype, device=device)  # (n,)

    def copies(self, shape: tuple[int, ...]) -> Callable[[], torch.Tensor]:
        """A function returning the next of the buffer's copies of ``shape`` (at least two)."""
        numel = 1
        for extent in shape:
            numel *= extent
        count = max(2, self.buffer.numel() // numel)
        views = [self.buffer[(i * numel) % max(1, self.buffer.numel() - numel + 1):][:numel].view(shape)
                 for i in range(count)]  # fmt: skip
        if views[-1].numel() < numel:  # a shape larger than the buffer: fresh tensors
            views = [torch.full(shape, 0.01, dtype=self.buffer.dtype, device=self.buffer.device) for _ in range(2)]
        turn = [0]

        def next_copy() -> torch.Tensor:
            turn[0] = (turn[0] + 1) % len(views)
            return views[turn[0]]

        return next_copy


def weight_samples(
    device: torch.device, dtype: torch.dtype, sizes: list[int], pool: Pool, share: float
) -> list[Sample]:
    """One row through a linear layer of each size, at input widths 1,024, 2,048 and 4,096 (a GEMV's speed depends on
    its shape; the fit keeps the median): bytes of the weight (and the tiny input and output)."""
    samples = []
    element = torch.empty((), dtype=dtype).element_size()
    with torch.inference_mode():
        for size in sizes:
            for width in WEIGHT_WIDTHS:
                rows = max(1, size // (width * element))
                weights = pool.copies((rows, width))
                x = torch.randn(1, width, dtype=dtype, device=device)  # (1, k)

                def step(weights: Callable[[], torch.Tensor] = weights, x: torch.Tensor = x) -> object:
                    return F.linear(x, weights())  # (1, n)

                moved = rows * width * element + x.nbytes + rows * element
                samples.append(Sample(kind="weight", size=size, work=moved, seconds=_median_seconds(step, device, share),
                                      dispatches=_dispatches(step)))  # fmt: skip
    return samples


def cache_samples(device: torch.device, dtype: torch.dtype, sizes: list[int], pool: Pool, share: float) -> list[Sample]:
    """One query per head attending a cache of each size (keys and values, together ``size`` bytes)."""
    samples = []
    element = torch.empty((), dtype=dtype).element_size()
    with torch.inference_mode():
        for size in sizes:
            tokens = max(1, size // (2 * HEADS * HEAD_DIM * element))
            q = torch.randn(1, HEADS, 1, HEAD_DIM, dtype=dtype, device=device)  # (1, h, 1, d)
            caches = pool.copies((2, 1, HEADS, tokens, HEAD_DIM))

            def step(q: torch.Tensor = q, caches: Callable[[], torch.Tensor] = caches) -> object:
                kv = caches()  # (2, 1, h, t, d)
                return F.scaled_dot_product_attention(q, kv[0], kv[1])  # (1, h, 1, d)

            cache_bytes = 2 * HEADS * tokens * HEAD_DIM * element
            samples.append(Sample(kind="cache", size=cache_bytes, work=cache_bytes,
                                  seconds=_median_seconds(step, device, share), dispatches=_dispatches(step)))  # fmt: skip
    return samples


def matmul_samples(device: torch.device, dtype: torch.dtype, rows: list[int], share: float) -> list[Sample]:
    """A linear layer (2048 x 2048 on CPU, 8192 x 8192 on CUDA) over each number of rows."""
    width = 8192 if device.type == "cuda" else 2048
    weight = torch.randn(width, width, dtype=dtype, device=device)  # (k, k)
    samples = []
    with torch.inference_mode():
        for m in rows:
            x = torch.randn(m, width, dtype=dtype, device=device)  # (m, k)

            def step(x: torch.Tensor = x) -> object:
                return F.linear(x, weight)  # (m, k)

            samples.append(Sample(kind="matmul", size=m, work=2.0 * m * width * width,
                                  seconds=_median_seconds(step, device, share), dispatches=_dispatches(step)))  # fmt: skip
    return samples


def attention_samples(device: torch.device, dtype: torch.dtype, queries: list[int], share: float) -> list[Sample]:
    """Causal attention of a prompt of each length: FLOPs over the causal pairs (2 x heads x (qk + v width) each)."""
    samples = []
    with torch.inference_mode():
        for p in queries:
            q = torch.randn(1, HEADS, p, HEAD_DIM, dtype=dtype, device=device)  # (1, h, p, d)
            k, v = torch.randn_like(q), torch.randn_like(q)  # (1, h, p, d)

            def step(q: torch.Tensor = q, k: torch.Tensor = k, v: torch.Tensor = v) -> object:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (1, h, p, d)

            pairs = p * (p + 1) // 2
            samples.append(Sample(kind="attention", size=p, work=pairs * 2.0 * HEADS * 2 * HEAD_DIM,
                                  seconds=_median_seconds(step, device, share), dispatches=_dispatches(step)))  # fmt: skip
    return samples


def kernel_samples(device: torch.device) -> list[Sample]:
    """CUDA only: a captured graph of ``KERNELS`` tiny in-place adds, replayed; seconds per kernel."""
    kernels = 256
    x = torch.zeros(16, device=device)
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1.0)
    seconds = _median_seconds(graph.replay, device)
    return [Sample(kind="kernel", size=kernels, work=0.0, seconds=seconds, dispatches=kernels)]


def pool_bytes(device: torch.device, free_bytes: int | None) -> int:
    """How much memory the pools cycle through: beyond any last-level cache (CPU L3, GPU L2), within the free memory."""
    wanted = POOL_BYTES_CUDA if device.type == "cuda" else POOL_BYTES_CPU
    return wanted if free_bytes is None else max(1, min(wanted, free_bytes // 4))


def fitting(sizes: list[int], free_bytes: int | None) -> list[int]:
    """The sizes whose buffers fit in a quarter of the free memory (all of them when it is unknown)."""
    if free_bytes is None:
        return sizes
    return [size for size in sizes if size <= free_bytes // 4]
