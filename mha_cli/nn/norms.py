"""The norms a decoder layer uses: RMSNorm (Llama convention) and LayerNorm.

``RMSNorm`` follows the Hugging Face Llama convention: normalise in float32, cast back to the input's
dtype, then multiply by the weight. (``torch.nn.RMSNorm`` multiplies before the cast, which differs in
bf16.) With a weight ``offset`` (Gemma's norms multiply by 1 + weight) it follows Gemma's: the product
normed * (offset + weight) is taken in float32, then cast back.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.core.schemas import NormType


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * (offset + weight) over the last dimension; a fresh norm is the identity
    (``weight`` 1 - offset: ones for Llama's, zeros for Gemma's)."""

    def __init__(
        self,
        width: int,
        eps: float = 1e-5,
        *,
        offset: float = 0.0,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.eps = eps
        self.offset = offset
        self.weight = nn.Parameter(torch.full((width,), 1.0 - offset, dtype=dtype, device=device))

    def init_weights(self) -> None:
        """The identity: every weight 1 - offset."""
        with torch.no_grad():
            self.weight.fill_(1.0 - self.offset)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()  # (..., w)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., w)
        if self.offset:  # Gemma: the product in float32, then the cast
            return (normed * (self.offset + self.weight.float())).to(x.dtype)  # (..., w)
        return self.weight * normed.to(x.dtype)  # (..., w)

    def extra_repr(self) -> str:
        offset = f", offset={self.offset}" if self.offset else ""
        return f"{self.weight.shape[0]}, eps={self.eps}{offset}"


def make_norm(
    kind: NormType,
    width: int,
    eps: float,
    *,
    offset: float = 0.0,
    bias: bool = True,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> nn.Module:
    """``RMSNorm`` (weight, plus ``offset`` where it multiplies) or ``nn.LayerNorm`` (weight and, with ``bias``,
    bias) of ``width`` values."""
    if kind == "rmsnorm":
        return RMSNorm(width, eps, offset=offset, dtype=dtype, device=device)
    if offset:
        raise ValueError(f"a weight offset ({offset}) applies to RMSNorm, not to {kind}")
    return nn.LayerNorm(width, eps=eps, bias=bias, dtype=dtype, device=device)
