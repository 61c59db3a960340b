"""Padded batches: prompts of different lengths left-padded to one length, as a real batch of prompts is run.

``Padding.from_attention_mask(attention_mask, start_pos, s)`` reads transformers' ``attention_mask`` (b, t): 1 for
a real token, 0 for padding, over every position so far (t = start_pos + s, the cached ones and the new ones).
It holds what the layers need:

- ``positions`` (b, s): each new token's position in its own row, counting real tokens only (the cumulative sum
  of the mask minus 1, as transformers' ``generate`` derives ``position_ids``), so a left-padded row is rotated
  exactly as the prompt run alone; ``position_ids`` given explicitly win;
- ``key_mask`` (b, t): which keys are real. ``visible`` combines it with a layer's own mask (causal, or its
  sliding window) into (b, s, t): no query sees a padding key, except that a padding query also sees itself, so
  its row stays finite (its output is discarded, but a NaN there would reach real rows through later layers'
  values).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mha_cli.nn.sdpa import causal_mask


@dataclass(frozen=True)
class Padding:
    """Which keys of a batch are real, and each new token's position in its row."""

    key_mask: torch.Tensor
    """(b, t) booleans, True for a real token, over positions 0..t-1."""
    positions: torch.Tensor
    """(b, s) integer positions of the new tokens, padding not counted."""

    @classmethod
    def from_attention_mask(
        cls, attention_mask: torch.Tensor, start_pos: int, s: int, position_ids: torch.Tensor | None = None
    ) -> Padding:
        """From transformers' ``attention_mask`` (b, start_pos + s) and optional ``position_ids`` (b, s)."""
        if attention_mask.dim() != 2 or attention_mask.shape[1] != start_pos + s:
            raise ValueError(
                f"attention_mask must be (batch, {start_pos + s}): one entry per position so far, got"
                f" {tuple(attention_mask.shape)}"
            )
        key_mask = attention_mask.bool()  # (b, t)
        if position_ids is None:
            position_ids = (key_mask.long().cumsum(-1) - 1).clamp(min=0)[:, start_pos:]  # (b, s)
        if position_ids.shape != (attention_mask.shape[0], s):
            raise ValueError(f"position_ids must be (batch, {s}), got {tuple(position_ids.shape)}")
        return cls(key_mask=key_mask, positions=position_ids)

    def visible(self, layer_mask: torch.Tensor | None, start_pos: int, s: int, first_key: int, t: int) -> torch.Tensor:
        """(b, s, t) booleans for s new queries over the t keys at positions [first_key, first_key + t).

        ``layer_mask`` (s, t): the layer's own mask (a sliding window), None for plain causal."""
        device = self.key_mask.device
        own = causal_mask(s, t, device) if layer_mask is None else layer_mask  # (s, t)
        real_keys = self.key_mask[:, first_key : first_key + t]  # (b, t)
        queries = torch.arange(s, device=device)[:, None] + (start_pos - first_key)  # (s, 1): each query's key
        itself = torch.arange(t, device=device)[None, :] == queries  # (s, t)
        return (own[None] & real_keys[:, None, :]) | itself[None]  # (b, s, t)
