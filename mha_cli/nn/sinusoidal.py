"""Fixed sinusoidal position embeddings (CTRL's): no weights, computed for the positions of each call.

Pair k of d_model / 2 turns at the rate 10000^(-2k / d_model): value k is sin(position x rate_k) and value
d_model / 2 + k is cos(position x rate_k) (the sines of every pair first, then the cosines), computed in float32.
"""

from __future__ import annotations

import torch


def sinusoidal_positions(positions: torch.Tensor, width: int) -> torch.Tensor:
    """positions (s,) or (b, s), integers -> their embeddings (s, width) or (b, s, width), float32; ``width`` even."""
    if width % 2:
        raise ValueError(f"sinusoidal positions need an even width, not {width}")
    exponents = torch.arange(0, width, 2, device=positions.device, dtype=torch.float32) / width  # (w/2,)
    rates = 1.0 / torch.pow(torch.tensor(10000.0, device=positions.device), exponents)  # (w/2,)
    angles = positions.to(torch.float32)[..., None] * rates  # (..., s, w/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)  # (..., s, w)
