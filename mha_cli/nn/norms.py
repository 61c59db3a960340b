"""The norms a decoder layer uses: RMSNorm (Llama convention) and LayerNorm.

``RMSNorm`` follows the Hugging Face Llama convention: normalise in float32, cast back to the input's
dtype, then multiply by the weight. (``torch.nn.RMSNorm`` multiplies before the cast, which differs in
bf16.)
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.core.schemas import NormType


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dimension; ``weight`` starts at ones."""

    def __init__(
        self,
        width: int,
        eps: float = 1e-5,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width, dtype=dtype, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()  # (..., w)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., w)
        return self.weight * normed.to(x.dtype)  # (..., w)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


def make_norm(
    kind: NormType,
    width: int,
    eps: float,
    *,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> nn.Module:
    """``RMSNorm`` (weight) or ``nn.LayerNorm`` (weight and bias) of ``width`` values."""
    if kind == "rmsnorm":
        return RMSNorm(width, eps, dtype=dtype, device=device)
    return nn.LayerNorm(width, eps=eps, dtype=dtype, device=device)
