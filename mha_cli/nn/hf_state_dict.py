"""A family's transformers state dict under ``build_model``'s names and layouts (``mha_cli.core.weight_layout``).

``to_mha_state_dict(state_dict, layout, spec)`` drops, regroups, transposes (and squeezes), renames and splits the tensors the
layout names, in that order; it only moves values (views where it can), never computes one. The result loads
into ``build_model(spec)`` with ``load_state_dict(strict=True)`` when the layout covers the family;
``load_transformers_state_dict(model, state_dict)`` does both with the layout of the model's family (the registry's
``Family.weights``).
"""

from __future__ import annotations

import re

import torch

from mha_cli.core.decoder_omissions import spec_family
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.weight_layout import FusedSplit, WeightLayout, part_sizes

NO_LAYOUT = WeightLayout()
"""The identity: a family stored under Llama's names (or of no registered family)."""


def family_layout(spec: ModelSpec) -> WeightLayout:
    """The weight layout of ``spec``'s family (its registry module's ``Family.weights``); the identity if none."""
    found = spec_family(spec)
    return found.weights if found is not None and found.weights is not None else NO_LAYOUT


def load_transformers_state_dict(model: torch.nn.Module, state_dict: dict[str, torch.Tensor], *, strict: bool = True):
    """Load transformers' ``state_dict`` of the family into ``model`` (a ``DecoderLM``), converted by the family's
    layout; returns ``load_state_dict``'s missing and unexpected keys (``strict``: raise on any)."""
    return model.load_state_dict(to_mha_state_dict(state_dict, family_layout(model.spec), model.spec), strict=strict)


def to_mha_state_dict(
    state_dict: dict[str, torch.Tensor], layout: WeightLayout, spec: ModelSpec
) -> dict[str, torch.Tensor]:
    """``state_dict`` (transformers' names and layouts) -> ours; ``spec`` sizes the fused splits.

    Raises ``ValueError`` naming the weight when a fused weight's size along its split dimension is not the sum of
    the parts the spec gives, or when two of transformers' tensors would land on one of our names.
    """
    out: dict[str, torch.Tensor] = {}
    for name, tensor in state_dict.items():
        if any(re.search(pattern, name) for pattern in layout.dropped):
            continue
        for pattern, dim in layout.interleaved:
            if re.search(pattern, name):
                tensor = deinterleave(tensor, dim)
        if any(re.search(pattern, name) for pattern in layout.transposed):
            tensor = tensor.transpose(-2, -1)  # (..., in, out) -> (..., out, in)
        if any(re.search(pattern, name) for pattern in layout.squeezed):
            tensor = _squeeze_leading(name, tensor)  # (1, ...) -> (...)
        ours = name
        for pattern, replacement in layout.renames:
            ours = re.sub(pattern, replacement, ours)
        for part_name, part in _split(ours, tensor, layout.fused, spec):
            if part_name in out:
                raise ValueError(f"{name}: lands on {part_name}, which another weight already holds")
            out[part_name] = part
    return out


def _squeeze_leading(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` (1, ...) without its leading dimension; ``ValueError`` naming the weight if it is not 1."""
    if tensor.ndim == 0 or tensor.shape[0] != 1:
        raise ValueError(f"{name}: shape {tuple(tensor.shape)} has no leading dimension of 1 to drop")
    return tensor[0]


def deinterleave(tensor: torch.Tensor, dim: int) -> torch.Tensor:
    """Entries alternating (gate 0, up 0, gate 1, up 1, ...) along ``dim`` -> (gate 0, gate 1, ..., up 0, up 1, ...)."""
    dim %= tensor.ndim
    size = tensor.shape[dim]
    if size % 2:
        raise ValueError(f"{size} entries along dim {dim} cannot alternate gate and up")
    pairs = tensor.unflatten(dim, (size // 2, 2))  # ..., size/2, 2 (gate, up), ...
    return pairs.transpose(dim, dim + 1).flatten(dim, dim + 1)  # ..., size (gate entries, then up), ...


def _split(
    name: str, tensor: torch.Tensor, fused: tuple[FusedSplit, ...], spec: ModelSpec
) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) pairs: the parts of the first fused split whose pattern matches ``name``, else the tensor."""
    for split in fused:
        match = re.fullmatch(split.pattern, name)
        if match is None:
            continue
        sizes = part_sizes(split.sizes, spec)
        total = tensor.shape[split.dim]
        if total != sum(sizes):
            raise ValueError(
                f"{name}: {total} entries along dim {split.dim}, but the spec's {split.sizes} parts"
                f" ({' + '.join(map(str, sizes))}) make {sum(sizes)}"
            )
        names = [match.expand(part) for part in split.parts]
        if split.sizes == "qkv_per_kv_group":
            parts = _split_kv_groups(tensor, split.dim, spec)
        elif split.sizes == "qvk_per_4_shards":
            if spec.attention.n_kv_heads != spec.attention.n_heads or total % 12:
                raise ValueError(f"{name}: 4 shards of q, v, k need MHA and a width divisible by 12, not {total}")
            parts = _split_shards(tensor, split.dim, 4)
        else:
            parts = tensor.split(list(sizes), dim=split.dim)  # views along dim
        return list(zip(names, parts, strict=True))
    return [(name, tensor)]


def _split_kv_groups(tensor: torch.Tensor, dim: int, spec: ModelSpec) -> tuple[torch.Tensor, ...]:
    """q, k, v out of n_kv groups, each (q_per_kv query heads, 1 key head, 1 value head) of head_dim entries."""
    dim %= tensor.ndim
    n_kv, q_per_kv, h_d = (
        spec.attention.n_kv_heads,
        spec.attention.n_heads // spec.attention.n_kv_heads,
        spec.attention.head_dim,
    )
    grouped = tensor.unflatten(dim, (n_kv, q_per_kv + 2, h_d))  # ..., n_kv, q_per_kv + 2, h_d, ...
    q = grouped.narrow(dim + 1, 0, q_per_kv)  # ..., n_kv, q_per_kv, h_d, ...
    k = grouped.narrow(dim + 1, q_per_kv, 1)  # ..., n_kv, 1, h_d, ...
    v = grouped.narrow(dim + 1, q_per_kv + 1, 1)  # ..., n_kv, 1, h_d, ...
    return tuple(part.flatten(dim, dim + 2) for part in (q, k, v))  # (..., n_h * h_d | n_kv * h_d, ...)


def _split_shards(tensor: torch.Tensor, dim: int, n_shards: int) -> tuple[torch.Tensor, ...]:
    """Three equal parts out of ``n_shards`` shards, each holding a 1/n_shards slice of every part in turn."""
    dim %= tensor.ndim
    sharded = tensor.unflatten(dim, (n_shards, 3, tensor.shape[dim] // (3 * n_shards)))  # ..., shard, part, w, ...
    return tuple(sharded.select(dim + 1, part).flatten(dim, dim + 1) for part in range(3))  # (..., 3 x (d), ...)
