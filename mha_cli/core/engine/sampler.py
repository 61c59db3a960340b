"""Which top-k/top-p sampler vLLM V1's profiling run exercises, and the bytes per logit its dummy run holds at peak.

``profile_run`` (``v1/worker/gpu_model_runner.py``, 0.8-0.20) ends with ``_dummy_sampler_run``: one row of logits
per dummy request, with top-k = vocab - 1 and top-p = 0.9, so the full top-k/top-p path runs. The torch peak it adds
is the activation line of ``determine_available_memory``. Three paths, read in the releases' wheels from PyPI:

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
- ``triton``: 0.17 and later send 8 rows or more to ``apply_top_k_top_p_triton`` (``topk_topp_triton.py``); the
  16 B a logit of ``core.engine.activation`` (read against the v0.19 logs) prices it, and the other generations.
"""

from __future__ import annotations

from typing import Literal

from mha_cli.core.engine.generations import parse_version

SamplerPath = Literal["torch-sort", "flashinfer", "triton"]
SAMPLER_PATHS: tuple[SamplerPath, ...] = ("torch-sort", "flashinfer", "triton")

TRITON_BYTES_PER_LOGIT = 16
"""fp32 logits + fp32 sorted logits + int64 sort indices: the rule read against the v0.19 logs."""
FP32 = 4
INT64 = 8
SEGMENTED_SORT_FROM_ROWS = 128
"""PyTorch sorts a batch of 128 rows or more segment by segment (``SortStable.cu``), fewer by one full sort."""
TORCH_SORT_FIRST, TORCH_SORT_UNTIL = (0, 8), (0, 17)
"""vLLM V1 releases whose default CUDA sampler sorts the vocabulary in PyTorch: 0.8 to 0.16."""


def torch_sort_bytes_per_logit(rows: int, logits_dtype_bytes: int) -> int:
    """Bytes per logit at the peak of ``apply_top_k_top_p``'s sort over ``rows`` rows (module docstring)."""
    held = logits_dtype_bytes + FP32 + FP32 + INT64  # model-dtype logits, fp32 copy, sorted values and indices
    cub_alternates = FP32 + INT64
    if rows >= SEGMENTED_SORT_FROM_ROWS:
        return held + INT64 + cub_alternates  # source indices
    if rows > 1:
        return held + 2 * INT64 + FP32 + cub_alternates  # two (index, segment) pair buffers, sorted keys
    return held + cub_alternates


def bytes_per_logit(path: SamplerPath, rows: int, logits_dtype_bytes: int = 2) -> int:
    """Bytes per logit the dummy sampler run holds at its peak on ``path``, for ``rows`` rows."""
    if path == "torch-sort":
        return torch_sort_bytes_per_logit(rows, logits_dtype_bytes)
    if path == "flashinfer":
        return logits_dtype_bytes + 3 * FP32  # fp32 copy, masked logits, probabilities
    return TRITON_BYTES_PER_LOGIT


def default_sampler(generation: str, release: str | None) -> SamplerPath:
    """The sampler vLLM runs by default: ``torch-sort`` for V1 releases 0.8-0.16 (``release`` as typed, ``0.11`` or
    ``0.11.0``), else ``triton`` (no release: the generation's latest, 0.20 for ``vllm-v1``)."""
    if generation != "vllm-v1" or release is None:
        return "triton"
    version = parse_version(release)
    return "torch-sort" if TORCH_SORT_FIRST <= version < TORCH_SORT_UNTIL else "triton"
