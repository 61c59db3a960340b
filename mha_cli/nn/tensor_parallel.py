"""Slice a whole model's weights into one tensor-parallel rank's shard, and seed-derived weights.

The layout is ``core.tensor_parallel``'s (Megatron and vLLM style; that module counts it):

- column-parallel (split along the output rows, dim 0, in ``tp`` contiguous blocks): q_proj, q_b_proj,
  kv_b_proj (heads are contiguous row blocks), MLP gate_proj/up_proj of dense, shared and unfused experts;
- KV heads: k_proj/v_proj rows, the rank's block of n_kv / tp heads, or the single head
  ``rank // (tp / n_kv)`` replicated when tp > n_kv;
- row-parallel (split along the input columns, the last dim): o_proj, every down_proj;
- fused experts (transformers 5): ``experts.gate_up_proj`` (E, 2 * d_ff, d) and its bias (E, 2 * d_ff) take
  the rank's block of the gate half and of the up half; ``experts.down_proj`` (E, d, d_ff) its block of the
  last dim (its bias, (E, d), is replicated);
- the token embedding and the LM head: the rank's block of rows of the vocabulary padded to a multiple of 64
  (``mha_cli.nn.vocab_parallel.vocab_block``, the rows ``core.tensor_parallel.vocab_rows_per_rank`` counts);
- everything else (learned positions, norms, o_proj/down_proj biases, MLA down projections and their
  norms, routers) is replicated.

``shard_state_dict(full, spec, rank, tp)`` returns tensors that ``build_model(spec, tp_rank=rank,
tp_size=tp).load_state_dict(..., strict=True)`` accepts. ``seeded_tensor`` makes the same full weight
on every process from a seed and the tensor's name, so ranks need not exchange weights.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping

import torch

from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import kv_head_range
from mha_cli.nn.vocab_parallel import vocab_block

_COLUMN_PARALLEL = re.compile(r"\.(q_proj|q_b_proj|kv_b_proj|gate_proj|up_proj)\.(weight|bias)$")
_KV_HEADS = re.compile(r"\.self_attn\.(k_proj|v_proj)\.(weight|bias)$")
_ROW_PARALLEL = re.compile(r"\.(o_proj|down_proj)\.weight$")
_FUSED_GATE_UP = re.compile(r"\.experts\.gate_up_proj(_bias)?$")
_FUSED_DOWN = re.compile(r"\.experts\.down_proj$")
_VOCAB = re.compile(r"^(model\.embed_tokens\.weight|lm_head\.(weight|bias))$")  # the head's bias: GPT-J's, CTRL's
_NORM = re.compile(r"norm\.weight$")


def _block(tensor: torch.Tensor, dim: int, rank: int, tp: int, name: str) -> torch.Tensor:
    """The rank's contiguous block of ``tensor`` along ``dim`` (size / tp elements)."""
    size = tensor.shape[dim]
    if size % tp:
        raise ValueError(f"{name}: dim {dim} ({size}) is not divisible by tp ({tp})")
    width = size // tp
    return tensor.narrow(dim, rank * width, width)


def shard_tensor(name: str, tensor: torch.Tensor, spec: ModelSpec, tp_rank: int, tp_size: int) -> torch.Tensor:
    """The part of the full tensor ``name`` that rank ``tp_rank`` of ``tp_size`` holds (a copy, contiguous)."""
    if not 0 <= tp_rank < tp_size:
        raise ValueError(f"tp_rank ({tp_rank}) must lie in [0, tp_size={tp_size})")
    if tp_size == 1:
        return tensor.clone()
    if _VOCAB.search(name):
        part = vocab_block(tensor, spec.vocab_size, tp_rank, tp_size)  # (R, d)
    elif spec.mla is None and _KV_HEADS.search(name):
        head_dim = spec.dim_per_head
        first, last = kv_head_range(spec.kv_heads, tp_rank, tp_size)
        part = tensor.narrow(0, first * head_dim, (last - first) * head_dim)  # (kv_r * h_d, ...)
    elif _COLUMN_PARALLEL.search(name):
        part = _block(tensor, 0, tp_rank, tp_size, name)  # (out / tp, in)
    elif _ROW_PARALLEL.search(name) or _FUSED_DOWN.search(name):
        part = _block(tensor, tensor.dim() - 1, tp_rank, tp_size, name)  # (..., out, in / tp)
    elif _FUSED_GATE_UP.search(name):
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
