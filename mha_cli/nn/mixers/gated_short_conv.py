"""LFM2's gated short convolution: the mixer of its ``conv`` layers, a fixed state of the last ``kernel`` inputs.

in_proj splits each token into B, C and x (d_model channels each); the depthwise causal conv runs over B * x and
its output is gated by C: ``y = out_proj(C * conv(B * x))``. No recurrent state: ``MixerState.recurrent`` is empty.
Weight names follow transformers' ``Lfm2ShortConv`` (``in_proj``, ``conv``, ``out_proj``). Padding masks are not
supported.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.nn.mixers.short_conv import ShortConv
from mha_cli.nn.mixers.state import MixerState


class GatedShortConv(nn.Module):
    """[batch, seq, d_model] -> [batch, seq, d_model], keeping the last ``kernel`` inputs of its conv."""

    def __init__(
        self,
        d_model: int,
        *,
        conv_kernel: int,
        bias: bool = False,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.d_model = d_model
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias, **factory)
        self.conv = ShortConv(d_model, conv_kernel, bias=bias, **factory)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias, **factory)

    def new_state(
        self, batch: int, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> MixerState:
        """A zero state: conv [batch, d_model, kernel] in ``dtype`` (default: the weights'), no recurrent part."""
        weight = self.out_proj.weight
        return MixerState.zeros(
            batch, conv_channels=self.d_model, conv_kernel=self.conv.kernel, heads=1, rows=1, cols=0,
            dtype=dtype or weight.dtype, device=device or weight.device,
        )  # fmt: skip

    def forward(self, x: torch.Tensor, state: MixerState) -> torch.Tensor:
        """x: [batch, seq, d_model] (a prefill, a chunk, or one decode token); ``state`` updated in place."""
        b, c, xs = self.in_proj(x).chunk(3, dim=-1)  # [batch, seq, d_model] each
        mixed = self.conv((b * xs).transpose(1, 2), state.conv).transpose(1, 2)  # [batch, seq, d_model]
        return self.out_proj(c * mixed)  # [batch, seq, d_model]
