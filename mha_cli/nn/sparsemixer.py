"""PhiMoE's sparsemixer routing at inference: experts picked one at a time, each weighted by a softmax over the
logits close to the best remaining one.

Round r (of k): the best remaining logit m is the chosen expert; the logits l with (m - l) / max(|l|, m) above
2 x ``jitter_eps`` are masked out, as are the experts already chosen; the chosen expert's weight is its softmax
probability among those left. Shapes: ``n`` tokens, ``E`` experts, ``k`` experts per token.
"""

from __future__ import annotations

import torch


def sparsemixer_route(
    logits: torch.Tensor, jitter_eps: float, top_k: int, forced: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """logits (n, E) -> (weights (n, k), expert indices (n, k)), in the order chosen; ``forced`` (n, k) replaces
    each round's pick (a replayed routing), the masks still from the best remaining logit."""
    remaining = logits  # (n, E): the chosen experts at -inf
    weights, indices = [], []
    for r in range(top_k):
        best, chosen = remaining.max(dim=-1, keepdim=True)  # (n, 1) each
        if forced is not None:
            chosen = forced[:, r : r + 1]  # (n, 1)
        far = (best - logits) / logits.abs().clamp(min=best) > 2 * jitter_eps  # (n, E)
        probabilities = remaining.masked_fill(far, float("-inf")).softmax(dim=-1)  # (n, E)
        weights.append(probabilities.gather(-1, chosen))  # (n, 1)
        indices.append(chosen)
        remaining = remaining.scatter(-1, chosen, float("-inf"))  # (n, E)
    return torch.cat(weights, dim=-1), torch.cat(indices, dim=-1)  # (n, k) each
