"""The RoPE cos/sin cache of vLLM and SGLang: a buffer the model holds beside its weights, on every rank.

vLLM builds one ``RotaryEmbedding`` per distinct RoPE and shares it across the layers (``get_rope`` keeps them in
``_ROPE_DICT``, keyed by head size, rotary dim, positions, base, scaling and dtype). Each registers a buffer
``cos_sin_cache`` = cat(cos, sin) of shape (positions, rotary_dim), computed in fp32 and cast to the model's dtype
(``model_executor/layers/rotary_embedding/base.py`` ``RotaryEmbedding.__init__``, the same in 0.10.1.1 and 0.32).
It is loaded with the model, so "Model loading took X GiB" includes it, and it is replicated on every
tensor-parallel rank. The positions, per scaling type (``rotary_embedding/__init__.py`` ``get_rope``):

- none, ``llama3``: max_position_embeddings (``Llama3RotaryEmbedding`` keeps the base class's table);
- ``linear``: max_position_embeddings x factor (``LinearScalingRotaryEmbedding._compute_cos_sin_cache``);
- ``yarn``: original_max_position_embeddings x factor (``YaRNScalingRotaryEmbedding``, and DeepSeek's scaling).

rotary_dim: head_dim x partial_rotary_factor, an MLA model's qk_rope_head_dim. A model whose local layers rotate
by another RoPE (Gemma 3: theta 10,000 unscaled) holds a second table.

SGLang (0.4.9 and 0.5.3, ``srt/layers/rotary_embedding.py``) builds the same tables with the same positions and shares
them the same way (``_ROPE_DICT``), but on CUDA keeps them in fp32 ("cache needs to be in FP32 for numerical
stability": the cast to the model's dtype is skipped), 4 B a value; its pool is sized from the memory free after the
model is loaded, so the tables come out of it as the weights do. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.schemas import ModelSpec, RopeSpec

VLLM_BYTES_PER_VALUE = 2
"""vLLM casts the table to the model's dtype: bf16/fp16, 2 B (``cache.to(dtype)``)."""
SGLANG_BYTES_PER_VALUE = 4
"""SGLang keeps the table in fp32 on CUDA."""


def _positions(rope: RopeSpec, max_position: int) -> int:
    """Rows of the table: the positions vLLM precomputes for this RoPE."""
    scaling = rope.scaling
    if scaling is None or scaling.type == "llama3":
        return max_position
    if scaling.type == "linear":
        return int(max_position * scaling.factor)
    assert scaling.original_max_position_embeddings is not None  # yarn needs it (RopeScaling's validator)
    return int(scaling.original_max_position_embeddings * scaling.factor)


def _rotary_dim(model: ModelSpec, rope: RopeSpec) -> int:
    if model.attention.mla is not None:
        return model.attention.mla.qk_rope_head_dim
    return int(model.attention.head_dim * rope.partial_rotary_factor)


def rope_tables(model: ModelSpec) -> list[tuple[int, int]]:
    """(positions, rotary_dim) of each cos/sin table vLLM builds; empty without RoPE or a known context length."""
    rope = model.rotary
    if rope is None or model.context_length is None:
        return []
    distinct = (
        [rope]
        if model.attention.rope_local is None or model.attention.rope_local == rope
        else [rope, model.attention.rope_local]
    )
    return [(_positions(each, model.context_length), _rotary_dim(model, each)) for each in distinct]


def rope_cache_bytes(model: ModelSpec, bytes_per_value: int = VLLM_BYTES_PER_VALUE) -> int:
    """Bytes of the cos/sin tables on one rank (whatever tp): positions x rotary_dim x ``bytes_per_value``, summed
    (vLLM's 2 B by default; ``SGLANG_BYTES_PER_VALUE`` for SGLang's)."""
    return sum(positions * dim * bytes_per_value for positions, dim in rope_tables(model))


def rope_cache_how(model: ModelSpec, engine: str = "vLLM", bytes_per_value: int = VLLM_BYTES_PER_VALUE) -> str:
    """The budget line's explanation: each table's shape and the engine that holds it."""
    tables = rope_tables(model)
    if not tables:
        return "no RoPE table (learned positions, or the context length is unknown)"
    shapes = " + ".join(f"{positions:,} positions x {dim}" for positions, dim in tables)
    return f"{engine}'s rotary buffer cos_sin_cache, {shapes} x {bytes_per_value} B, on every rank"
