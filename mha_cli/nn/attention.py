"""One attention module for MHA, GQA and MQA: ``n_kv_heads`` equal to ``n_heads``, a divisor of it, or 1.

Projection names follow Llama (``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``, Qwen3's ``q_norm`` and
``k_norm``) so a Llama-family layer's weights load by name. Optional parts, in the order they apply:
per-head RMSNorm of queries and keys (Qwen3; weights offset by ``norm_offset``, Gemma 3's 1 + weight; a LayerNorm
with ``qk_norm_type`` layernorm, Persimmon's), RoPE (``rope``), a sliding window (``window``: a query sees itself
and the window - 1 keys before it; ``mask_window``: the same mask over a cache that keeps every token, MiniMax's
full-attention layers in transformers), the softmax
scale (``scale``, default head_dim^-0.5) and a soft cap of the scores (``softcap``, Gemma 2). Under tensor parallelism the module holds one rank's
heads and ``o_proj`` is row-parallel (``reduce`` sums the ranks). Shapes use the glossary of
``mha_cli.nn.heads``. ``qk_norm_span="projection"`` norms the whole q and k projections instead of each head
(OLMo 2, OLMoE, MiniMax-M2: ``q_norm`` of n_heads * head_dim values, ``k_norm`` of n_kv_heads * head_dim);
``qkv_clip`` clamps q, k and v after the norms (OLMoE's ``clip_qkv``); ``alibi_slopes`` biases the scores by key
position instead of rotating (BLOOM, MPT: ``mha_cli.nn.alibi``). ``output_gate`` (Qwen3-Next): ``q_proj`` emits
each head's query then its gate (2 * head_dim values a head), and sigmoid(gate) multiplies the combined heads
before ``o_proj``. ``key_scale`` multiplies the keys after ``k_proj`` (Falcon-H1's ``key_multiplier``). ``sinks``
adds a learned logit per head to every softmax (gpt-oss, ``mha_cli.nn.sinks``); ``softplus_gate`` scales the output
by softplus(g_proj(x)) per head or per element before ``o_proj`` (Laguna).
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.nn.alibi import alibi_attention
from mha_cli.nn.heads import combine_heads, split_heads
from mha_cli.nn.kv_cache import KVCache
from mha_cli.nn.norms import RMSNorm
from mha_cli.nn.padding import Padding
from mha_cli.nn.rope import RotaryEmbedding, as_halves, rotate
from mha_cli.nn.row_parallel import Reduce, row_parallel
from mha_cli.nn.sdpa import causal_mask, grouped_attention, reference_attention
from mha_cli.nn.sinks import sink_attention
from mha_cli.nn.window_cache import SlidingWindowCache, window_mask

CosSin = tuple[torch.Tensor, torch.Tensor]
"""RoPE's cos and sin (s, rotary width) for the positions of a forward call."""


