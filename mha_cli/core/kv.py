"""KV-cache arithmetic: bytes per token per layer, per rank, per sequence, per batch.

Per token per layer, in values (bytes follow from the storage format, scales included):

- MHA / GQA / MQA: K and V, one vector of ``head_dim`` per KV head: 2 * n_kv_heads * head_dim.
- MLA, absorbed (the default, DeepSeek's inference path): one shared latent plus the RoPE key,
  kv_lora_rank + qk_rope_head_dim, no factor 2. DeepSeek-V3 in bf16: 61 * 576 * 2 = 70,272 B.
- MLA, naive: the decompressed per-head keys (nope + rope) and values, the full MHA price.

Sliding-window layers hold min(tokens, window) tokens; global layers hold every token. A paged
cache rounds each layer's tokens up to whole blocks. Under tensor parallelism each rank holds
n_kv_heads / tp heads, at least one (replicated when tp > n_kv_heads); an MLA latent is not
sharded, every rank holds all of it.
"""

from __future__ import annotations

from mha_cli.core.dtypes import MLA_FP8_SCALE_GROUP, storage_format
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, MlaCacheMode, ModelSpec


def vector_bytes_per_kv_head(model: ModelSpec, kv_dtype: str) -> int:
    """Bytes one KV head caches per token: its key and value vectors (standard attention)."""
    fmt = storage_format(kv_dtype)
    return 2 * fmt.vector_bytes(model.dim_per_head)


