"""xIELU (Apertus's MLP activation): a piecewise activation with two learned scalars a layer.

x > 0: alpha_p x^2 + beta x; x <= 0: alpha_n (expm1(min(x, eps)) - x) + beta x, with alpha_p = softplus(a_p) and
alpha_n = beta + softplus(a_n) from the stored ``alpha_p`` (a_p) and ``alpha_n`` (a_n); ``beta`` (0.5) and ``eps``
(-1e-6) are stored buffers. Names as transformers' (``mlp.act_fn.alpha_p`` ...).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

ALPHA_P, ALPHA_N, BETA, EPS = 0.8, 0.8, 0.5, -1e-6
"""transformers' initial values (the activation's alphas as they act, beta and eps)."""


def _inverse_softplus(y: float) -> float:
    return math.log(math.expm1(y))


class XIELU(nn.Module):
    """``forward(x)``: the activation elementwise, any shape."""

    def __init__(self, *, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.alpha_p = nn.Parameter(torch.empty(1, **factory))
        self.alpha_n = nn.Parameter(torch.empty(1, **factory))
        self.register_buffer("beta", torch.empty((), **factory))
        self.register_buffer("eps", torch.empty((), **factory))
        if self.alpha_p.device.type != "meta":
            self.init_weights()

    def init_weights(self) -> None:
        """transformers' initial activation (alpha_p 0.8, alpha_n 0.8, beta 0.5, eps -1e-6)."""
        with torch.no_grad():
            self.alpha_p.fill_(_inverse_softplus(ALPHA_P))
            self.alpha_n.fill_(_inverse_softplus(ALPHA_N - BETA))
            self.beta.fill_(BETA)
            self.eps.fill_(EPS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        alpha_p = F.softplus(self.alpha_p)
        alpha_n = self.beta + F.softplus(self.alpha_n)
        negative = (torch.expm1(torch.minimum(x, self.eps)) - x) * alpha_n
        return torch.where(x > 0, alpha_p * x * x, negative) + self.beta * x
