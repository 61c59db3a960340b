"""Slice a whole model's weights into one tensor-parallel rank's shard, and seed-derived weights.

Which split a tensor takes is looked up by its name in the weight inventory (``core.inventory.tensors_of``: column,
KV heads, row, fused halves, vocabulary or replicated); this module only cuts it:

- ``column``: the rank's contiguous block of dim 0 (n / tp rows);
- ``kv_heads``: rows of the rank's KV heads (``core.tensor_parallel.kv_head_range``), one replicated head when
  tp > n_kv;
- ``row``: the rank's block of the last dim;
- ``fused_halves``: dim 1 holds the gate half then the up half (routed experts' ``gate_up_proj`` and its bias):
  the rank's block of each;
- ``expert_column``: the rank's block of dim 1 (plain routed experts' ``up_proj`` (E, f, d));
- ``vocab``: the rank's block of rows of the vocabulary padded to a multiple of 64 (``nn.vocab_parallel``);
- ``replicated`` (and a mixer's ``unsharded``, built on one rank only): the whole tensor.

``shard_state_dict(full, spec, rank, tp)`` returns tensors that ``build_model(spec, tp_rank=rank,
tp_size=tp).load_state_dict(..., strict=True)`` accepts; a name the inventory does not list is refused. ``seeded_tensor``
makes the same full weight on every process from a seed and the tensor's name, so ranks need not exchange weights.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping

import torch

from mha_cli.core.inventory import Split, tensors_of
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import kv_head_range
from mha_cli.nn.vocab_parallel import vocab_block

_LAYER = re.compile(r"^model\.layers\.(\d+)\.")
_NORM = re.compile(r"norm\.weight$")


def _block(tensor: torch.Tensor, dim: int, rank: int, tp: int, name: str) -> torch.Tensor:
    """The rank's contiguous block of ``tensor`` along ``dim`` (size / tp elements)."""
    size = tensor.shape[dim]
    if size % tp:
        raise ValueError(f"{name}: dim {dim} ({size}) is not divisible by tp ({tp})")
    width = size // tp
    return tensor.narrow(dim, rank * width, width)


def tensor_split(name: str, spec: ModelSpec, tp_size: int) -> Split:
    """How the inventory splits the tensor ``name`` over ``tp_size`` ranks; ``ValueError`` for a name it lacks."""
    match = _LAYER.match(name)
    places = [int(match.group(1))] if match else [None, -1]  # a layer's, or the input or output side's
    for place in places:
        for tensor in tensors_of(spec, place, tp_size, 0):
            if tensor.name == name:
                return tensor.split
    raise ValueError(f"{name} is not a weight of this model (core.inventory lists none by that name)")


def shard_tensor(name: str, tensor: torch.Tensor, spec: ModelSpec, tp_rank: int, tp_size: int) -> torch.Tensor:
    """The part of the full tensor ``name`` that rank ``tp_rank`` of ``tp_size`` holds (a copy, contiguous)."""
    if not 0 <= tp_rank < tp_size:
        raise ValueError(f"tp_rank ({tp_rank}) must lie in [0, tp_size={tp_size})")
    if tp_size == 1:
        return tensor.clone()
    split = tensor_split(name, spec, tp_size)
    if split == "vocab":
        part = vocab_block(tensor, spec.embeddings.vocab_size, tp_rank, tp_size)  # (R, ...)
    elif split == "kv_heads":
        head_dim = spec.attention.head_dim
        first, last = kv_head_range(spec.attention.n_kv_heads, tp_rank, tp_size)
        part = tensor.narrow(0, first * head_dim, (last - first) * head_dim)  # (kv_r * h_d, ...)
    elif split == "column":
        part = _block(tensor, 0, tp_rank, tp_size, name)  # (out / tp, ...)
    elif split == "row":
        part = _block(tensor, tensor.dim() - 1, tp_rank, tp_size, name)  # (..., out, in / tp)
    elif split == "expert_column":
        part = _block(tensor, 1, tp_rank, tp_size, name)  # (E, f / tp, d)
    elif split == "fused_halves":
        gate, up = tensor.chunk(2, dim=1)  # (E, d_ff, d) each, or (E, d_ff) for the bias
        part = torch.cat([_block(gate, 1, tp_rank, tp_size, name), _block(up, 1, tp_rank, tp_size, name)], dim=1)
    else:
        part = tensor  # replicated
    return part.contiguous().clone()


def shard_state_dict(
    full_state_dict: Mapping[str, torch.Tensor], spec: ModelSpec, tp_rank: int, tp_size: int
) -> dict[str, torch.Tensor]:
    """Rank ``tp_rank``'s shard of a whole model's state dict (names unchanged; see the module docstring)."""
    return {name: shard_tensor(name, tensor, spec, tp_rank, tp_size) for name, tensor in full_state_dict.items()}


def seeded_tensor(name: str, shape: tuple[int, ...] | torch.Size, seed: int) -> torch.Tensor:
    """A float32 CPU tensor determined by ``seed`` and ``name`` alone (the same in every process).

    Norm weights are 1 + 0.1 N(0, 1); matrices N(0, 1 / fan_in), so activations stay of order one
    through the layers; other vectors (biases) 0.02 N(0, 1).
    """
    generator = torch.Generator().manual_seed(seed * 2**32 + zlib.crc32(name.encode()))
    values = torch.randn(tuple(shape), generator=generator)
    if _NORM.search(name) and len(shape) == 1:
        return 1 + 0.1 * values
    if len(shape) >= 2:
        return values / shape[-1] ** 0.5
    return 0.02 * values


def seeded_shard(
    shapes: Mapping[str, torch.Size], spec: ModelSpec, tp_rank: int, tp_size: int, seed: int
) -> dict[str, torch.Tensor]:
    """Rank ``tp_rank``'s shard of the seed-derived full weights whose names and full shapes are ``shapes``.

    One full tensor exists at a time, so a rank never holds the whole model.
    """
    return {
        name: shard_tensor(name, seeded_tensor(name, shape, seed), spec, tp_rank, tp_size)
        for name, shape in shapes.items()
    }
