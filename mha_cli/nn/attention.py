"""One attention module for MHA, GQA and MQA: ``n_kv_heads`` equal to ``n_heads``, a divisor of it, or 1.

Projection names follow Llama (``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``) so a Llama-family
layer's weights load by name. Shapes use the glossary of ``mha_cli.nn.heads``.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.nn.heads import combine_heads, split_heads
from mha_cli.nn.kv_cache import KVCache
from mha_cli.nn.sdpa import grouped_attention, reference_attention


class Attention(nn.Module):
    """Causal multi-head attention with ``n_kv_heads`` key/value heads (MHA, GQA or MQA).

    ``forward(x, cache=None, start_pos=0)``: x (b, s, d_model) -> (b, s, d_model). With a cache, the
    new K/V are written at positions [start_pos, start_pos + s) and the queries attend over
    [0, start_pos + s). Without one, x is the whole sequence from position 0.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int,
        head_dim: int,
        *,
        bias: bool = False,
        o_bias: bool = False,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if n_kv_heads < 1 or n_kv_heads > n_heads or n_heads % n_kv_heads:
            raise ValueError(f"n_heads ({n_heads}) must be divisible by n_kv_heads ({n_kv_heads}), 1 <= n_kv <= n_h")
        self.d_model, self.n_heads, self.n_kv_heads, self.head_dim = d_model, n_heads, n_kv_heads, head_dim
        self.q_per_kv = n_heads // n_kv_heads
        factory = {"dtype": dtype, "device": device}
        self.q_proj = nn.Linear(d_model, n_heads * head_dim, bias=bias, **factory)
        self.k_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=bias, **factory)
        self.v_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=bias, **factory)
        self.o_proj = nn.Linear(n_heads * head_dim, d_model, bias=o_bias, **factory)

    def _project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q = split_heads(self.q_proj(x), self.n_heads)  # (b, n_h, s, h_d)
        k = split_heads(self.k_proj(x), self.n_kv_heads)  # (b, n_kv, s, h_d)
        v = split_heads(self.v_proj(x), self.n_kv_heads)  # (b, n_kv, s, h_d)
        return q, k, v

    def forward(self, x: torch.Tensor, cache: KVCache | None = None, start_pos: int = 0) -> torch.Tensor:
        q, k, v = self._project(x)  # (b, n_h, s, h_d), (b, n_kv, s, h_d) x 2
        if cache is not None:
            k, v = cache.update(start_pos, k, v)  # (b, n_kv, t, h_d) each, t = start_pos + s
            k, v = k.to(q.dtype), v.to(q.dtype)  # no-op when the cache has the module's dtype
        elif start_pos:
            raise ValueError("start_pos > 0 needs a cache holding the earlier positions")
        out = grouped_attention(q, k, v)  # (b, n_h, s, h_d)
        return self.o_proj(combine_heads(out))  # (b, s, d_model)

    def forward_with_weights(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reference path (explicit softmax, K/V repeated): (out (b, s, d_model), weights (b, n_h, s, s))."""
        q, k, v = self._project(x)  # (b, n_h, s, h_d), (b, n_kv, s, h_d) x 2
        out, weights = reference_attention(q, k, v)  # (b, n_h, s, h_d), (b, n_h, s, s)
        return self.o_proj(combine_heads(out)), weights  # (b, s, d_model), (b, n_h, s, s)

    def new_cache(
        self,
        batch: int,
        max_seq: int,
        dtype: torch.dtype | str | None = None,
        device: torch.device | str | None = None,
    ) -> KVCache:
        """A pre-allocated cache for this module (default dtype and device: the module's)."""
        weight = self.q_proj.weight
        return KVCache(
            batch,
            max_seq,
            self.n_kv_heads,
            self.head_dim,
            dtype=weight.dtype if dtype is None else dtype,
            device=weight.device if device is None else device,
        )
