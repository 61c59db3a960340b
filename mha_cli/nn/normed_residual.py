"""MiniMax's residual: each sublayer adds to its normed input, not to the block's input, both terms scaled.

    h = input_layernorm(x);           x' = alpha_attn * h + beta_attn * attention(h)
    h' = post_attention_layernorm(x'); out = alpha_mlp * h' + beta_mlp * mlp(h')

The attention pair is the softmax layers' or the lightning layers' (``NormedResidual.attention`` / ``linear``).
transformers' ``MiniMaxDecoderLayer`` always takes the residual after the norm (the remote code's ``postnorm:
true``, which every MiniMax checkpoint sets); with every factor 1 it still differs from Llama's block.
"""

from __future__ import annotations

from mha_cli.core.schemas import NormedResidual

Pair = tuple[float, float]
"""(alpha, beta): the factor on the normed residual, the factor on the sublayer's output."""


def residual_scales(normed: NormedResidual | None, *, linear: bool) -> tuple[Pair, Pair] | None:
    """(the attention sublayer's pair, the MLP's) of a block whose mixer is ``linear`` or softmax attention; None
    without a normed residual (Llama's x + sublayer(norm(x)))."""
    if normed is None:
        return None
    return (normed.linear if linear else normed.attention), normed.mlp
