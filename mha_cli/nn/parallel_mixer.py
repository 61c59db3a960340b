"""The fixed-state mixer some families run beside attention in every layer (Falcon-H1's parallel hybrid).

Such a layer reads one normed input into both branches and adds their outputs into the residual:
x + attention(h) + mixer(h). Its cache holds both: the attention's K/V and the mixer's ``MixerState``
(``ParallelCache``). Built on one rank only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import nn

from mha_cli.core.schemas import ModelSpec
from mha_cli.nn.mixers import MixerState, build_mixer


class ParallelCache(NamedTuple):
    """One parallel layer's cache: the attention's (K/V, pre-allocated) and the mixer's fixed state."""

    attention: Any
    mixer: MixerState

    @property
    def nbytes(self) -> int:
        """Bytes both caches allocate: the attention's K/V and the mixer's state."""
        return self.attention.nbytes + self.mixer.nbytes


def has_parallel_mixer(spec: ModelSpec, layer: int) -> bool:
    """Whether layer ``layer`` runs the spec's mixer beside its attention (``recurrent.on_attention_layers``)."""
    return spec.recurrent is not None and spec.recurrent.on_attention_layers and spec.layer_kind(layer) != "linear"


def build_parallel_mixer(
    spec: ModelSpec,
    layer: int,
    *,
    tp_size: int = 1,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> nn.Module | None:
    """The mixer beside layer ``layer``'s attention, or None where it has none."""
    if not has_parallel_mixer(spec, layer):
        return None
    assert spec.recurrent is not None
    if tp_size != 1:
        raise ValueError(f"a {spec.recurrent.kind} mixer is built on one rank only, not split over tp {tp_size}")
    scales = None if spec.block.multipliers is None else spec.block.multipliers.ssm_projection
    scales = None if scales is None or all(f == 1.0 for f in scales) else scales
    return build_mixer(
        spec.recurrent, spec.d_model, eps=spec.block.norm_eps, dtype=dtype, device=device, projection_scales=scales
    )
