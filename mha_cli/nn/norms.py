"""The norms a decoder layer uses: RMSNorm (Llama convention) and LayerNorm (with a weight offset or none).

``RMSNorm`` follows the Hugging Face Llama convention: normalise in float32, cast back to the input's
dtype, then multiply by the weight. (``torch.nn.RMSNorm`` multiplies before the cast, which differs in
bf16.) With a weight ``offset`` (Gemma's norms multiply by 1 + weight) it follows Gemma's: the product
normed * (offset + weight) is taken in float32, then cast back.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.core.schemas import NormType


def rms_normed(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) over the last dimension (..., w), in x's dtype (call it with fp32)."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


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
        normed = rms_normed(x.float(), self.eps)  # (..., w), fp32
        if self.offset:  # Gemma: the product in float32, then the cast
            return (normed * (self.offset + self.weight.float())).to(x.dtype)  # (..., w)
        return self.weight * normed.to(x.dtype)  # (..., w)

    def extra_repr(self) -> str:
        offset = f", offset={self.offset}" if self.offset else ""
        return f"{self.weight.shape[0]}, eps={self.eps}{offset}"


class LayerNorm(nn.Module):
    """LayerNorm whose weight takes an ``offset`` (Nemotron's LayerNorm1P: (1 + weight), with a bias), or with no
    weight and no bias at all (``weights`` false: OLMo's, normalised in float32 and cast back)."""

    def __init__(
        self,
        width: int,
        eps: float = 1e-5,
        *,
        offset: float = 0.0,
        bias: bool = True,
        weights: bool = True,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.width, self.eps, self.offset = width, eps, offset
        factory = {"dtype": dtype, "device": device}
        self.weight = nn.Parameter(torch.full((width,), 1.0 - offset, **factory)) if weights else None
        self.bias = nn.Parameter(torch.zeros(width, **factory)) if weights and bias else None

    def init_weights(self) -> None:
        """The identity: weights 1 - offset, biases 0."""
        with torch.no_grad():
            if self.weight is not None:
                self.weight.fill_(1.0 - self.offset)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight is None:  # OLMo: no parameters, float32 arithmetic
            return F.layer_norm(x.float(), (self.width,), eps=self.eps).to(x.dtype)  # (..., w)
        return F.layer_norm(x, (self.width,), self.weight + self.offset, self.bias, self.eps)  # (..., w)

    def extra_repr(self) -> str:
        return f"{self.width}, eps={self.eps}, offset={self.offset}, weights={self.weight is not None}"


def make_norm(
    kind: NormType,
    width: int,
    eps: float,
    *,
    offset: float = 0.0,
    bias: bool = True,
    weights: bool = True,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> nn.Module:
    """``RMSNorm`` (weight, plus ``offset`` where it multiplies) or ``nn.LayerNorm`` (weight and, with ``bias``,
    bias) of ``width`` values; a LayerNorm with an offset or without ``weights`` is ours (``LayerNorm``)."""
    if kind == "rmsnorm":
        if not weights:
            raise ValueError("an RMSNorm without weights is not built")
        return RMSNorm(width, eps, offset=offset, dtype=dtype, device=device)
    if offset or not weights:
        return LayerNorm(width, eps, offset=offset, bias=bias, weights=weights, dtype=dtype, device=device)
    return nn.LayerNorm(width, eps=eps, bias=bias, dtype=dtype, device=device)