class Attention(nn.Module):
    """Causal multi-head attention with ``n_kv_heads`` key/value heads (MHA, GQA or MQA).

    ``forward(x, cache=None, start_pos=0)``: x (b, s, d_model) -> (b, s, d_model). With a cache, the
    new K/V are written at positions [start_pos, start_pos + s) and the queries attend over
    [0, start_pos + s) (the last ``window`` of them for a sliding-window layer). Without one, x is
    the whole sequence from position 0. ``cos_sin`` passes RoPE's tables computed once per model
    step (else the module computes them); ``reduce`` sums the tensor-parallel ranks' outputs; ``padding`` (a
    left-padded batch) hides padding keys and gives each row its own positions.
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
        rope: RotaryEmbedding | None = None,
        qk_norm: bool = False,
        qk_norm_span: str = "head",
        qk_norm_type: str = "rmsnorm",
        qkv_clip: float | None = None,
        output_gate: bool = False,
        key_scale: float = 1.0,
        norm_eps: float = 1e-5,
        norm_offset: float = 0.0,
        window: int | None = None,
        mask_window: int | None = None,
        scale: float | None = None,
        softcap: float | None = None,
        alibi_slopes: torch.Tensor | None = None,
        sinks: bool = False,
        softplus_gate: str | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if alibi_slopes is not None and (rope is not None or window is not None or softcap is not None):
            raise ValueError("ALiBi attention is built without RoPE, a window or a soft cap")
        self.alibi_slopes = alibi_slopes
        """This module's heads' ALiBi slopes (n_h,), a plain tensor (no weight, nothing in the state dict), or None."""
        if n_kv_heads < 1 or n_kv_heads > n_heads or n_heads % n_kv_heads:
            raise ValueError(f"n_heads ({n_heads}) must be divisible by n_kv_heads ({n_kv_heads}), 1 <= n_kv <= n_h")
        self.d_model, self.n_heads, self.n_kv_heads, self.head_dim = d_model, n_heads, n_kv_heads, head_dim
        self.q_per_kv = n_heads // n_kv_heads
        self.rope, self.window = rope, window
        self.mask_window = window if window is not None else mask_window  # what the mask windows (the cache: window)
        self.scale, self.softcap = scale, softcap
        factory = {"dtype": dtype, "device": device}
        self.output_gate = output_gate
        q_width = n_heads * head_dim * (2 if output_gate else 1)  # each head's query, then its gate
        self.q_proj = nn.Linear(d_model, q_width, bias=bias, **factory)
        self.k_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=bias, **factory)
        self.v_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=bias, **factory)
        self.o_proj = nn.Linear(n_heads * head_dim, d_model, bias=o_bias, **factory)
        if qk_norm_span not in ("head", "projection"):
            raise ValueError(f"qk_norm_span is head or projection, not {qk_norm_span!r}")
        if qk_norm and qk_norm_type == "layernorm":  # Persimmon: per-head LayerNorms with bias
            self.q_norm = nn.LayerNorm(head_dim, eps=norm_eps, **factory)
            self.k_norm = nn.LayerNorm(head_dim, eps=norm_eps, **factory)
        elif qk_norm:
            whole = qk_norm_span == "projection"
            self.q_norm = RMSNorm(n_heads * head_dim if whole else head_dim, norm_eps, offset=norm_offset, **factory)
            self.k_norm = RMSNorm(n_kv_heads * head_dim if whole else head_dim, norm_eps, offset=norm_offset, **factory)
        self.qk_norm = qk_norm
        self.qk_norm_whole = qk_norm and qk_norm_span == "projection"
        self.qkv_clip = qkv_clip
        self.key_scale = key_scale
        if sinks:  # gpt-oss: one sink logit per (local) query head, see ``mha_cli.nn.sinks``
            self.sinks = nn.Parameter(torch.zeros(n_heads, **factory))
        if softplus_gate not in (None, "head", "element"):
            raise ValueError(f"softplus_gate is head or element, not {softplus_gate!r}")
        self.gate_per_head = softplus_gate == "head"
        if softplus_gate is not None:  # Laguna: softplus(g_proj(x)) scales the output, per head or per element
            gate_width = n_heads if self.gate_per_head else n_heads * head_dim
            self.g_proj = nn.Linear(d_model, gate_width, bias=False, **factory)

    def _queries_and_gate(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """q_proj's queries (b, s, n_h * h_d) and, with ``output_gate``, the gate (b, s, n_h * h_d), else None."""
        q = self.q_proj(x)  # (b, s, n_h * h_d), or (b, s, n_h * 2 h_d) with the gate
        if not self.output_gate:
            return q, None
        b, s = x.shape[:2]
        q, gate = q.view(b, s, self.n_heads, 2 * self.head_dim).chunk(2, dim=-1)  # (b, s, n_h, h_d) each
        return q.reshape(b, s, -1), gate.reshape(b, s, -1)  # (b, s, n_h * h_d) each

    def _gated(self, out: torch.Tensor, gate: torch.Tensor | None) -> torch.Tensor:
        """The combined heads (b, s, n_h * h_d), times sigmoid(gate) with an output gate."""
        return out if gate is None else out * torch.sigmoid(gate)

    def _project(
        self, x: torch.Tensor, start_pos: int = 0, cos_sin: CosSin | None = None, padding: Padding | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """q, k (normed and rotated as configured) and v for the positions [start_pos, start_pos + s), and the
        output gate (b, s, n_h * h_d) or None."""
        (q, gate), k = self._queries_and_gate(x), self.k_proj(x)  # (b, s, n_h * h_d), (b, s, n_kv * h_d)
        if self.key_scale != 1.0:
            k = k * self.key_scale  # Falcon-H1's key multiplier
        if self.qk_norm_whole:
            q, k = self.q_norm(q), self.k_norm(k)  # over the whole projection
        q = split_heads(q, self.n_heads)  # (b, n_h, s, h_d)
        k = split_heads(k, self.n_kv_heads)  # (b, n_kv, s, h_d)
        v = split_heads(self.v_proj(x), self.n_kv_heads)  # (b, n_kv, s, h_d)
        if self.qk_norm and not self.qk_norm_whole:
            q, k = self.q_norm(q), self.k_norm(k)  # per head, over h_d
        if self.qkv_clip is not None:  # OLMoE's clip_qkv
            q, k, v = (t.clamp(-self.qkv_clip, self.qkv_clip) for t in (q, k, v))
        if self.rope is not None:
            if cos_sin is None:
                positions = (
                    torch.arange(start_pos, start_pos + x.shape[1], device=x.device)  # (s,)
                    if padding is None
                    else padding.positions  # (b, s)
                )
                cos_sin = self.rope.cos_sin(positions)
            if self.rope.rope.interleaved:  # pairs (x0, x1), (x2, x3)...: regrouped as halves, as MLA does
                q, k = as_halves(q, self.rope.width), as_halves(k, self.rope.width)
            q, k = rotate(q, *cos_sin), rotate(k, *cos_sin)  # (b, n_h, s, h_d), (b, n_kv, s, h_d)
        return q, k, v, gate

    def forward(
        self,
        x: torch.Tensor,
        cache: KVCache | SlidingWindowCache | None = None,
        start_pos: int = 0,
        *,
        cos_sin: CosSin | None = None,
        reduce: Reduce | None = None,
        padding: Padding | None = None,
    ) -> torch.Tensor:
        s = x.shape[1]
        q, k, v, gate = self._project(x, start_pos, cos_sin, padding)  # (b, n_h, s, h_d), (b, n_kv, s, h_d) x 2
        first_key = 0
        if isinstance(cache, SlidingWindowCache):
            k, v, first_key = cache.update(start_pos, k, v)  # (b, n_kv, t, h_d) each, keys from first_key
        elif cache is not None:
            k, v = cache.update(start_pos, k, v)  # (b, n_kv, t, h_d) each, t = start_pos + s
        elif start_pos:
            raise ValueError("start_pos > 0 needs a cache holding the earlier positions")
        k, v = k.to(q.dtype), v.to(q.dtype)  # no-op when the cache has the module's dtype
        mask = self._mask(start_pos, s, first_key, k.shape[2])  # (s, t) or None
        if padding is not None:
            mask = padding.visible(mask, start_pos, s, first_key, k.shape[2])  # (b, s, t)
        if self.alibi_slopes is not None:
            if mask is None:
                mask = causal_mask(s, k.shape[2], q.device)  # (s, t)
            out = alibi_attention(q, k, v, self.alibi_slopes, scale=self.scale, mask=mask)  # (b, n_h, s, h_d)
        elif hasattr(self, "sinks"):
            out = sink_attention(q, k, v, self.sinks, scale=self.scale, mask=mask, softcap=self.softcap)
        else:
            out = grouped_attention(q, k, v, scale=self.scale, mask=mask, softcap=self.softcap)  # (b, n_h, s, h_d)
        out = self._gated(combine_heads(out), gate)  # (b, s, n_h * h_d)
        if hasattr(self, "g_proj"):
            out = self._softplus_gated(out, x)
        return row_parallel(self.o_proj, out, reduce)  # (b, s, d_model)

    def _softplus_gated(self, out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Laguna's output gate: out (b, s, n_h * h_d) times softplus(g_proj(x)), per head or per element."""
        gate = torch.nn.functional.softplus(self.g_proj(x).float()).to(out.dtype)  # (b, s, n_h) or (b, s, n_h * h_d)
        if not self.gate_per_head:
            return out * gate
        heads = out.unflatten(-1, (self.n_heads, self.head_dim))  # (b, s, n_h, h_d)
        return (heads * gate.unsqueeze(-1)).flatten(-2)  # (b, s, n_h * h_d)

    def _mask(self, start_pos: int, s: int, first_key: int, t: int) -> torch.Tensor | None:
        """The window mask (s, t) when some causal key falls outside the window, else ``None`` (plain causal)."""
        if self.mask_window is None or start_pos + s - first_key <= self.mask_window:
            return None  # the keys span at most one window: causal masking alone is exact
        return window_mask(start_pos, s, first_key, t, self.mask_window, self.q_proj.weight.device)

    def forward_with_weights(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reference path (explicit softmax, K/V repeated, no window): (out (b, s, d_model), weights (b, n_h, s, s))."""
        if self.alibi_slopes is not None or hasattr(self, "sinks"):
            raise ValueError("the reference path has no ALiBi biases or attention sinks: use forward")
        q, k, v, gate = self._project(x)  # (b, n_h, s, h_d), (b, n_kv, s, h_d) x 2
        out, weights = reference_attention(q, k, v, scale=self.scale, softcap=self.softcap)  # (b, n_h, s, h_d), ...
        out = self._gated(combine_heads(out), gate)  # (b, s, n_h * h_d)
        if hasattr(self, "g_proj"):
            out = self._softplus_gated(out, x)
        return self.o_proj(out), weights  # (b, s, d_model), (b, n_h, s, s)

    def new_cache(
        self,
        batch: int,
        max_seq: int,
        dtype: torch.dtype | str | None = None,
        device: torch.device | str | None = None,
    ) -> KVCache | SlidingWindowCache:
        """A pre-allocated cache for this module (default dtype and device: the module's).

        A sliding-window layer gets a ring of min(max_seq, window) slots, any other layer max_seq.
        """
        weight = self.q_proj.weight
        factory = {
            "dtype": weight.dtype if dtype is None else dtype,
            "device": weight.device if device is None else device,
        }
        if self.window is not None:
            return SlidingWindowCache(batch, max_seq, self.n_kv_heads, self.head_dim, self.window, **factory)
        return KVCache(batch, max_seq, self.n_kv_heads, self.head_dim, **factory)
