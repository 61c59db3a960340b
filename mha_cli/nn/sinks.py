"""Attention with sinks (gpt-oss, Granite-SWA, Flint): a learned logit per query head joins every softmax.

Each query row's softmax runs over its visible keys' scores and one more logit, the head's sink, whose weight is
then dropped: the kept weights sum to Z / (Z + exp(sink)) < 1 (Z the sum over the keys), so a head can attend to
"nothing". The sink has no value. SDPA cannot take the extra logit, so the scores are explicit, in the stacked
layout of ``mha_cli.nn.sdpa.grouped_attention`` (K/V never repeated), the softmax in float32, in query chunks of
at most ``SCORE_BUDGET`` scores. Shapes: ``b`` batch, ``n_h`` query heads, ``n_kv`` KV heads, ``g`` query heads
per KV head, ``s`` new queries, ``t`` keys, ``h_d`` / ``v_h_d`` head widths.
"""

from __future__ import annotations

import torch

from mha_cli.nn.sdpa import SCORE_BUDGET, causal_mask, soft_cap


def sink_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    sinks: torch.Tensor,
    *,
    scale: float | None = None,
    mask: torch.Tensor | None = None,
    softcap: float | None = None,
    score_budget: int = SCORE_BUDGET,
) -> torch.Tensor:
    """Causal attention of the last s positions over t keys with one sink logit per query head.

    q (b, n_h, s, h_d); k (b, n_kv, t, h_d); v (b, n_kv, t, v_h_d); sinks (n_h,); ``mask`` as
    ``grouped_attention``'s: None (causal), (s, t) or (b, s, t) booleans, True = visible. Returns (b, n_h, s, v_h_d).
    """
    b, n_heads, s, head_dim = q.shape
    n_kv, t = k.shape[1], k.shape[2]
    group = n_heads // n_kv
    scale = head_dim**-0.5 if scale is None else scale
    visible = causal_mask(s, t, q.device) if mask is None else mask  # (s, t) or (b, s, t)
    if visible.dim() == 3:
        visible = visible[:, None, None]  # (b, 1, 1, s, t)
    grouped_q = q.view(b, n_kv, group, s, head_dim)  # (b, n_kv, g, s, h_d)
    sink_logits = sinks.float().view(1, n_kv, group, 1, 1)  # (1, n_kv, g, 1, 1)
    keys, values = k[:, :, None], v[:, :, None]  # (b, n_kv, 1, t, h_d), (b, n_kv, 1, t, v_h_d)
    chunk = max(1, min(s, score_budget // max(1, b * n_heads * (t + 1))))
    outputs = []
    for first in range(0, s, chunk):
        rows = slice(first, min(s, first + chunk))
        scores = (grouped_q[:, :, :, rows] @ keys.transpose(-2, -1)).float() * scale  # (b, n_kv, g, c, t)
        if softcap is not None:
            scores = soft_cap(scores, softcap)
        scores = scores.masked_fill(~visible[..., rows, :], float("-inf"))  # (b, n_kv, g, c, t)
        sink_column = sink_logits.expand(b, n_kv, group, scores.shape[3], 1)  # (b, n_kv, g, c, 1)
        weights = torch.cat([scores, sink_column], dim=-1).softmax(dim=-1)[..., :-1]  # (b, n_kv, g, c, t)
        outputs.append(weights.to(v.dtype) @ values)  # (b, n_kv, g, c, v_h_d)
    out = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=3)  # (b, n_kv, g, s, v_h_d)
    return out.reshape(b, n_heads, s, v.shape[-1])  # (b, n_h, s, v_h_d)
