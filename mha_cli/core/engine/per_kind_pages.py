"""Why the engine plan refuses a model whose global layers cache at their own head geometry (Gemma 4).

vLLM's ``models/gemma4.py`` (``Gemma4Attention``) gives each layer its own KV heads and head width, so the layers'
KV cache specs have two page sizes (block x KV heads x head width x 2 x bytes). ``v1/core/kv_cache_utils.py``
``unify_kv_cache_spec_page_size`` then raises the block size of the layers with the smaller page until the pages
match (or pads them where a backend indexes by block stride), and the hybrid allocator groups the layers by that
page: a pool of pages of two token counts that ``core.engine.pages`` (one page geometry for every attention layer)
does not size. Rather than a wrong pool, the plan is refused and ``mha kv`` (without ``--target``) prices the cache
per layer kind. Pure Python.
"""

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import ModelSpec


def refuse_per_kind_pages(model: ModelSpec) -> None:
    """Refuse, in one line, an engine memory plan for ``model`` when its global layers have their own KV heads or
    head width (``AttentionSpec.per_kind_geometry``)."""
    attention = model.attention
    if not attention.per_kind_geometry or not model.count_layers("global"):
        return
    raise BadInputError(
        f"{model.name}: its global layers cache {attention.kv_heads_of('global')} KV heads of"
        f" {attention.head_dim_of('global')} against {attention.n_kv_heads} of {attention.head_dim} elsewhere, pages of"
        " two sizes the engines unify by block size (vLLM's unify_kv_cache_spec_page_size), which mha's memory plan"
        " does not size yet: its KV cache is priced by `mha kv` without --target"
    )
