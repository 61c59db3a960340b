"""A tiny decoder-only language model built from a ``ModelSpec``, with any attention of ``mha_cli.nn``.

token embedding + learned positions -> n_layers x [norm, attention, norm, MLP] (pre-norm, residual)
-> final norm -> LM head. Its parameters are exactly what ``mha_cli.core.params.count_params`` counts
for the same spec (rmsnorm or layernorm, gated or plain MLP, tied or untied head, learned positions),
so the formula and the instantiated model can be compared. MoE specs are not built.

Shapes: ``b`` batch, ``s`` tokens, ``d`` d_model, ``v`` vocab_size, ``f`` d_ff.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.core.schemas import MlaCacheMode, ModelSpec
from mha_cli.nn import KVCache, LatentCache, build_attention
from mha_cli.nn.mlp import MLP

INIT_STD = 0.02
"""Standard deviation of every linear and embedding weight at initialisation (GPT-2's)."""


def make_norm(spec: ModelSpec, device: torch.device | str | None) -> nn.Module:
    if spec.norm == "rmsnorm":
        return nn.RMSNorm(spec.d_model, eps=1e-6, device=device)
    return nn.LayerNorm(spec.d_model, eps=1e-5, device=device)


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(norm(x)), then + mlp(norm(x))."""

    def __init__(self, spec: ModelSpec, mla_mode: MlaCacheMode, device: torch.device | str | None = None) -> None:
        super().__init__()
        if spec.n_norms_per_layer != 2:
            raise ValueError(f"TinyLM builds pre-norm blocks (2 norms per layer), not {spec.n_norms_per_layer}")
        self.attn_norm = make_norm(spec, device)
        self.attention = build_attention(spec, mla_mode=mla_mode, device=device)
        self.mlp_norm = make_norm(spec, device)
        self.mlp = MLP(spec.d_model, spec.d_ff, gated=spec.mlp == "gated", bias=spec.mlp_bias, device=device)

    def forward(self, x: torch.Tensor, cache: KVCache | LatentCache | None, start_pos: int) -> torch.Tensor:
        x = x + self.attention(self.attn_norm(x), cache, start_pos)  # (b, s, d)
        return x + self.mlp(self.mlp_norm(x))  # (b, s, d)


class TinyLM(nn.Module):
    """A decoder LM for ``spec``; ``forward(tokens, caches=None, start_pos=0)`` returns logits (b, s, v).

    ``spec.position_embeddings`` is the longest sequence (learned absolute positions; 0 = none,
    for MLA specs whose decoupled RoPE key carries position alone).
    """

    def __init__(
        self, spec: ModelSpec, *, mla_mode: MlaCacheMode = "absorbed", device: torch.device | str | None = None
    ) -> None:
        super().__init__()
        if spec.moe is not None:
            raise ValueError("TinyLM does not build mixture-of-experts MLPs")
        if spec.qk_norm:
            raise ValueError("TinyLM's attention modules have no per-head q/k norms")
        self.spec = spec
        self.tok_embedding = nn.Embedding(spec.vocab_size, spec.d_model, device=device)
        self.pos_embedding = (
            nn.Embedding(spec.position_embeddings, spec.d_model, device=device) if spec.position_embeddings else None
        )
        self.blocks = nn.ModuleList(Block(spec, mla_mode, device) for _ in range(spec.n_layers))
        self.final_norm = make_norm(spec, device)
        self.lm_head = (
            None if spec.tied_embeddings else nn.Linear(spec.d_model, spec.vocab_size, bias=False, device=device)
        )
        self.apply(_init_weights)

    def forward(
        self, tokens: torch.Tensor, caches: list[KVCache | LatentCache] | None = None, start_pos: int = 0
    ) -> torch.Tensor:
        s = tokens.shape[1]
        x = self.tok_embedding(tokens)  # (b, s, d)
        if self.pos_embedding is not None:
            if start_pos + s > self.pos_embedding.num_embeddings:
                raise ValueError(
                    f"positions up to {start_pos + s} exceed the {self.pos_embedding.num_embeddings} learned"
                )
            positions = torch.arange(start_pos, start_pos + s, device=tokens.device)  # (s,)
            x = x + self.pos_embedding(positions)  # (b, s, d)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i], start_pos)  # (b, s, d)
        x = self.final_norm(x)  # (b, s, d)
        head = self.tok_embedding.weight if self.lm_head is None else self.lm_head.weight  # (v, d)
        return x @ head.T  # (b, s, v)

    def new_cache(
        self, batch: int, max_seq: int, dtype: torch.dtype | str | None = None
    ) -> list[KVCache | LatentCache]:
        """One pre-allocated cache per layer, each the kind its attention module uses."""
        return [block.attention.new_cache(batch, max_seq, dtype=dtype) for block in self.blocks]

    def attention_modules(self) -> list[nn.Module]:
        return [block.attention for block in self.blocks]


def n_parameters(module: nn.Module) -> int:
    """Values in the module's parameters (what ``count_params`` predicts)."""
    return sum(p.numel() for p in module.parameters())


def cache_nbytes(caches: list[KVCache | LatentCache]) -> int:
    """Exact bytes of all layers' cache tensors."""
    return sum(cache.nbytes for cache in caches)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=INIT_STD)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
