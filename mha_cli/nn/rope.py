"""Rotary position embedding (RoPE), rotate-half convention (Llama / Hugging Face layout).

Used by MLA's decoupled RoPE key: the first and second halves of a vector form the (real, imag)
pairs that rotate by position * base^(-2i / width).
"""

from __future__ import annotations

import torch


def rope_angles(positions: torch.Tensor, width: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (s, width) for integer ``positions`` (s,); ``width`` must be even."""
    if width % 2:
        raise ValueError(f"RoPE width ({width}) must be even")
    inv_freq = base ** (-torch.arange(0, width, 2, device=positions.device, dtype=torch.float32) / width)  # (w/2,)
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]  # (s, w/2)
    angles = torch.cat([angles, angles], dim=-1)  # (s, w)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate x (..., s, w) by its positions (s,); returns the same shape and dtype."""
    width = x.shape[-1]
    if width == 0:
        return x
    cos, sin = rope_angles(positions, width, base)  # (s, w) each
    first, second = x.float().chunk(2, dim=-1)  # (..., s, w/2) each
    rotated = torch.cat([-second, first], dim=-1)  # (..., s, w)
    return (x.float() * cos + rotated * sin).to(x.dtype)  # (..., s, w)
