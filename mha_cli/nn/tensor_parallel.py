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
makes the same full weight on every process from a seed and the tensor's name, so ranks need not exchange weights;
``load_seeded_shard`` writes a rank's shard of those weights into a built model in place, a block of rows at a time
(for the splits that cut dim 0, only the blocks the rank's rows touch; the others draw every block and keep the
rank's columns), so no whole tensor is ever held: a 70B model's fp32 check stack is 14.2 GiB, and four ranks each
drawing whole 3.9 GiB vocabulary tensors beside their shards did not fit a 23 GiB host.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Iterator, Mapping

import torch

from mha_cli.core.inventory import Split, tensors_of
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import kv_head_range, vocab_rows_per_rank

_LAYER = re.compile(r"^model\.layers\.(\d+)\.")
_NORM = re.compile(r"norm\.weight$")


def tensor_split(name: str, spec: ModelSpec, tp_size: int) -> Split:
    """How the inventory splits the tensor ``name`` over ``tp_size`` ranks; ``ValueError`` for a name it lacks."""
    match = _LAYER.match(name)
    places = [int(match.group(1))] if match else [None, -1]  # a layer's, or the input or output side's
    for place in places:
        for tensor in tensors_of(spec, place, tp_size, 0):
            if tensor.name == name:
                return tensor.split
    raise ValueError(f"{name} is not a weight of this model (core.inventory lists none by that name)")


def _even_block(size: int, rank: int, tp: int, name: str, dim: int) -> tuple[int, int]:
    """(first, end) of the rank's contiguous block of a dimension of ``size`` split evenly over ``tp`` ranks."""
    if size % tp:
        raise ValueError(f"{name}: dim {dim} ({size}) is not divisible by tp ({tp})")
    width = size // tp
    return rank * width, (rank + 1) * width


def _rows_held(
    split: Split, name: str, shape: tuple[int, ...], spec: ModelSpec, rank: int, tp: int
) -> tuple[int, int, int] | None:
    """For a split that cuts dim 0: (first row, end row) of the whole tensor that the rank holds, and the rows of its
    shard (more where the vocabulary's zero padding falls in it); ``None`` for a split that keeps dim 0 whole."""
    if split == "vocab":
        rows = vocab_rows_per_rank(spec.embeddings.vocab_size, tp)
        first = min(rank * rows, shape[0])
        return first, min(first + rows, shape[0]), rows
    if split == "kv_heads":
        head_dim = spec.attention.head_dim
        first_head, last_head = kv_head_range(spec.attention.n_kv_heads, rank, tp)
        return first_head * head_dim, last_head * head_dim, (last_head - first_head) * head_dim
    if split == "column" or (split == "row" and len(shape) == 1):  # a vector's last dim is its dim 0
        first, end = _even_block(shape[0], rank, tp, name, 0)
        return first, end, end - first
    return None


def _cut_within_rows(split: Split, rows: torch.Tensor, rank: int, tp: int, name: str) -> torch.Tensor:
    """The rank's part of ``rows`` (any block of dim 0 of a whole tensor) for a split that keeps dim 0 whole."""
    if split == "row":
        first, end = _even_block(rows.shape[-1], rank, tp, name, rows.dim() - 1)
        return rows[..., first:end]  # (..., out, in / tp)
    if split == "expert_column":
        first, end = _even_block(rows.shape[1], rank, tp, name, 1)
        return rows[:, first:end]  # (E, f / tp, d)
    if split == "fused_halves":
        gate, up = rows.chunk(2, dim=1)  # (E, d_ff, d) each, or (E, d_ff) for the bias
        first, end = _even_block(gate.shape[1], rank, tp, name, 1)
        return torch.cat([gate[:, first:end], up[:, first:end]], dim=1)  # (E, 2 d_ff / tp, ...)
    return rows  # replicated, or a mixer's unsharded tensor


def _check_rank(tp_rank: int, tp_size: int) -> None:
    if not 0 <= tp_rank < tp_size:
        raise ValueError(f"tp_rank ({tp_rank}) must lie in [0, tp_size={tp_size})")


def shard_tensor(name: str, tensor: torch.Tensor, spec: ModelSpec, tp_rank: int, tp_size: int) -> torch.Tensor:
    """The part of the full tensor ``name`` that rank ``tp_rank`` of ``tp_size`` holds (a copy, contiguous)."""
    _check_rank(tp_rank, tp_size)
    if tp_size == 1 or tensor.dim() == 0:
        return tensor.clone()
    split = tensor_split(name, spec, tp_size)
    held = _rows_held(split, name, tuple(tensor.shape), spec, tp_rank, tp_size)
    if held is None:
        return _cut_within_rows(split, tensor, tp_rank, tp_size, name).contiguous().clone()
    first, end, rows = held
    part = tensor.new_zeros(rows, *tensor.shape[1:])  # (rows, ...): zeros where vocabulary padding falls
    part[: end - first] = tensor[first:end]
    return part


def shard_state_dict(
    full_state_dict: Mapping[str, torch.Tensor], spec: ModelSpec, tp_rank: int, tp_size: int
) -> dict[str, torch.Tensor]:
    """Rank ``tp_rank``'s shard of a whole model's state dict (names unchanged; see the module docstring)."""
    return {name: shard_tensor(name, tensor, spec, tp_rank, tp_size) for name, tensor in full_state_dict.items()}


SEED_BLOCK_ELEMENTS = 1 << 22
"""A seeded tensor is drawn in blocks of dim 0 of about this many elements (16 MiB of float32), each from its own
seed, so a rank draws only the rows it holds and no process ever holds a whole vocabulary-sized tensor twice. A
tensor of at most this many elements is one block, drawn as before blocks existed."""


def _block_rows(shape: tuple[int, ...]) -> int:
    """Rows of dim 0 in one seeded block of a tensor of ``shape``."""
    row_elements = math.prod(shape[1:])
    return max(1, SEED_BLOCK_ELEMENTS // max(1, row_elements))


def _seeded_values(name: str, shape: tuple[int, ...], block_shape: tuple[int, ...], seed: int, index: int) -> torch.Tensor:  # fmt: skip
    """Block ``index`` of the seeded tensor ``name`` of whole ``shape``: float32 values of ``block_shape``."""
    key = name if index == 0 else f"{name}#{index}"
    generator = torch.Generator().manual_seed(seed * 2**32 + zlib.crc32(key.encode()))
    values = torch.randn(block_shape, generator=generator)  # scaled in place: one block in memory, not two
    if _NORM.search(name) and len(shape) == 1:
        return values.mul_(0.1).add_(1)
    if len(shape) >= 2:
        return values.div_(shape[-1] ** 0.5)
    return values.mul_(0.02)


def seeded_blocks(
    name: str, shape: tuple[int, ...] | torch.Size, seed: int, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, torch.Tensor]]:
    """(first row, rows) of the seeded tensor ``name`` (at least one dimension) over rows ``[start, stop)`` of dim 0,
    a block at a time, each cut to the range: only the blocks that range touches are drawn."""
    shape = tuple(shape)
    stop = shape[0] if stop is None else stop
    if start >= stop:
        return  # an empty range draws nothing (a rank whose rows are all vocabulary padding)
    per_block = _block_rows(shape)
    for index in range(start // per_block, math.ceil(stop / per_block)):
        first, end = index * per_block, min((index + 1) * per_block, shape[0])
        block = _seeded_values(name, shape, (end - first, *shape[1:]), seed, index)  # (end - first, ...)
        low, high = max(start, first), min(stop, end)
        yield low, block[low - first : high - first]


def seeded_tensor(name: str, shape: tuple[int, ...] | torch.Size, seed: int) -> torch.Tensor:
    """A float32 CPU tensor determined by ``seed`` and ``name`` alone (the same in every process).

    Norm weights are 1 + 0.1 N(0, 1); matrices N(0, 1 / fan_in), so activations stay of order one
    through the layers; other vectors (biases) 0.02 N(0, 1).
    """
    shape = tuple(shape)
    if not shape or shape[0] == 0:
        return _seeded_values(name, shape, shape, seed, 0)
    return torch.cat([rows for _, rows in seeded_blocks(name, shape, seed)])


def _copy_into(target: torch.Tensor, values: torch.Tensor, name: str) -> None:
    if target.shape != values.shape:
        raise ValueError(f"{name}: the model holds {tuple(target.shape)}, its shard is {tuple(values.shape)}")
    target.copy_(values)


def fill_seeded_shard(
    target: torch.Tensor, name: str, shape: tuple[int, ...] | torch.Size, spec: ModelSpec, tp_rank: int,
    tp_size: int, seed: int,
) -> None:  # fmt: skip
    """Write rank ``tp_rank``'s shard of ``seeded_tensor(name, shape, seed)`` into ``target`` in place, a block at a
    time: equal to ``shard_tensor`` of the whole, without the whole ever existing."""
    _check_rank(tp_rank, tp_size)
    shape = tuple(shape)
    with torch.no_grad():
        if not shape:
            _copy_into(target, seeded_tensor(name, shape, seed), name)
            return
        split: Split = "replicated" if tp_size == 1 else tensor_split(name, spec, tp_size)
        held = _rows_held(split, name, shape, spec, tp_rank, tp_size)
        if held is None:
            if target.shape[0] != shape[0]:
                raise ValueError(f"{name}: the model holds {target.shape[0]} rows, the whole has {shape[0]}")
            for first, rows in seeded_blocks(name, shape, seed):
                _copy_into(target[first : first + len(rows)], _cut_within_rows(split, rows, tp_rank, tp_size, name), name)  # fmt: skip
            return
        first, end, held_rows = held
        if target.shape[0] != held_rows:
            raise ValueError(f"{name}: the model holds {target.shape[0]} rows, the rank's shard {held_rows}")
        target[end - first :].zero_()  # the vocabulary's padding rows
        for row, rows in seeded_blocks(name, shape, seed, first, end):
            _copy_into(target[row - first : row - first + len(rows)], rows, name)


def load_seeded_shard(
    model: torch.nn.Module, shapes: Mapping[str, torch.Size], spec: ModelSpec, tp_rank: int, tp_size: int, seed: int,
    *, whole_name: Callable[[str], str] = lambda name: name,
) -> None:  # fmt: skip
    """Fill every tensor of ``model``'s state dict with rank ``tp_rank``'s shard of the seed-derived weights, in place.

    ``shapes``: the whole (unsharded) shapes by whole-model name; ``whole_name`` maps the model's names to those (a
    pipeline stage's own numbering). Strict as ``load_state_dict``: a name on either side only is refused. One block
    of one tensor is drawn at a time (about 16 MiB, or one row of dim 0 where a row is larger), so a rank holds its
    shard and a few blocks at most.
    """
    state = {whole_name(name): tensor for name, tensor in model.state_dict().items()}
    if state.keys() != shapes.keys():
        missing, unexpected = sorted(shapes.keys() - state.keys()), sorted(state.keys() - shapes.keys())
        raise ValueError(f"seeded weights do not match the model: missing {missing}, unexpected {unexpected}")
    for name, tensor in state.items():
        fill_seeded_shard(tensor, name, shapes[name], spec, tp_rank, tp_size, seed)
