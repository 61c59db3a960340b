"""The one attention kernel every module calls, and a way to ask which SDPA backend ran.

``grouped_attention`` runs ``torch.nn.functional.scaled_dot_product_attention`` for any number of
KV heads without repeating K/V: the ``q_per_kv`` query heads that share one KV head are stacked
along the sequence axis, q (b, n_h, s, h_d) -> (b, n_kv, q_per_kv * s, h_d), so each KV head is read
once and broadcast by the kernel itself. We do this rather than ``enable_gqa=True`` because that
flag is native only in the CUDA flash backend; elsewhere PyTorch materialises the repeated K/V.
The one exception: a full causal prefill on CUDA in fp16/bf16 uses ``enable_gqa=True``, where the
flash kernel is native and keeps its own causal path (the stacked layout would need a mask).
For a single decode token no mask is needed; for several tokens a boolean causal mask (offset by
the cache position) is tiled over the group.

``record_sdpa_backends()`` records the backend PyTorch's dispatcher picks for each call
(``torch._fused_sdp_choice``, the function SDPA itself consults), for benchmarks and ``mha verify``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

_BACKEND_NAMES = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}
_recorded: list[str] | None = None


@contextmanager
def record_sdpa_backends() -> Iterator[list[str]]:
    """``with record_sdpa_backends() as seen: module(x)``: ``seen`` lists each SDPA call's backend."""
    global _recorded
    previous, _recorded = _recorded, []
    try:
        yield _recorded
    finally:
        _recorded = previous


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


def _native_gqa(q: torch.Tensor) -> bool:
    """SDPA's ``enable_gqa`` is native (no K/V copy) only in the CUDA flash kernel, fp16/bf16."""
    return q.device.type == "cuda" and q.dtype in (torch.float16, torch.bfloat16)


def causal_mask(n_new: int, n_total: int, device: torch.device) -> torch.Tensor:
    """(s, t) booleans: new token i (absolute position n_total - n_new + i) sees keys 0..that position."""
    start_pos = n_total - n_new
    rows = torch.arange(n_new, device=device).unsqueeze(1) + start_pos  # (s, 1)
    cols = torch.arange(n_total, device=device).unsqueeze(0)  # (1, t)
    return cols <= rows  # (s, t)


def grouped_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float | None = None,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Causal attention of the last s positions over t = len(k) positions, K/V never repeated.

    q: (b, n_h, s, h_d); k: (b, n_kv, t, h_d); v: (b, n_kv, t, v_h_d) with n_h a multiple of n_kv.
    Query head h uses KV head h // q_per_kv (the convention of ``repeat_interleave``, Llama's layout).
    ``mask`` (s, t) booleans, True = visible, replaces the causal mask (sliding windows).
    Returns (b, n_h, s, v_h_d).
    """
    b, n_heads, s, head_dim = q.shape
    n_kv_heads, t = k.shape[1], k.shape[2]
    q_per_kv = n_heads // n_kv_heads
    v_head_dim = v.shape[-1]
    if mask is not None:
        grouped_q = q.reshape(b, n_kv_heads, q_per_kv * s, head_dim)  # (b, n_kv, q_per_kv * s, h_d)
        tiled = mask.repeat(q_per_kv, 1)  # (q_per_kv * s, t)
        if _recorded is not None:
            _recorded.append(sdpa_backend_name(grouped_q, k, v, tiled, False, scale))
        out = F.scaled_dot_product_attention(grouped_q, k, v, attn_mask=tiled, scale=scale)  # (b, n_kv, g * s, v_h_d)
        return out.reshape(b, n_heads, s, v_head_dim)  # (b, n_h, s, v_h_d)
    if q_per_kv > 1 and s == t and _native_gqa(q):
        # Prefill on CUDA in half precision: the flash kernel handles GQA itself and keeps its own
        # causal path, which the stacked layout (it needs an explicit mask) would lose.
        if _recorded is not None:
            _recorded.append(sdpa_backend_name(q, k, v, None, True, scale, enable_gqa=True))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=True)  # (b, n_h, s, h_d)
    grouped_q = q.reshape(b, n_kv_heads, q_per_kv * s, head_dim)  # (b, n_kv, q_per_kv * s, h_d)
    attn_mask = None
    is_causal = False
    if s > 1:
        if q_per_kv == 1 and s == t:
            is_causal = True  # the plain prefill: let fused kernels use their own causal path
        else:
            attn_mask = causal_mask(s, t, q.device).repeat(q_per_kv, 1)  # (q_per_kv * s, t)
    if _recorded is not None:
        _recorded.append(sdpa_backend_name(grouped_q, k, v, attn_mask, is_causal, scale))
    out = F.scaled_dot_product_attention(
        grouped_q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale
    )  # (b, n_kv, q_per_kv * s, v_h_d)
    return out.reshape(b, n_heads, s, v_head_dim)  # (b, n_h, s, v_h_d)


def reference_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Explicit causal softmax attention (repeats K/V per query head): returns (out, weights).

    q: (b, n_h, s, h_d); k, v: (b, n_kv, t, *). out: (b, n_h, s, v_h_d); weights: (b, n_h, s, t).
    """
    n_heads, s, t = q.shape[1], q.shape[2], k.shape[2]
    q_per_kv = n_heads // k.shape[1]
    k = k.repeat_interleave(q_per_kv, dim=1)  # (b, n_h, t, h_d)
    v = v.repeat_interleave(q_per_kv, dim=1)  # (b, n_h, t, v_h_d)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (b, n_h, s, t)
    scores = scores.masked_fill(~causal_mask(s, t, q.device), float("-inf"))  # (b, n_h, s, t)
    weights = scores.softmax(dim=-1)  # (b, n_h, s, t)
    return weights @ v, weights  # (b, n_h, s, v_h_d), (b, n_h, s, t)
