"""vLLM's one page size for a model whose global layers cache at their own head geometry (Gemma 4).

vLLM's ``models/gemma4.py`` (``Gemma4Attention``, read in 0.19.0, 0.24.0, 0.29.0 and 0.34.0) gives each layer its
own KV heads and head width (``per_layer_config``; KV heads replicated past tp) through a plain ``Attention``: a
K=V layer (``attention_k_eq_v``) loads its key weights into the V slot as well and caches K and V as two tensors.
Its KV cache spec is a ``SlidingWindowSpec`` or ``FullAttentionSpec`` whose page is block x KV heads x (K + V head
width) x bytes (``AttentionSpec.page_size_bytes``, ``v1/kv_cache_interface.py``), so the two kinds' pages differ.
vLLM then makes them one (``unify_kv_cache_spec_page_size``: ``v1/core/kv_cache_utils.py`` in 0.19.0-0.32.0,
``v1/core/kv_cache_planning.py`` in 0.33.0-0.34.0):

- the largest page is kept; a layer whose page divides it has its block size multiplied by the ratio (gemma-4-31B
  in bf16 at block 16: sliding 16 x 16 x 512 x 2 B = 262,144 B, full 16 x 4 x 1,024 x 2 B = 131,072 B, so its
  full-attention layers take 32-token blocks);
- a page that does not divide it raises ``NotImplementedError`` (0.19.0); 0.24.0 pads it where the backend indexes
  pages by block stride, 0.29.0 on any non-MLA attention layer. Padding is not modelled: refused in one line.

The groups, the pool's blocks (available // (page x group size)), the tokens and the concurrency are then
``core.engine.pages``'s, each group counting its request's blocks at its own block size
(``FullAttentionSpec.max_memory_usage_bytes``: ceil(max_model_len / block) pages; the V1 token line takes the
smallest block, the unchanged one: ``_report_kv_cache_config`` in 0.19.0). This holds for a layer-outermost cache
layout, the one CUDA's FlashAttention, Triton and FlashInfer backends and the CPU backend take in 0.33-0.34
(``resolve_kv_cache_layout``); the block-outermost layouts' packing (``_get_packed_kv_cache_groups``) is not modelled.

A vLLM release that cannot load Gemma 4 (before 0.19.0, the first whose ``models/registry.py`` has
``Gemma4ForCausalLM``) is refused by the commands' release check, in the same words for every command
(``cli.release_notice.refuse_release_without_model``, which reads ``core.engine.architectures_table``). SGLang and
TensorRT-LLM are refused here: their pools for two head geometries were not read; nor was vLLM V0, which never
served Gemma 4. Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.engine.pages import PageKind, layer_kinds_for_vllm
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import bytes_per_token_per_layer
from mha_cli.core.schemas import ModelSpec

UNIFIED_GENERATIONS = ("vllm-v1", "vllm-0.21")
"""The engine generations whose page unification was read (vLLM 0.19.0 on; the module docstring)."""


def has_per_kind_pages(model: ModelSpec) -> bool:
    """Whether ``model``'s global layers cache at their own KV heads or head width (``per_kind_geometry``)."""
    return model.attention.per_kind_geometry and bool(model.count_layers("global"))


def refuse_per_kind_pages(model: ModelSpec, generation: str | None) -> None:
    """Refuse, in one line, an engine memory plan for ``model`` with pages of two sizes under an engine
    ``generation`` whose pool for them was not read (SGLang, TensorRT-LLM, vLLM V0; None: any engine)."""
    if not has_per_kind_pages(model) or generation in UNIFIED_GENERATIONS:
        return
    attention = model.attention
    raise BadInputError(
        f"{model.name}: its global layers cache {attention.kv_heads_of('global')} KV heads of"
        f" {attention.head_dim_of('global')} against {attention.n_kv_heads} of {attention.head_dim} elsewhere, pages of"
        " two sizes: mha sizes them as vLLM 0.19+ unifies them (unify_kv_cache_spec_page_size), not for"
        f" {generation} (SGLang's and TensorRT-LLM's pools for two geometries were not read; vLLM V0 never served"
        " Gemma 4): plan it with --engine vllm, or price its cache with `mha kv` without --target"
    )


class UnifiedPages(NamedTuple):
    """The page every layer takes after vLLM's unification, as ``core.engine.pages`` sizes it."""

    bytes_per_token_per_layer: int
    """One token of the layer kind with the largest page, on one rank: the page is block x this."""
    kind_blocks: dict[PageKind, int]
    """Tokens per block of each page kind (the largest page's kind keeps the block size)."""


def per_kind_bytes(model: ModelSpec, kv_dtype: str, tp: int) -> dict[PageKind, int]:
    """One token of one layer on one rank, by vLLM page kind: sliding layers at the default geometry, full ones at
    the global layers'. Refused where a full-attention page would mix both (a chunked layer turns the hybrid
    allocator off)."""
    kinds, hybrid = layer_kinds_for_vllm(model)
    if not hybrid or set(model.token_layer_kinds()) - {"local", "global"}:
        raise BadInputError(
            f"{model.name}: global layers at their own head geometry beside layers other than sliding-window ones"
            " are not sized by the engine plan; price its cache with `mha kv` without --target"
        )
    geometry = {"sliding": "local", "full": "global"}
    return {kind: bytes_per_token_per_layer(model, kv_dtype, tp=tp, kind=geometry[kind]) for kind, _ in kinds}


def unified_pages(model: ModelSpec, kv_dtype: str, *, tp: int, block_size: int) -> UnifiedPages:
    """vLLM's ``unify_kv_cache_spec_page_size`` for ``model`` at ``block_size`` tokens on one rank of ``tp``."""
    per_token = per_kind_bytes(model, kv_dtype, tp)
    largest = max(per_token.values())
    blocks: dict[PageKind, int] = {}
    for kind, per_layer in per_token.items():
        if largest % per_layer:
            raise BadInputError(
                f"{model.name}: its {kind} layers' page ({per_layer} B a token) does not divide the largest"
                f" ({largest} B): vLLM 0.19 refuses it, 0.24+ pads it, which mha does not model"
            )
        blocks[kind] = block_size * (largest // per_layer)
    return UnifiedPages(largest, blocks)
