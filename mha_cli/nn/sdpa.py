"""The one attention kernel every module calls, the dispatcher that picks its path, and a way to ask
which SDPA backend ran.

``grouped_attention`` runs ``torch.nn.functional.scaled_dot_product_attention`` for any number of
KV heads without repeating K/V: the ``q_per_kv`` query heads that share one KV head are stacked
along the sequence axis, q (b, n_h, s, h_d) -> (b, n_kv, q_per_kv * s, h_d), so each KV head is read
once and broadcast by the kernel itself. We do this rather than ``enable_gqa=True`` because that
flag is native only in the CUDA flash backend; elsewhere PyTorch materialises the repeated K/V.
Absorbed MLA is the extreme case: one shared 576-wide latent "head", all query heads folded into
the query axis (MQA).

``plan_attention`` (a pure function of shapes, device type and dtype) picks the path:
- native-gqa: a full causal prefill where the CUDA flash kernel applies (fp16/bf16, head width
  <= 256): ``enable_gqa=True``, native GQA and the kernel's own causal path;
- grouped: the stacked layout in one call (decode steps need no mask);
- grouped-chunked: the stacked layout in chunks of query positions, each with its slice of the causal
  mask, whenever one call could materialise more than ``SCORE_BUDGET`` scores or mask elements
  (a long stacked prefill; any head wider than 256 on CUDA, where flash does not apply and the
  fallback kernel may build the score matrix).

Soft-capped scores (Gemma 2's cap * tanh(score / cap)) cannot go through SDPA: with ``softcap`` the same stacked
layout runs as explicit matmul, cap, mask and float32 softmax, always in query chunks of at most
``SCORE_BUDGET`` scores (its backend recorded as ``explicit``).

``record_sdpa_backends()`` records, for each attention call, the backend PyTorch's dispatcher picks
(``torch._fused_sdp_choice``, the function SDPA itself consults); ``record_attention_paths()`` the
path with it ("grouped-chunked: math").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

_BACKEND_NAMES = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}
_recorded: list[str] | None = None
_recorded_paths: list[str] | None = None


@contextmanager
def record_sdpa_backends() -> Iterator[list[str]]:
    """``with record_sdpa_backends() as seen: module(x)``: ``seen`` lists each attention call's backend."""
    global _recorded
    previous, _recorded = _recorded, []
    try:
        yield _recorded
    finally:
        _recorded = previous


@contextmanager
def record_attention_paths() -> Iterator[list[str]]:
    """``with record_attention_paths() as seen: module(x)``: ``seen`` lists each attention call's
    dispatcher path and backend, "grouped-chunked: math"."""
    global _recorded_paths
    previous, _recorded_paths = _recorded_paths, []
    try:
        yield _recorded_paths
    finally:
        _recorded_paths = previous


