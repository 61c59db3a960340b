"""Multi-head latent attention (DeepSeek-V2/V3 style), with a naive and an absorbed path.

K and V are compressed to one shared latent c (kv_lora_rank values per token); each head's key and
value are decompressed from it by ``kv_b_proj`` = [W_uk; W_uv]. A decoupled RoPE key of
``qk_rope_head_dim`` values (shared by all heads) carries position, since RoPE does not commute with
the absorption. A head's score is q_nope . k_nope + q_rope . k_rope.

- naive: decompress per-head K (nope + rope) and V and cache them (the full MHA price per token).
- absorbed: fold W_uk into the query (q_nope W_uk: a query in latent space) and W_uv after the
  attention, so every head attends to the cached [c ; k_rope] directly: MQA with one "KV head" of
  width kv_lora_rank + rope (the dispatcher in ``mha_cli.nn.sdpa`` folds all heads into the query
  axis). The cache (``LatentCache``) holds kv_lora_rank + rope values per token.

RoPE follows the spec's ``RopeSpec`` (YaRN frequencies and their attention factor on cos and sin),
over the rope part only (``rotate=False``: never rotated, Kimi-Linear's NoPE MLA, whose softmax scale is then
1/sqrt(nope + rope) whatever the RoPE scaling). DeepSeek rotates interleaved pairs (x0, x1), (x2, x3), ... (``rope_interleave``,
transformers' DeepseekV3 default, and DeepSeek-V2 always); the rotate-half layout pairs x_i with
x_(i + p/2). With YaRN, DeepSeek also multiplies the softmax scale 1/sqrt(nope + rope) by
mscale(factor, mscale_all_dim)^2, mscale(f, m) = 0.1 m ln f + 1.

Projection names follow DeepSeek's Hugging Face checkpoints (``q_proj`` or ``q_a_proj`` /
``q_a_layernorm`` / ``q_b_proj``, ``kv_a_proj_with_mqa``, ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``).
Tensor parallelism: the latent projections and their norms are replicated (every rank holds the whole
latent and its cache); ``q_b_proj`` / ``q_proj`` and ``kv_b_proj`` hold this rank's heads; ``o_proj`` is
row-parallel (its bias added once, after the reduce).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import MLAIndexerSpec, ModelSpec, RopeScaling, RopeSpec
from mha_cli.nn.heads import combine_heads, split_heads
from mha_cli.nn.indexer import LightningIndexer
from mha_cli.nn.kv_cache import KVCache, LatentCache
from mha_cli.nn.norms import RMSNorm
from mha_cli.nn.padding import Padding
from mha_cli.nn.rope import RotaryEmbedding, rotate
from mha_cli.nn.row_parallel import Reduce, row_parallel
from mha_cli.nn.sdpa import grouped_attention, reference_attention

MlaMode = Literal["absorbed", "naive"]
MLA_MODES: tuple[MlaMode, ...] = ("absorbed", "naive")

LATENT_NORM_EPS = 1e-6
"""Epsilon of q_a_layernorm and kv_a_layernorm (DeepSeek's, whatever the model's rms_norm_eps)."""


def yarn_softmax_mscale(scaling: RopeScaling | None) -> float:
    """DeepSeek's factor on the softmax scale: mscale(factor, mscale_all_dim)^2 with YaRN, else 1."""
    if scaling is None or scaling.type != "yarn" or not scaling.mscale_all_dim or scaling.factor <= 1:
        return 1.0
    mscale = 0.1 * scaling.mscale_all_dim * math.log(scaling.factor) + 1.0
    return mscale * mscale


