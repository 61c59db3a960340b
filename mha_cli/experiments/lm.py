"""The experiments' language model: ``mha_cli.nn.build_model``'s decoder, with or without attention.

Every experiment trains the decoder the rest of the tool builds and verifies (RoPE or learned positions,
pre-norm, gated MLP, MHA/GQA/MQA or MLA), so what an experiment shows is about that decoder. The
no-attention control is the same decoder with every attention branch replaced by zeros: each position
then sees its own token only (for a language model, a learned bigram model). It is the floor a model
must beat clearly before its attention can be said to matter.

Shapes: ``b`` batch, ``s`` tokens, ``d`` d_model.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from mha_cli.core.params import attention_params, count_params
from mha_cli.core.schemas import MlaCacheMode, ModelSpec
from mha_cli.nn.model import DecoderLM, build_model


class NoAttention(nn.Module):
    """An attention branch that adds nothing: the residual stream keeps each position's own token only."""

    def forward(self, h: torch.Tensor, cache: Any, start_pos: int, reduce: Any = None) -> torch.Tensor:
        return torch.zeros_like(h)  # (b, s, d)

    def new_cache(self, batch: int, max_seq: int, dtype: Any = None) -> None:
        return None  # nothing to cache


def build_lm(
    spec: ModelSpec,
    *,
    attention: bool = True,
    mla_mode: MlaCacheMode = "absorbed",
    device: torch.device | str | None = None,
) -> DecoderLM:
    """``build_model(spec)`` in fp32 on ``device``; ``attention=False`` swaps every attention for ``NoAttention``."""
    model = build_model(spec, mla_mode=mla_mode, device=device)
    if not attention:
        for layer in model.model.layers:
            layer.self_attn = NoAttention()
    return model


def expected_parameters(spec: ModelSpec, *, attention: bool = True) -> int:
    """``core.params``'s count for what ``build_lm`` builds: without attention, less every layer's projections."""
    total = count_params(spec).total
    return total if attention else total - spec.n_layers * attention_params(spec)


def n_parameters(module: nn.Module) -> int:
    """Values in the module's parameters (what ``count_params`` predicts)."""
    return sum(p.numel() for p in module.parameters())


def cache_nbytes(caches: list[Any]) -> int:
    """Exact bytes of all layers' cache tensors."""
    return sum(cache.nbytes for cache in caches if cache is not None)