def sdpa_backend_name(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> str:
    """The backend SDPA's dispatcher chooses for these arguments: flash, efficient, cudnn or math.

    On CPU, ``flash`` is PyTorch's fused CPU kernel. ``unknown`` if this PyTorch lacks the hook.
    """
    choose = getattr(torch, "_fused_sdp_choice", None)
    if choose is None:
        return "unknown"
    extra = {"enable_gqa": True} if enable_gqa else {}
    index = int(choose(q, k, v, attn_mask, 0.0, is_causal, scale=scale, **extra))
    name = _BACKEND_NAMES.get(index, f"backend-{index}")
    return f"{name} (cpu)" if q.device.type == "cpu" else name


FLASH_MAX_HEAD_DIM = 256
"""Widest head the CUDA flash kernel takes (PyTorch's FlashAttention-2); wider heads fall to other kernels."""
SCORE_BUDGET = 1 << 26
"""Most score (and mask) elements one SDPA call may cover when its kernel could materialise them:
64 Mi elements, 256 MiB in fp32. Longer prefills run in query chunks that fit."""

AttentionPath = Literal["native-gqa", "grouped", "grouped-chunked"]


@dataclass(frozen=True)
class AttentionPlan:
    """How ``grouped_attention`` runs one call: the path, and query positions per SDPA call."""

    path: AttentionPath
    chunk: int
    """Query positions (of s) per SDPA call; s for a single call."""
    n_calls: int
    reason: str


def _flash_takes(device_type: str, dtype: torch.dtype, qk_dim: int, v_dim: int) -> bool:
    """The CUDA flash kernel: fp16/bf16, equal q/k/v widths of at most 256 (it handles GQA natively)."""
    half = dtype in (torch.float16, torch.bfloat16)
    return device_type == "cuda" and half and qk_dim == v_dim <= FLASH_MAX_HEAD_DIM


def plan_attention(
    *,
    batch: int,
    n_heads: int,
    n_kv_heads: int,
    s: int,
    t: int,
    qk_dim: int,
    v_dim: int,
    device_type: str,
    dtype: torch.dtype,
    score_budget: int = SCORE_BUDGET,
    custom_mask: bool = False,
    explicit: bool = False,
) -> AttentionPlan:
    """Choose the path for causal attention of s new queries over t keys (a pure function of shapes).

    - native-gqa: a full prefill (s == t) with grouped KV heads where the CUDA flash kernel applies:
      ``enable_gqa=True, is_causal=True``, the kernel reads each KV head once and keeps its causal path.
    - grouped: one SDPA call with the q_per_kv query heads of each KV head stacked along the query
      axis, (b, n_kv, q_per_kv * s, h_d): K/V read once, never repeated. Absorbed MLA is n_kv = 1: all
      heads folded into the query axis over the one shared latent "head" (MQA). A decode step (s = 1)
      needs no mask; a plain MHA prefill uses the kernel's own causal path.
    - grouped-chunked: the same layout in chunks of query positions, each with its slice of the causal
      mask, when one call could materialise more than ``score_budget`` scores or mask elements: a
      stacked prefill needs an explicit (q_per_kv * s, t) mask, and on CUDA a head wider than the flash
      kernel takes (MLA's 576-wide latent, head_dim 512) runs in a kernel that may build the scores.
    ``custom_mask``: the caller passes its own (s, t) mask (a sliding window): never native-gqa.
    ``explicit``: the scores are computed explicitly (soft-capped), so every call is held to the budget.
    """
    q_per_kv = n_heads // n_kv_heads
    flash = _flash_takes(device_type, dtype, qk_dim, v_dim)
    if q_per_kv > 1 and s == t and flash and not custom_mask and not explicit:
        return AttentionPlan("native-gqa", s, 1, "full prefill, flash kernel applies: native GQA, own causal path")
    needs_mask = custom_mask or (s > 1 and not (q_per_kv == 1 and s == t))
    wide_on_cuda = device_type == "cuda" and not flash
    if not needs_mask and not wide_on_cuda and not explicit:
        why = "decode step: no mask" if s == 1 else "one query per KV head: the kernel's own causal path"
        return AttentionPlan("grouped", s, 1, why)
    scores_per_position = batch * n_heads * t  # score (and mask) elements per query position
    chunk = max(1, min(s, score_budget // max(1, scores_per_position)))
    n_calls = -(-s // chunk)
    if n_calls == 1:
        return AttentionPlan("grouped", s, 1, f"{s * scores_per_position} scores fit the budget in one call")
    why = "heads wider than the flash kernel takes" if wide_on_cuda else "the stacked causal mask"
    why = "explicit soft-capped scores" if explicit else why
    return AttentionPlan("grouped-chunked", chunk, n_calls, f"{why}: {n_calls} calls of {chunk} query positions")


def causal_mask(n_new: int, n_total: int, device: torch.device) -> torch.Tensor:
    """(s, t) booleans: new token i (absolute position n_total - n_new + i) sees keys 0..that position."""
    start_pos = n_total - n_new
    rows = torch.arange(n_new, device=device).unsqueeze(1) + start_pos  # (s, 1)
    cols = torch.arange(n_total, device=device).unsqueeze(0)  # (1, t)
    return cols <= rows  # (s, t)


def _record(path: AttentionPath, backend: str) -> None:
    if _recorded is not None:
        _recorded.append(backend)
    if _recorded_paths is not None:
        _recorded_paths.append(f"{path}: {backend}")


def grouped_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float | None = None,
    mask: torch.Tensor | None = None,
    softcap: float | None = None,
    score_budget: int = SCORE_BUDGET,
) -> torch.Tensor:
    """Causal attention of the last s positions over t = len(k) positions, K/V never repeated.

    q: (b, n_h, s, h_d); k: (b, n_kv, t, h_d); v: (b, n_kv, t, v_h_d) with n_h a multiple of n_kv.
    Query head h uses KV head h // q_per_kv (the convention of ``repeat_interleave``, Llama's layout).
    ``mask`` (s, t) booleans, True = visible, replaces the causal mask (sliding windows), or (b, s, t) for a mask
    that differs by row (a padded batch); it must hide every key after its query, as the causal mask does (the
    last key is the last query's position). ``scale``: the factor on q.k (default h_d^-0.5); ``softcap``: scores
    capped to cap * tanh(score / cap) after the scale (computed explicitly, see the module docstring).
    Returns (b, n_h, s, v_h_d). The path is ``plan_attention``'s; ``record_sdpa_backends`` and
    ``record_attention_paths`` see one entry per call (the first chunk's backend).
    """
    b, n_heads, s, head_dim = q.shape
    n_kv_heads, t = k.shape[1], k.shape[2]
    q_per_kv = n_heads // n_kv_heads
    v_head_dim = v.shape[-1]
    plan = plan_attention(batch=b, n_heads=n_heads, n_kv_heads=n_kv_heads, s=s, t=t, qk_dim=head_dim, v_dim=v_head_dim,
                          device_type=q.device.type, dtype=q.dtype, score_budget=score_budget,
                          custom_mask=mask is not None, explicit=softcap is not None)  # fmt: skip
    if plan.path == "native-gqa":
        _record(plan.path, sdpa_backend_name(q, k, v, None, True, scale, enable_gqa=True))
        return F.scaled_dot_product_attention(
            q, k, v, is_causal=True, scale=scale, enable_gqa=True
        )  # (b, n_h, s, v_h_d)
    grouped_q = q.view(b, n_kv_heads, q_per_kv, s, head_dim)  # (b, n_kv, q_per_kv, s, h_d)
    outputs = []
    for first in range(0, s, plan.chunk):
        n_new = min(plan.chunk, s - first)
        n_seen = t - s + first + n_new  # keys the chunk's last query sees: later keys are dropped, not masked
        chunk_q = grouped_q[:, :, :, first : first + n_new].reshape(b, n_kv_heads, q_per_kv * n_new, head_dim)
        chunk_k, chunk_v = k[:, :, :n_seen], v[:, :, :n_seen]  # (b, n_kv, t', h_d), (b, n_kv, t', v_h_d)
        attn_mask, is_causal = None, False  # chunk_q: (b, n_kv, q_per_kv * c, h_d)
        if mask is not None and mask.dim() == 3:  # per row: (b, s, t) -> (b, 1, q_per_kv * c, t')
            attn_mask = mask[:, first : first + n_new, :n_seen].repeat(1, q_per_kv, 1)[:, None]
        elif mask is not None:
            attn_mask = mask[first : first + n_new, :n_seen].repeat(q_per_kv, 1)  # (q_per_kv * c, t')
        elif n_new > 1:
            if q_per_kv == 1 and n_new == n_seen:
                is_causal = True  # the plain prefill: let fused kernels use their own causal path
            else:
                attn_mask = causal_mask(n_new, n_seen, q.device).repeat(q_per_kv, 1)  # (q_per_kv * c, t')
        if softcap is not None:
            if first == 0:
                _record(plan.path, "explicit")
            out = _capped_attention(chunk_q, chunk_k, chunk_v, attn_mask, is_causal, scale, softcap)
        else:
            if first == 0:
                _record(plan.path, sdpa_backend_name(chunk_q, chunk_k, chunk_v, attn_mask, is_causal, scale))
            out = F.scaled_dot_product_attention(
                chunk_q, chunk_k, chunk_v, attn_mask=attn_mask, is_causal=is_causal, scale=scale
            )  # (b, n_kv, q_per_kv * c, v_h_d)
        outputs.append(out.view(b, n_kv_heads, q_per_kv, n_new, v_head_dim))
    out = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=3)  # (b, n_kv, q_per_kv, s, v_h_d)
    return out.reshape(b, n_heads, s, v_head_dim)  # (b, n_h, s, v_h_d)


def soft_cap(x: torch.Tensor, cap: float) -> torch.Tensor:
    """cap * tanh(x / cap): x squeezed smoothly into (-cap, cap), nearly unchanged where |x| << cap."""
    return torch.tanh(x / cap) * cap


def _capped_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None,
    is_causal: bool,
    scale: float | None,
    softcap: float,
) -> torch.Tensor:
    """One chunk of the stacked layout with soft-capped scores, as SDPA's arguments: q (b, n_kv, m, h_d) over
    k (b, n_kv, t, h_d), v (b, n_kv, t, v_h_d); ``attn_mask`` (m, t) or (b, 1, m, t) booleans, True = visible;
    ``is_causal``: m == t, causal. The softmax in float32, as transformers' eager path. Returns (b, n_kv, m, v_h_d)."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = soft_cap((q @ k.transpose(-2, -1)) * scale, softcap)  # (b, n_kv, m, t)
    if is_causal:
        attn_mask = causal_mask(q.shape[2], k.shape[2], q.device)  # (m, t)
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf"))  # (b, n_kv, m, t)
    weights = scores.softmax(dim=-1, dtype=torch.float32).to(q.dtype)  # (b, n_kv, m, t)
    return weights @ v  # (b, n_kv, m, v_h_d)


def reference_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float | None = None, softcap: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Explicit causal softmax attention (repeats K/V per query head): returns (out, weights).

    q: (b, n_h, s, h_d); k, v: (b, n_kv, t, *). out: (b, n_h, s, v_h_d); weights: (b, n_h, s, t). ``softcap``:
    scores capped to cap * tanh(score / cap) after the scale.
    """
    n_heads, s, t = q.shape[1], q.shape[2], k.shape[2]
    q_per_kv = n_heads // k.shape[1]
    k = k.repeat_interleave(q_per_kv, dim=1)  # (b, n_h, t, h_d)
    v = v.repeat_interleave(q_per_kv, dim=1)  # (b, n_h, t, v_h_d)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (b, n_h, s, t)
    if softcap is not None:
        scores = soft_cap(scores, softcap)  # (b, n_h, s, t)
    scores = scores.masked_fill(~causal_mask(s, t, q.device), float("-inf"))  # (b, n_h, s, t)
    weights = scores.softmax(dim=-1)  # (b, n_h, s, t)
    return weights @ v, weights  # (b, n_h, s, v_h_d), (b, n_h, s, t)
