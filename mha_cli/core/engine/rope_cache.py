"""The RoPE cos/sin cache of vLLM and SGLang: a buffer the model holds beside its weights, on every rank.

vLLM builds one ``RotaryEmbedding`` per distinct RoPE and shares it across the layers (``get_rope`` keeps them in
``_ROPE_DICT``, keyed by head size, rotary dim, positions, base, scaling and dtype). Each registers a buffer
``cos_sin_cache`` = cat(cos, sin) of shape (positions, rotary_dim), computed in fp32 and cast to the model's dtype
(``model_executor/layers/rotary_embedding/base.py`` ``RotaryEmbedding.__init__``, the same in 0.10.1.1 and 0.32).
It is loaded with the model, so "Model loading took X GiB" includes it, and it is replicated on every
tensor-parallel rank. The positions, per scaling type (``rotary_embedding/__init__.py`` ``get_rope``):

- none, ``llama3``: max_position_embeddings (``Llama3RotaryEmbedding`` keeps the base class's table);
- ``linear``: max_position_embeddings x factor (``LinearScalingRotaryEmbedding._compute_cos_sin_cache``);
- ``yarn``: original_max_position_embeddings x factor (``YaRNScalingRotaryEmbedding``, and DeepSeek's scaling);
- ``dynamic``: max_position_embeddings (``DynamicNTKScalingRotaryEmbedding`` from 0.22.0; 0.21.0 held max x factor
  rows, not told apart: a few MiB). SGLang's (``rope_variant.py``) holds max x factor.

rotary_dim: head_dim x partial_rotary_factor, an MLA model's qk_rope_head_dim. A model whose local layers rotate
by another RoPE (Gemma 3: theta 10,000 unscaled) holds a second table.

Gemma 4 (``gemma4_text``) in vLLM: each layer calls ``get_rope`` with its own head width (``models/gemma4.py``
``Gemma4Attention``: ``global_head_dim`` on the full-attention layers, 512 in gemma-4-26B-A4B), and the full layers'
``proportional`` RoPE (Gemma 4's default, ``Gemma4TextConfig``'s ``default_rope_params``) builds a
``Gemma4RotaryEmbedding`` (``rotary_embedding/gemma4_rope.py``), which passes ``head_size`` as its rotary_dim: the
non-rotating dimensions are stored as cos 1 / sin 0, so its table is positions x the whole global head, not x
head_dim x partial_rotary_factor. Read in vLLM 0.19.1 and 0.29.0 (0.18.0 has no Gemma 4). gemma-4-26B-A4B:
262,144 x 256 + 262,144 x 512 values, 0.375 GiB in bf16 (0.156 GiB if priced at the sliding head's width x 0.25).
SGLang's Gemma 4 tables were not read: they keep the generic rule.

SGLang (0.4.9 and 0.5.3, ``srt/layers/rotary_embedding.py``) builds the same tables with the same positions (a
dynamic one: max x factor) and shares them the same way (``_ROPE_DICT``), but on CUDA keeps them in fp32 ("cache needs
to be in FP32 for numerical stability": the cast to the model's dtype is skipped), 4 B a value; its pool is sized from
the memory free after the model is loaded, so the tables come out of it as the weights do. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.schemas import ModelSpec, RopeSpec

VLLM_BYTES_PER_VALUE = 2
"""vLLM casts the table to the model's dtype: bf16/fp16, 2 B (``cache.to(dtype)``)."""
SGLANG_BYTES_PER_VALUE = 4
"""SGLang keeps the table in fp32 on CUDA."""


ROPE_CACHE_LABEL = "RoPE cos/sin cache"
"""The memory plan's budget line for this buffer (every engine's)."""


def _positions(rope: RopeSpec, max_position: int, *, vllm: bool = True) -> int:
    """Rows of the table: the positions vLLM (SGLang where ``vllm`` is false) precomputes for this RoPE."""
    scaling = rope.scaling
    if scaling is not None and scaling.type == "dynamic" and not vllm:  # SGLang's, as vLLM 0.21's: max x factor
        return int(max_position * scaling.factor)
    if scaling is None or scaling.type in ("llama3", "dynamic"):
        return max_position
    if scaling.type == "linear":
        return int(max_position * scaling.factor)
    assert scaling.original_max_position_embeddings is not None  # yarn needs it (RopeScaling's validator)
    return int(scaling.original_max_position_embeddings * scaling.factor)


MINIMAX_FAMILY = "minimax"
"""The family whose vLLM table (``models/minimax_text_01.py``: ``get_rope(..., dtype=torch.float32)`` at
``min(max_position_embeddings, max_model_len)`` positions, read in the 0.11.0 and 0.22.0 wheels) is fp32 and capped
at the engine's context (trial 371 #1: 10,240,000 positions priced, 2.44 GiB a rank). Its rotary width is the
config's ``rotary_dim`` (64 in MiniMax-Text-01), which mha does not read (transformers rotates the whole head): the
table is priced at the whole head, an upper bound twice that (4 MiB at 8,192 tokens)."""
MINIMAX_BYTES_PER_VALUE = 4

