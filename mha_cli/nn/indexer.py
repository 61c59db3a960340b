"""DeepSeek-V3.2's lightning indexer, its weights only: each query's top ``index_topk`` keys, by the indexer's own
scores, are the keys its MLA attends to.

Up to ``index_topk`` keys a query attends to all of them, and the indexer changes nothing: the decoder's dense MLA
is the model's attention. These weights are built so that a checkpoint loads strictly and is counted as it is
(``core.params.indexer_params``); the top-k selection itself is not computed, so past ``index_topk`` keys the
decoder attends densely (its family's ``differences`` say so). Names as transformers': ``wq_b`` (from the q
latent), ``wk``, ``k_norm`` (a LayerNorm with bias), ``weights_proj``.
"""

from __future__ import annotations

import torch
from torch import nn


class LightningIndexer(nn.Module):
    """The indexer's projections: q latent (q_lora_rank) -> heads x head_dim, d_model -> one head_dim key (normed),
    d_model -> one weight per head. Has no forward: see the module docstring."""

    def __init__(
        self,
        d_model: int,
        q_lora_rank: int,
        n_heads: int,
        head_dim: int,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.wq_b = nn.Linear(q_lora_rank, n_heads * head_dim, bias=False, **factory)
        self.wk = nn.Linear(d_model, head_dim, bias=False, **factory)
        self.k_norm = nn.LayerNorm(head_dim, eps=1e-6, **factory)
        self.weights_proj = nn.Linear(d_model, n_heads, bias=False, **factory)
