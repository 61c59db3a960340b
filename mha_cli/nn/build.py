"""Build the attention module a ``ModelSpec`` describes (one layer)."""

from __future__ import annotations

import torch

from mha_cli.core.schemas import MlaCacheMode, ModelSpec
from mha_cli.nn.attention import Attention
from mha_cli.nn.mla import MLAttention, build_mla
from mha_cli.nn.rope import RotaryEmbedding


def build_attention(
    model: ModelSpec,
    *,
    mla_mode: MlaCacheMode = "absorbed",
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    with_rope: bool = False,
) -> Attention | MLAttention:
    """``MLAttention`` for an MLA spec (in ``mla_mode``), else ``Attention`` with the spec's KV heads.

    Uses d_model, n_heads, n_kv_heads, head_dim, qkv_bias, o_bias and the mla block; sliding windows
    and per-head q/k norms are not modelled (they do not change the cache of a full-length layer). MLA's layer
    always rotates its decoupled key by the spec's RoPE; ``with_rope``: ``Attention`` rotates its whole heads by it
    too (``mha probe``, so every variant sees positions alike), else none (no size depends on it).
    """
    if model.attention.mla is not None:
        return build_mla(model, mla_mode=mla_mode, dtype=dtype, device=device)  # with the spec's RoPE
    rotary = model.rotary if with_rope else None
    return Attention(
        model.d_model,
        model.attention.n_heads,
        model.attention.n_kv_heads,
        model.attention.head_dim,
        bias=model.attention.qkv_bias,
        o_bias=model.attention.o_bias,
        rope=None if rotary is None else RotaryEmbedding(rotary, model.attention.head_dim),
        dtype=dtype,
        device=device,
    )
