"""Depthwise causal conv1d with a rolling state: the short convolution in front of Gated DeltaNet, Mamba-2 and KDA.

Every channel ``c`` convolves its own inputs with its own ``kernel`` taps (inputs before the first token are zero):
``y[c, t] = bias[c] + sum_j weight[c, 0, j] * x[c, t - (kernel - 1) + j]``.
The state keeps the last ``kernel`` inputs of every channel, as transformers' cache does; a step needs only
``kernel - 1`` of them besides the new token (vLLM keeps ``kernel - 1``), so the oldest kept input is never read.
Products and sums are taken in fp32 and cast back to the input's dtype (as ``F.conv1d`` accumulates in bf16 too).
"""

from __future__ import annotations

import math

import torch
from torch import nn


class ShortConv(nn.Module):
    """``channels`` independent causal filters of ``kernel`` taps; weight laid out as ``nn.Conv1d(groups=channels)``."""

    def __init__(
        self,
        channels: int,
        kernel: int,
        *,
        bias: bool,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.channels = channels
        self.kernel = kernel
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel, dtype=dtype, device=device))
        self.bias = nn.Parameter(torch.empty(channels, dtype=dtype, device=device)) if bias else None
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        """Taps uniform in +-1/sqrt(kernel) (``nn.Conv1d``'s bound for one input channel), bias 0."""
        bound = 1 / math.sqrt(self.kernel)
        self.weight.uniform_(-bound, bound)
        if self.bias is not None:
            self.bias.zero_()

    def new_state(self, batch: int, dtype: torch.dtype, device: torch.device | str | None = None) -> torch.Tensor:
        """An all-zero conv state: [batch, channels, kernel] in the activation dtype."""
        return torch.zeros(batch, self.channels, self.kernel, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """Convolve ``seq`` new inputs after the ones kept in ``state``, which then holds the last ``kernel`` inputs.

        x: [batch, channels, seq]; state: [batch, channels, kernel], updated in place. Returns [batch, channels, seq]
        in x's dtype, before any activation (prefill from a zero state, chunked prefill and decode alike)."""
        inputs = torch.cat([state, x.to(state.dtype)], dim=-1)  # [batch, channels, kernel + seq]
        windows = inputs[..., 1:].unfold(
            -1, self.kernel, 1
        )  # [batch, channels, seq, kernel]: taps ending at each token
        taps = self.weight[:, 0]  # [channels, kernel]
        y = (windows.float() * taps.float()[None, :, None, :]).sum(dim=-1)  # [batch, channels, seq], fp32
        if self.bias is not None:
            y = y + self.bias.float()[None, :, None]
        state.copy_(inputs[..., -self.kernel :])
        return y.to(x.dtype)

    def step(self, x: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """One token: roll ``x`` into ``state`` and apply the taps to the kept window.

        x: [batch, channels]; state: [batch, channels, kernel], updated in place. Returns [batch, channels]."""
        state.copy_(torch.cat([state[..., 1:], x[..., None].to(state.dtype)], dim=-1))  # [batch, channels, kernel]
        taps = self.weight[:, 0]  # [channels, kernel]
        y = (state.float() * taps.float()[None]).sum(dim=-1)  # [batch, channels], fp32
        if self.bias is not None:
            y = y + self.bias.float()[None]
        return y.to(x.dtype)
