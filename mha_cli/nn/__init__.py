"""The torch ring: attention modules (MHA/GQA/MQA, MLA), static KV caches, and head reshapes.

Imported only by commands that run torch (``mha probe``, ``mha bench``, ``mha verify``).

>>> from mha_cli.nn import Attention
>>> layer = Attention(d_model=64, n_heads=8, n_kv_heads=2, head_dim=8)  # GQA, 4 queries per KV head
>>> cache = layer.new_cache(batch=1, max_seq=16)
>>> y = layer(x, cache, start_pos=0)  # prefill; then layer(x_next, cache, start_pos=len(x))
"""

from mha_cli.nn.attention import Attention
from mha_cli.nn.build import build_attention
from mha_cli.nn.heads import combine_heads, split_heads
from mha_cli.nn.kv_cache import KVCache, LatentCache, resolve_cache_dtype
from mha_cli.nn.mla import MLAttention
from mha_cli.nn.model import DecoderLM, build_model
from mha_cli.nn.sdpa import (
    grouped_attention,
    plan_attention,
    record_attention_paths,
    record_sdpa_backends,
    reference_attention,
    sdpa_backend_name,
)

__all__ = [
    "Attention",
    "DecoderLM",
    "KVCache",
    "LatentCache",
    "MLAttention",
    "build_attention",
    "build_model",
    "combine_heads",
    "grouped_attention",
    "plan_attention",
    "record_attention_paths",
    "record_sdpa_backends",
    "reference_attention",
    "resolve_cache_dtype",
    "sdpa_backend_name",
    "split_heads",
]
