"""ALiBi (Press et al. 2022): attention scores biased by distance instead of rotated or learned positions.

Head h adds slope_h x (key position - last key position) to every score of its queries; the softmax over a query's
keys is unchanged by a shift common to that query's row, so this is the paper's slope_h x (key - query) and BLOOM's
slope_h x (key index among the real tokens) alike, and the biases of the nearest keys, the ones that weigh most, are
the smallest (the most precise in bf16). Slopes for n heads: with p the largest power of two <= n, the geometric series
2^(-8 i / p), i = 1..p, then, for the n - p heads past it, the odd terms 2^(-8 (2 j - 1) / (2 p)) of the series
for 2p heads, each the series' ratio raised in float32 (BLOOM's ``build_alibi_tensor``; MPT's
``build_mpt_alibi_tensor`` with ``alibi_bias_max`` 8 gives the same values in the same order). The bias is added
after the softmax scale, unscaled.

Shapes: ``b`` batch, ``n_h`` query heads, ``n_kv`` KV heads, ``s`` new queries, ``t`` keys, ``h_d`` head width.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from mha_cli.nn.sdpa import causal_mask


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The n_heads slopes (float32), in head order (see the module docstring)."""
    if n_heads < 1:
        raise ValueError(f"ALiBi needs at least one head, not {n_heads}")
    p = 2 ** math.floor(math.log2(n_heads))
    ratio = torch.tensor(2.0 ** (-8.0 / p), dtype=torch.float32)  # the series' ratio, powered in float32 (BLOOM's)
    half_ratio = torch.tensor(2.0 ** (-8.0 / (2 * p)), dtype=torch.float32)  # of the series for 2p heads
    first = ratio ** torch.arange(1, p + 1, dtype=torch.int32)  # (p,)
    extra = half_ratio ** torch.arange(1, 1 + 2 * (n_heads - p), 2, dtype=torch.int32)  # (n_h - p,): odd terms
    return torch.cat([first, extra])  # (n_h,)


def alibi_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slopes: torch.Tensor,
    *,
    scale: float | None = None,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Causal attention of the last s positions over t keys with ALiBi biases; K/V never repeated.

    q: (b, n_h, s, h_d); k, v: (b, n_kv, t, h_d); ``slopes`` (n_h,); ``mask`` (s, t) or (b, s, t) booleans, True =
    visible (default causal, the last key being the last query's position). Query heads stack over their KV head
    along the query axis (as ``grouped_attention``), the bias and mask as a float SDPA mask. Returns (b, n_h, s, h_d).
    """
    b, n_heads, s, head_dim = q.shape
    n_kv_heads, t = k.shape[1], k.shape[2]
    q_per_kv = n_heads // n_kv_heads
    visible = causal_mask(s, t, q.device) if mask is None else mask  # (s, t) or (b, s, t)
    if visible.dim() == 2:
        visible = visible[None]  # (1, s, t)
    keys = torch.arange(1 - t, 1, device=q.device, dtype=torch.float32)  # (t,): to the last key, <= 0 (MPT's)
    bias = slopes.to(q.device)[:, None, None] * keys  # (n_h, 1, t)
    scores_bias = torch.where(visible[:, None], bias[None], float("-inf"))  # (b | 1, n_h, s, t)
    scores_bias = scores_bias.to(q.dtype).reshape(-1, n_kv_heads, q_per_kv * s, t)  # (b | 1, n_kv, q_per_kv * s, t)
    stacked_q = q.reshape(b, n_kv_heads, q_per_kv * s, head_dim)  # (b, n_kv, q_per_kv * s, h_d)
    out = F.scaled_dot_product_attention(stacked_q, k, v, attn_mask=scores_bias, scale=scale)
    return out.reshape(b, n_heads, s, v.shape[-1])  # (b, n_h, s, h_d)