class MLAttention(nn.Module):
    """Causal MLA; ``forward(x, cache=None, start_pos=0, reduce=None)`` as ``Attention``.

    ``n_heads`` is this rank's heads; ``mode`` may be changed later (the cache must match it).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        kv_lora_rank: int,
        qk_nope_head_dim: int,
        qk_rope_head_dim: int,
        v_head_dim: int,
        q_lora_rank: int | None = None,
        *,
        mode: MlaMode = "absorbed",
        rope: RopeSpec | None = None,
        rope_interleave: bool = True,
        rotate: bool = True,
        bias: bool = False,
        o_bias: bool = False,
        indexer: MLAIndexerSpec | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if rotate and qk_rope_head_dim % 2:
            raise BadInputError(
                f"attention.mla.qk_rope_head_dim {qk_rope_head_dim}: RoPE turns values in pairs, so it must be even"
            )
        self.mode = _check_mode(mode)
        self.d_model, self.n_heads, self.kv_lora_rank = d_model, n_heads, kv_lora_rank
        self.n_kv_heads = n_heads  # K/V decompressed per head (the spec's view); the absorbed cache is one latent
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.q_lora_rank, self.rope_interleave = q_lora_rank, rope_interleave
        rope = RopeSpec() if rope is None else rope
        self.rotary = RotaryEmbedding(rope, qk_rope_head_dim) if qk_rope_head_dim and rotate else None
        self.scale = self.qk_head_dim**-0.5 * (yarn_softmax_mscale(rope.scaling) if rotate else 1.0)
        factory = {"dtype": dtype, "device": device}
        if q_lora_rank is None:
            self.q_proj = nn.Linear(d_model, n_heads * self.qk_head_dim, bias=False, **factory)
        else:
            self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=bias, **factory)
            self.q_a_layernorm = RMSNorm(q_lora_rank, LATENT_NORM_EPS, **factory)
            self.q_b_proj = nn.Linear(q_lora_rank, n_heads * self.qk_head_dim, bias=False, **factory)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=bias, **factory)
        self.kv_a_layernorm = RMSNorm(kv_lora_rank, LATENT_NORM_EPS, **factory)
        self.kv_b_proj = nn.Linear(kv_lora_rank, n_heads * (qk_nope_head_dim + v_head_dim), bias=False, **factory)
        self.o_proj = nn.Linear(n_heads * v_head_dim, d_model, bias=o_bias, **factory)
        if indexer is not None and indexer.index_n_heads is not None:  # DeepSeek-V3.2: weights only, see nn.indexer
            if q_lora_rank is None:
                raise ValueError("the lightning indexer reads the q latent: it needs q_lora_rank")
            self.indexer = LightningIndexer(
                d_model, q_lora_rank, indexer.index_n_heads, indexer.index_head_dim, **factory
            )

    # Projections shared by both paths ----------------------------------------------------------

    def _rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotate x (..., s, p) by its positions (s,), in the model's pair layout; returns (..., s, p)."""
        if self.rotary is None:
            return x
        if self.rope_interleave:  # pairs (x0, x1), (x2, x3)...: regroup as halves, then rotate-half
            x = torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)  # (..., s, p)
        cos, sin = self.rotary.cos_sin(positions)  # (s, p) each, YaRN's attention factor included
        return rotate(x, cos, sin)  # (..., s, p)

    def _queries(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(q_nope (b, n_h, s, nope), q_rope (b, n_h, s, p)), RoPE applied."""
        direct = self.q_lora_rank is None
        q = self.q_proj(x) if direct else self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))  # (b, s, n_h * qk_h_d)
        q = split_heads(q, self.n_heads)  # (b, n_h, s, qk_h_d)
        q_nope, q_rope = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        return q_nope, self._rope(q_rope, positions)  # (b, n_h, s, nope), (b, n_h, s, p)

    def _latent(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(latent (b, s, r) normalised, k_rope (b, s, p) RoPE applied): what the absorbed cache holds."""
        compressed = self.kv_a_proj_with_mqa(x)  # (b, s, r + p)
        latent, k_rope = compressed.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        return self.kv_a_layernorm(latent), self._rope(k_rope, positions)  # (b, s, r), (b, s, p)

    def _naive_qkv(
        self, q_nope: torch.Tensor, q_rope: torch.Tensor, latent: torch.Tensor, k_rope: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-head q, k (b, n_h, s, nope + p) and v (b, n_h, s, v_h_d), decompressed from the latent."""
        b, s, _ = latent.shape
        kv = split_heads(self.kv_b_proj(latent), self.n_heads)  # (b, n_h, s, nope + v_h_d)
        k_nope, v = kv.split([self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k_rope = k_rope[:, None].expand(b, self.n_heads, s, self.qk_rope_head_dim)  # (b, n_h, s, p)
        q = torch.cat([q_nope, q_rope], dim=-1)  # (b, n_h, s, nope + p)
        k = torch.cat([k_nope, k_rope], dim=-1)  # (b, n_h, s, nope + p)
        return q, k, v

    # Forward paths -----------------------------------------------------------------------------

    def forward(
        self,
        x: torch.Tensor,
        cache: KVCache | LatentCache | None = None,
        start_pos: int = 0,
        reduce: Reduce | None = None,
        padding: Padding | None = None,
    ) -> torch.Tensor:
        if cache is None and start_pos:
            raise ValueError("start_pos > 0 needs a cache holding the earlier positions")
        s = x.shape[1]
        positions = (
            torch.arange(start_pos, start_pos + s, device=x.device) if padding is None else padding.positions
        )  # (s,), or (b, s) for a padded batch
        q_nope, q_rope = self._queries(x, positions)  # (b, n_h, s, nope), (b, n_h, s, p)
        latent, k_rope = self._latent(x, positions)  # (b, s, r), (b, s, p)
        mode = _check_mode(self.mode)
        _check_cache(cache, mode)
        if mode == "naive":
            out = self._naive(q_nope, q_rope, latent, k_rope, cache, start_pos, padding)  # (b, n_h, s, v_h_d)
        else:
            out = self._absorbed(q_nope, q_rope, latent, k_rope, cache, start_pos, padding)  # (b, n_h, s, v_h_d)
        return row_parallel(self.o_proj, combine_heads(out), reduce)  # (b, s, d_model)

    @staticmethod
    def _padding_mask(padding: Padding | None, start_pos: int, s: int, t: int) -> torch.Tensor | None:
        """(b, s, t) for a padded batch (padding keys hidden), else None (plain causal)."""
        return None if padding is None else padding.visible(None, start_pos, s, 0, t)

    def _naive(self, q_nope, q_rope, latent, k_rope, cache, start_pos, padding) -> torch.Tensor:  # type: ignore[no-untyped-def]
        q, k, v = self._naive_qkv(q_nope, q_rope, latent, k_rope)  # (b, n_h, s, qk_h_d) x 2, (b, n_h, s, v_h_d)
        if cache is not None:
            k, v = cache.update(start_pos, k, v)  # (b, n_h, t, qk_h_d), (b, n_h, t, v_h_d)
            k, v = k.to(q.dtype), v.to(q.dtype)
        mask = self._padding_mask(padding, start_pos, q.shape[2], k.shape[2])
        return grouped_attention(q, k, v, scale=self.scale, mask=mask)  # (b, n_h, s, v_h_d)

    def _absorbed(self, q_nope, q_rope, latent, k_rope, cache, start_pos, padding) -> torch.Tensor:  # type: ignore[no-untyped-def]
        r = self.kv_lora_rank
        w_kv_b = self.kv_b_proj.weight.view(self.n_heads, self.qk_nope_head_dim + self.v_head_dim, r)
        w_uk, w_uv = w_kv_b.split([self.qk_nope_head_dim, self.v_head_dim], dim=1)  # (n_h, nope, r), (n_h, v_h_d, r)
        q_latent = torch.einsum("bhsn,hnr->bhsr", q_nope, w_uk)  # (b, n_h, s, r)
        q = torch.cat([q_latent, q_rope], dim=-1)  # (b, n_h, s, r + p)
        if cache is not None:
            kv = cache.update(start_pos, latent, k_rope).to(q.dtype)  # (b, t, r + p)
        else:
            kv = torch.cat([latent, k_rope], dim=-1)  # (b, t, r + p), t = s
        k = kv[:, None]  # (b, 1, t, r + p): one shared "KV head"
        # The latent is also the value. Passing all of [c ; k_rope] as V (and dropping the rope part of
        # the output) keeps K and V the same width, which the fused SDPA kernels need; the math
        # backend would otherwise materialise the scores. Costs p / r extra work in the weighted sum.
        mask = self._padding_mask(padding, start_pos, q.shape[2], k.shape[2])
        context = grouped_attention(q, k, k, scale=self.scale, mask=mask)[..., :r]  # (b, n_h, s, r)
        return torch.einsum("bhsr,hvr->bhsv", context, w_uv)  # (b, n_h, s, v_h_d)

    def forward_with_weights(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reference path (naive, explicit softmax, one rank): (out (b, s, d_model), weights (b, n_h, s, s))."""
        positions = torch.arange(x.shape[1], device=x.device)  # (s,)
        q_nope, q_rope = self._queries(x, positions)  # (b, n_h, s, nope), (b, n_h, s, p)
        latent, k_rope = self._latent(x, positions)  # (b, s, r), (b, s, p)
        q, k, v = self._naive_qkv(q_nope, q_rope, latent, k_rope)  # (b, n_h, s, *)
        out, weights = reference_attention(q, k, v, scale=self.scale)  # (b, n_h, s, v_h_d), (b, n_h, s, s)
        return self.o_proj(combine_heads(out)), weights

    def new_cache(
        self,
        batch: int,
        max_seq: int,
        dtype: torch.dtype | str | None = None,
        device: torch.device | str | None = None,
    ) -> KVCache | LatentCache:
        """The cache the current ``mode`` uses: ``LatentCache`` (absorbed) or per-head ``KVCache`` (naive)."""
        weight = self.kv_b_proj.weight
        dtype = weight.dtype if dtype is None else dtype
        device = weight.device if device is None else device
        if _check_mode(self.mode) == "naive":
            return KVCache(batch, max_seq, self.n_heads, self.qk_head_dim, self.v_head_dim, dtype=dtype, device=device)
        return LatentCache(batch, max_seq, self.kv_lora_rank, self.qk_rope_head_dim, dtype=dtype, device=device)


def build_mla(
    spec: ModelSpec,
    *,
    mla_mode: MlaMode = "absorbed",
    rotate: bool = True,
    tp_rank: int = 0,
    tp_size: int = 1,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> MLAttention:
    """The MLA layer of an MLA ``spec``, rank ``tp_rank``'s heads (contiguous block of n_heads / tp); ``rotate``
    False: no RoPE on its rope part (NoPE)."""
    if spec.attention.mla is None:
        raise ValueError(f"{spec.name} has no mla block")
    if spec.attention.n_heads % tp_size:
        raise ValueError(f"n_heads ({spec.attention.n_heads}) must be divisible by tp ({tp_size}) to split MLA heads")
    if not 0 <= tp_rank < tp_size:
        raise ValueError(f"tp_rank ({tp_rank}) must be in [0, {tp_size})")
    mla = spec.attention.mla
    return MLAttention(
        spec.d_model,
        spec.attention.n_heads // tp_size,
        mla.kv_lora_rank,
        mla.qk_nope_head_dim,
        mla.qk_rope_head_dim,
        mla.v_head_dim,
        mla.q_lora_rank,
        mode=mla_mode,
        rope=spec.rotary or RopeSpec(),
        rope_interleave=mla.rope_interleave,
        rotate=rotate,
        bias=spec.attention.qkv_bias,
        o_bias=spec.attention.o_bias,
        indexer=mla.indexer,
        dtype=dtype,
        device=device,
    )


def _check_mode(mode: str) -> MlaMode:
    if mode not in MLA_MODES:
        raise ValueError(f"MLA mode {mode!r} is unknown: use absorbed or naive")
    return mode  # type: ignore[return-value]


def _check_cache(cache: KVCache | LatentCache | None, mode: MlaMode) -> None:
    wanted = LatentCache if mode == "absorbed" else KVCache
    if cache is not None and not isinstance(cache, wanted):
        raise TypeError(f"MLA mode {mode} needs a {wanted.__name__}, got {type(cache).__name__}: use new_cache()")
