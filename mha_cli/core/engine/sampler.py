"""Which top-k/top-p sampler vLLM's profiling run exercises, and the bytes per logit its dummy run holds at peak.

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
  16 B a logit of ``core.engine.activation`` (read against the v0.19 logs) prices it, and the generations after V1.

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

from mha_cli.core.engine.generations import parse_version

SamplerPath = Literal["torch-sort", "flashinfer", "triton", "v0-sort", "v0-sort-gather", "v0-sort-model-dtype"]
SAMPLER_PATHS: tuple[SamplerPath, ...] = (
    "torch-sort", "flashinfer", "triton", "v0-sort", "v0-sort-gather", "v0-sort-model-dtype"
)  # fmt: skip

TRITON_BYTES_PER_LOGIT = 16
"""fp32 logits + fp32 sorted logits + int64 sort indices: the rule read against the v0.19 logs."""
FP32 = 4
INT64 = 8
SEGMENTED_SORT_FROM_ROWS = 128
"""PyTorch sorts a batch of 128 rows or more segment by segment (``SortStable.cu``), fewer by one full sort."""
TORCH_SORT_FIRST, TORCH_SORT_UNTIL = (0, 8), (0, 17)
"""vLLM V1 releases whose default CUDA sampler sorts the vocabulary in PyTorch: 0.8 to 0.16."""
V0_FP32_FROM, V0_SCATTER_FROM = (0, 5, 5), (0, 6, 2)
"""V0 releases from which the sampler sorts an fp32 copy of the logits, and re-sorts them by one ``scatter_``."""
MASK = 1
"""A bool mask per logit (top-k, top-p)."""


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
    if path == "flashinfer":
        return logits_dtype_bytes + 3 * FP32  # fp32 copy, masked logits, probabilities
    if path.startswith("v0-"):
        return v0_bytes_per_logit(path, rows, logits_dtype_bytes)
    return TRITON_BYTES_PER_LOGIT


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


def default_sampler(generation: str, release: str | None) -> SamplerPath:
    """The sampler vLLM runs by default: V0's sort (``v0_sampler``) for ``vllm-v0``, ``torch-sort`` for V1 releases
    0.8-0.16 (``release`` as typed, ``0.11`` or ``0.11.0``), else ``triton`` (no release: the generation's latest,
    0.20 for ``vllm-v1``)."""
    if generation == "vllm-v0":
        return v0_sampler(release)
    if generation != "vllm-v1" or release is None:
        return "triton"
    version = parse_version(release)
    return "torch-sort" if TORCH_SORT_FIRST <= version < TORCH_SORT_UNTIL else "triton"