def mla_latent_bytes(model: ModelSpec, kv_dtype: str) -> int:
    """Bytes of one token's absorbed MLA cache entry in one layer (latent + RoPE key)."""
    assert model.mla is not None
    fmt = storage_format(kv_dtype)
    if fmt.name == "fp8":
        # FlashMLA fp8 layout: fp8 latent, one fp32 scale per 128 latent values, bf16 RoPE key.
        latent = model.mla.kv_lora_rank
        scales = 4 * -(-latent // MLA_FP8_SCALE_GROUP)
        return latent + scales + 2 * model.mla.qk_rope_head_dim
    return fmt.vector_bytes(model.mla.latent_dim)


def mla_naive_head_bytes(model: ModelSpec, kv_dtype: str) -> int:
    """Bytes one head caches per token when MLA's K/V are decompressed (naive mode)."""
    assert model.mla is not None
    fmt = storage_format(kv_dtype)
    return fmt.vector_bytes(model.mla.qk_head_dim) + fmt.vector_bytes(model.mla.v_head_dim)


def tp_split_problem(n_heads: int, n_kv_heads: int, tp: int) -> str | None:
    """Why ``tp`` ranks cannot split these heads (rule MHA024), or ``None`` when they can: the query heads
    must divide evenly, and the KV heads divide evenly (tp <= n_kv_heads) or replicate evenly (tp > n_kv_heads)."""
    if n_heads % tp:
        return f"n_heads ({n_heads}) must be divisible by tp ({tp}): pick a tp that divides it"
    if tp <= n_kv_heads and n_kv_heads % tp:
        return f"n_kv_heads ({n_kv_heads}) must be divisible by tp ({tp}): pick a tp that divides it"
    if tp > n_kv_heads and tp % n_kv_heads:
        return f"tp ({tp}) must be a multiple of n_kv_heads ({n_kv_heads}) to replicate KV heads evenly"
    return None


def tp_splits_evenly(n_heads: int, n_kv_heads: int, tp: int) -> bool:
    """MHA024: whether ``tp`` ranks split ``n_heads`` query and ``n_kv_heads`` KV heads evenly."""
    return tp_split_problem(n_heads, n_kv_heads, tp) is None


def kv_heads_per_rank(model: ModelSpec, tp: int, mla_cache: MlaCacheMode = "absorbed") -> int:
    """KV heads one tensor-parallel rank holds; for absorbed MLA, 1 (the whole latent).

    Raises ``BadInputError`` when ``tp`` does not split the heads (``tp_split_problem``).
    """
    problem = tp_split_problem(model.n_heads, model.kv_heads, tp)
    if problem is not None:
        raise BadInputError(problem)
    if model.mla is not None and mla_cache == "absorbed":
        return 1
    return max(1, model.kv_heads // tp)


def bytes_per_token_per_layer(
    model: ModelSpec, kv_dtype: str, mla_cache: MlaCacheMode = "absorbed", *, tp: int = 1
) -> int:
    """Bytes one layer caches for one token on one rank (tp=1: the whole model's layer)."""
    heads = kv_heads_per_rank(model, tp, mla_cache)
    if model.mla is not None:
        if mla_cache == "absorbed":
            return mla_latent_bytes(model, kv_dtype)
        return heads * mla_naive_head_bytes(model, kv_dtype)
    return heads * vector_bytes_per_kv_head(model, kv_dtype)


def tokens_held(seq_len: int, window: int | None = None, block_size: int | None = None) -> int:
    """Tokens a layer keeps for one sequence: min(seq, window), rounded up to whole blocks."""
    held = seq_len if window is None else min(seq_len, window)
    if block_size:
        held = -(-held // block_size) * block_size
    return held


class KvFootprint(Record):
    """KV-cache sizes of one model under one deployment, every figure an exact integer of bytes."""

    kv_dtype: str
    mla_cache: MlaCacheMode | None
    """MLA only: which cache the numbers assume."""
    seq_len: int
    batch: int
    tp: int
    block_size: int | None
    kv_heads_per_rank: int
    bytes_per_token_per_layer: int
    """One layer, one token, the whole model (all ranks' heads once)."""
    bytes_per_token: int
    """All layers, one token, the whole model, every layer holding the token."""
    bytes_per_token_per_rank: int
    """All layers, one token, what one rank holds."""
    n_global_layers: int
    n_local_layers: int
    sliding_window: int | None
    tokens_held_global: int
    """Tokens a global layer holds per sequence (paging applied)."""
    tokens_held_local: int | None
    """Tokens a sliding-window layer holds per sequence (paging applied)."""
    bytes_per_sequence: int
    """One sequence of seq_len tokens, the whole model: windows and paging applied."""
    bytes_per_sequence_per_rank: int
    total_bytes: int
    """seq_len x batch on one rank: windows, paging and per-rank division applied."""
    total_bytes_all_ranks: int
    """total_bytes summed over the tp ranks (replicated heads counted on every rank)."""


def kv_footprint(
    model: ModelSpec,
    *,
    seq_len: int,
    batch: int = 1,
    kv_dtype: str = "bf16",
    tp: int = 1,
    block_size: int | None = None,
    mla_cache: MlaCacheMode = "absorbed",
) -> KvFootprint:
    """Every KV-cache figure for ``model`` at ``seq_len`` x ``batch``."""
    per_layer = bytes_per_token_per_layer(model, kv_dtype, mla_cache)
    per_layer_rank = bytes_per_token_per_layer(model, kv_dtype, mla_cache, tp=tp)
    held_global = tokens_held(seq_len, None, block_size)
    held_local = tokens_held(seq_len, model.sliding_window, block_size) if model.sliding_window else None
    n_local = model.n_local_layers
    n_global = model.n_layers - n_local
    tokens_all_layers = n_global * held_global + n_local * (held_local or 0)
    per_sequence = tokens_all_layers * per_layer
    per_sequence_rank = tokens_all_layers * per_layer_rank
    return KvFootprint(
        kv_dtype=storage_format(kv_dtype).name,
        mla_cache=mla_cache if model.mla is not None else None,
        seq_len=seq_len,
        batch=batch,
        tp=tp,
        block_size=block_size,
        kv_heads_per_rank=kv_heads_per_rank(model, tp, mla_cache),
        bytes_per_token_per_layer=per_layer,
        bytes_per_token=model.n_layers * per_layer,
        bytes_per_token_per_rank=model.n_layers * per_layer_rank,
        n_global_layers=n_global,
        n_local_layers=n_local,
        sliding_window=model.sliding_window,
        tokens_held_global=held_global,
        tokens_held_local=held_local,
        bytes_per_sequence=per_sequence,
        bytes_per_sequence_per_rank=per_sequence_rank,
        total_bytes=batch * per_sequence_rank,
        total_bytes_all_ranks=batch * per_sequence_rank * tp,
    )


def footprint_for(model: ModelSpec, deployment: DeploymentSpec, tp: int) -> KvFootprint:
    """``kv_footprint`` of ``model`` under ``deployment``'s seq_len, batch, KV dtype, paging and MLA cache
    mode, over ``tp`` ranks (the caller resolves tp: the deployment's may be unset or may not split the heads)."""
    return kv_footprint(
        model, seq_len=deployment.seq_len, batch=deployment.batch, kv_dtype=deployment.kv_dtype, tp=tp,
        block_size=deployment.block_size, mla_cache=deployment.mla_cache,
    )  # fmt: skip
