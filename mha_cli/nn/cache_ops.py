"""Whole-cache helpers shared by ``mha bench`` and ``mha verify``: a cache's tensors, random contents, bytes per token."""

from __future__ import annotations

import torch

from mha_cli.nn.kv_cache import KVCache, LatentCache


def cache_tensors(cache: KVCache | LatentCache) -> tuple[torch.Tensor, ...]:
    """The buffers a cache allocates: ``kv`` for the MLA latent cache, ``k`` and ``v`` otherwise."""
    return (cache.kv,) if isinstance(cache, LatentCache) else (cache.k, cache.v)


def fill_random(cache: KVCache | LatentCache, generator: torch.Generator | None = None) -> None:
    """Standard-normal values everywhere: a decode step at full context needs no real prefill."""
    for tensor in cache_tensors(cache):
        tensor.normal_(generator=generator)


def bytes_per_token(cache: KVCache | LatentCache) -> int:
    """Bytes the cache holds per token of one sequence (its layer, all its heads): nbytes / (batch x max_seq)."""
    return cache.nbytes // (cache.batch * cache.max_seq)
