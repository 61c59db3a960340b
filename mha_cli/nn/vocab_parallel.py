"""The token embedding and LM head split by vocabulary over tensor-parallel ranks (vLLM's and Megatron's layout).

The vocabulary is padded to a multiple of 64 (``core.tensor_parallel.VOCAB_PADDING``) and rank ``r`` of ``tp``
holds rows ``[r * R, (r + 1) * R)`` of it, ``R = core.tensor_parallel.vocab_rows_per_rank``; the padding rows are
zeros. A lookup gives the rank's rows for the ids it holds and zeros for the others, and the reducer sums the
ranks' lookups into the whole embedding. The head's partial logits (b, s, R) are gathered into (b, s, V): each
rank places its block in a zero tensor of the padded width and the same reducer sums them, which is exact (every
other entry is zero) and needs no collective beyond the all-reduce every runner already supplies.

Glossary: b batch, s positions, d d_model, R rows per rank, V the vocabulary (unpadded).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.core.tensor_parallel import vocab_rows_per_rank
from mha_cli.nn.row_parallel import Reduce


class VocabParallelEmbedding(nn.Embedding):
    """Rank ``tp_rank``'s block of the padded embedding; ``forward(ids, reduce)`` returns the whole lookup."""

    def __init__(self, vocab_size: int, d_model: int, *, tp_rank: int, tp_size: int, **factory: Any) -> None:
        rows = vocab_rows_per_rank(vocab_size, tp_size)
        super().__init__(rows, d_model, **factory)
        self.vocab_size = vocab_size
        self.first_row = tp_rank * rows

    def forward(self, input_ids: torch.Tensor, reduce: Reduce) -> torch.Tensor:  # type: ignore[override]
        local = input_ids - self.first_row  # (b, s)
        held = (local >= 0) & (local < self.num_embeddings)  # (b, s)
        x = F.embedding(local.clamp(0, self.num_embeddings - 1), self.weight)  # (b, s, d)
        return reduce(x * held.unsqueeze(-1).to(x.dtype))  # (b, s, d)


def gather_logits(
    partial: torch.Tensor, *, first_row: int, vocab_size: int, tp_size: int, reduce: Reduce
) -> torch.Tensor:
    """The whole logits (b, s, V) from this rank's block ``partial`` (b, s, R) of the padded vocabulary."""
    rows = partial.shape[-1]
    whole = partial.new_zeros(*partial.shape[:-1], rows * tp_size)  # (b, s, R * tp)
    whole[..., first_row : first_row + rows] = partial
    return reduce(whole)[..., :vocab_size]  # (b, s, V)
