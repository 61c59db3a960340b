"""The gated RMSNorm the mixers end with: normalise the mixer's output per group, multiply by silu(gate).

Gated DeltaNet (Qwen3-Next) normalises each value head, then gates (``norm_before_gate``); Mamba-2 gates first,
then normalises each of its ``n_groups`` groups of channels; KDA (Kimi-Linear) normalises each head, then gates by
sigmoid(gate) (``gate_activation``) and applies its weight in fp32 before casting back (``weight_in_fp32``). The
statistics are taken in fp32.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn


class GatedRMSNorm(nn.Module):
    """RMS-normalise groups of ``group_size`` channels of the last dimension and gate by silu(gate) (or
    ``gate_activation``)."""

    def __init__(
        self,
        width: int,
        eps: float,
        *,
        group_size: int | None = None,
        norm_before_gate: bool,
        gate_activation: Literal["silu", "sigmoid"] = "silu",
        weight_in_fp32: bool = False,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.eps = eps
        self.group_size = group_size or width
        self.norm_before_gate = norm_before_gate
        self.activate = F.silu if gate_activation == "silu" else torch.sigmoid
        self.weight_in_fp32 = weight_in_fp32
        self.weight = nn.Parameter(torch.ones(width, dtype=dtype, device=device))

    @torch.no_grad()
    def init_weights(self) -> None:
        """Unit weight (``build_model``'s ``_init_weights`` calls it after ``to_empty``)."""
        self.weight.fill_(1.0)

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """x, gate: [..., width]. Returns [..., width] in x's dtype."""
        x32 = x.float()  # [..., width]
        if not self.norm_before_gate:
            x32 = x32 * self.activate(gate.float())
        groups = x32.unflatten(-1, (-1, self.group_size))  # [..., n_groups, group_size]
        groups = groups * torch.rsqrt(groups.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        normed = groups.flatten(-2)  # [..., width], fp32
        y = self.weight.float() * normed if self.weight_in_fp32 else self.weight * normed.to(x.dtype)  # [..., width]
        if self.norm_before_gate:
            y = y * self.activate(gate.float())
        return y.to(x.dtype)