GEMMA4_FAMILY = "gemma4_text"
"""The family whose full-attention RoPE vLLM stores at the whole global head (``Gemma4RotaryEmbedding``)."""


def _rotary_dim(model: ModelSpec, rope: RopeSpec, *, vllm: bool) -> int:
    if model.attention.mla is not None:
        return model.attention.mla.qk_rope_head_dim
    global_head = model.attention.global_head_dim
    if vllm and model.family == GEMMA4_FAMILY and global_head is not None and rope is model.rotary:
        return global_head  # Gemma4RotaryEmbedding: rotary_dim = head_size, the full layers' global_head_dim
    return int(model.attention.head_dim * rope.partial_rotary_factor)


def any_layer_rotates(model: ModelSpec) -> bool:
    """Whether any attention layer of ``model`` applies RoPE: none does where the global layers apply none
    (``nope_layers``) and every attention layer is global: Jamba, Nemotron-H, Granite-4.0-H (position_embedding_type
    nope) and Kimi-Linear's MLA layers, for which vLLM builds no rotary embedding (``jamba.py``, ``nemotron_h.py``
    call no ``get_rope``; ``granitemoehybrid.py`` only for "rope"; Kimi's MLA passes ``rotary_emb=None``), nor does
    SGLang (0.5.9: ``nemotron_h.py`` none, ``granitemoehybrid.py`` only for "rope", Kimi's MLA ``skip_rope``): trial
    371 #2."""
    if model.attention.nope_layers != "global":
        return True
    return any(model.layer_kind(i) not in ("global", "linear") for i in range(model.n_layers))


def rope_tables(model: ModelSpec, *, vllm: bool = True, max_model_len: int | None = None) -> list[tuple[int, int]]:
    """(positions, rotary_dim) of each cos/sin table vLLM builds (SGLang's where ``vllm`` is false: the generic
    widths; ``max_model_len``: the engine's context, where vLLM caps a table at it, ``MINIMAX_FAMILY``); empty without
    RoPE (or no layer rotating) or a known context length."""
    rope = model.rotary
    if rope is None or model.context_length is None or not any_layer_rotates(model):
        return []
    if vllm and model.family == MINIMAX_FAMILY:
        positions = min(model.context_length, max_model_len or model.context_length)
        return [(positions, _rotary_dim(model, rope, vllm=vllm))]
    distinct = (
        [rope]
        if model.attention.rope_local is None or model.attention.rope_local == rope
        else [rope, model.attention.rope_local]
    )
    return [
        (_positions(each, model.context_length, vllm=vllm), _rotary_dim(model, each, vllm=vllm)) for each in distinct
    ]


def _vllm_value_bytes(model: ModelSpec, bytes_per_value: int, vllm: bool) -> int:
    """Bytes a table value takes: ``bytes_per_value``, but fp32 in vLLM's MiniMax-Text-01 (``MINIMAX_FAMILY``)."""
    return MINIMAX_BYTES_PER_VALUE if vllm and model.family == MINIMAX_FAMILY else bytes_per_value


def rope_cache_bytes(
    model: ModelSpec,
    bytes_per_value: int = VLLM_BYTES_PER_VALUE,
    *,
    vllm: bool = True,
    max_model_len: int | None = None,
) -> int:
    """Bytes of the cos/sin tables on one rank (whatever tp): positions x rotary_dim x ``bytes_per_value``, summed
    (vLLM's 2 B by default; ``SGLANG_BYTES_PER_VALUE`` and ``vllm=False`` for SGLang's, at the generic widths;
    ``max_model_len``: the engine's context, which caps MiniMax-Text-01's vLLM table)."""
    value = _vllm_value_bytes(model, bytes_per_value, vllm)
    tables = rope_tables(model, vllm=vllm, max_model_len=max_model_len)
    return sum(positions * dim * value for positions, dim in tables)


def rope_cache_how(
    model: ModelSpec,
    engine: str = "vLLM",
    bytes_per_value: int = VLLM_BYTES_PER_VALUE,
    max_model_len: int | None = None,
) -> str:
    """The budget line's explanation: each table's shape and the engine (``vLLM`` or ``SGLang``) that holds it."""
    vllm = engine == "vLLM"
    tables = rope_tables(model, vllm=vllm, max_model_len=max_model_len)
    if not tables:
        return "no RoPE table (learned positions, no layer rotating, or the context length is unknown)"
    shapes = " + ".join(f"{positions:,} positions x {dim}" for positions, dim in tables)
    value = _vllm_value_bytes(model, bytes_per_value, vllm)
    capped = " (min(max_position_embeddings, max_model_len), fp32, the whole head: config's rotary_dim not read)"
    return (
        f"{engine}'s rotary buffer cos_sin_cache, {shapes} x {value} B, on every rank"
        f"{capped if vllm and model.family == MINIMAX_FAMILY else ''}"
    )
