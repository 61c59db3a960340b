"""The Mamba-1 mixer (Jamba's Mamba layers, transformers' ``mamba``), in its plain token-by-token recurrent form.

Every one of the ``d_inner`` channels keeps its own fp32 state vector ``h`` of ``d_state`` values. For each token,
with a step ``dt`` (softplus, one per channel, from a rank-``dt_rank`` projection) and the channel's row
``A < 0`` of ``d_state`` decay rates:

    h = exp(dt * A) * h + (dt * B) x;   y = h . C + D * x

x is the channel's conv output (silu), B and C (``d_state`` each, shared by every channel) come from ``x_proj``
with the step's low-rank input. The output is gated by silu(z) and projected back. Jamba RMS-normalises the step's
low-rank input, B and C (``dt_layernorm``, ``b_layernorm``, ``c_layernorm``, with weights) before they are used
(``bcdt_norms``); Falcon-Mamba applies the same norms without weights (``norm_weights`` false). Weight names follow
transformers' ``JambaMambaMixer`` / ``MambaMixer`` / ``FalconMambaMixer`` so a state dict loads as is. Padding masks are not supported.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.nn.mixers.short_conv import ShortConv
from mha_cli.nn.mixers.state import MixerState
from mha_cli.nn.norms import RMSNorm, rms_normed


def rms_normalise(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) over the last dimension, in fp32, cast back: Falcon-Mamba's weightless norm."""
    return rms_normed(x.float(), eps).to(x.dtype)


def selective_scan(
    x: torch.Tensor,
    dt: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    d: torch.Tensor,
    state: torch.Tensor,
) -> torch.Tensor:
    """Run Mamba-1's selective scan over ``seq`` tokens from ``state``, which is updated in place.

    x, dt (after softplus): [batch, seq, channels]; a (negative): [channels, d_state]; b, c: [batch, seq, d_state];
    d: [channels]; state: [batch, channels, d_state], fp32. Returns y [batch, seq, channels] in fp32 (D skip
    included, not gated)."""
    h = state.clone()  # [batch, channels, d_state]
    a32, d32 = a.float(), d.float()
    outputs = []
    for t in range(x.shape[1]):
        x_t, dt_t = x[:, t].float(), dt[:, t].float()  # [batch, channels] each
        decay = (dt_t[..., None] * a32).exp()  # [batch, channels, d_state]
        write = dt_t[..., None] * b[:, t].float()[:, None, :] * x_t[..., None]  # [batch, channels, d_state]
        h = decay * h + write
        read = (h * c[:, t].float()[:, None, :]).sum(dim=-1)  # [batch, channels]
        outputs.append(read + d32 * x_t)
    state.copy_(h)
    return torch.stack(outputs, dim=1)  # [batch, seq, channels]


class Mamba1(nn.Module):
    """A Mamba-1 mixer: [batch, seq, d_model] -> [batch, seq, d_model] with a fixed state per sequence."""

    def __init__(
        self,
        d_model: int,
        *,
        d_inner: int,
        d_state: int,
        dt_rank: int,
        conv_kernel: int,
        conv_bias: bool = True,
        in_proj_bias: bool = False,
        out_proj_bias: bool = False,
        bcdt_norms: bool = False,
        norm_weights: bool = True,
        eps: float = 1e-6,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.d_inner, self.d_state, self.dt_rank = d_inner, d_state, dt_rank
        factory = {"dtype": dtype, "device": device}
        self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=in_proj_bias, **factory)  # x, then the gate z
        self.conv1d = ShortConv(d_inner, conv_kernel, bias=conv_bias, **factory)
        self.x_proj = nn.Linear(d_inner, dt_rank + 2 * d_state, bias=False, **factory)  # dt (low rank), B, C
        self.dt_proj = nn.Linear(dt_rank, d_inner, bias=True, **factory)
        self.A_log = nn.Parameter(torch.empty(d_inner, d_state, **factory))
        self.D = nn.Parameter(torch.empty(d_inner, **factory))
        self.out_proj = nn.Linear(d_inner, d_model, bias=out_proj_bias, **factory)
        self.bcdt_norms, self.norm_weights, self.eps = bcdt_norms, norm_weights, eps
        if bcdt_norms and norm_weights:  # Jamba
            self.dt_layernorm = RMSNorm(dt_rank, eps, **factory)
            self.b_layernorm = RMSNorm(d_state, eps, **factory)
            self.c_layernorm = RMSNorm(d_state, eps, **factory)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        """The layer's own parameters (the projections, conv and norms initialise themselves): A = 1..d_state in
        every channel (A_log its log), D 1, dt_proj's weight uniform in +-dt_rank^-0.5 and its bias the inverse softplus
        of steps drawn log-uniform in [0.001, 0.1], as Mamba draws them."""
        a = torch.arange(1, self.d_state + 1, dtype=torch.float32)  # [d_state]
        self.A_log.copy_(a.log().expand(self.d_inner, -1))
        self.D.fill_(1.0)
        self.dt_proj.weight.uniform_(-(self.dt_rank**-0.5), self.dt_rank**-0.5)
        dt = torch.empty(self.d_inner).uniform_(math.log(1e-3), math.log(1e-1)).exp()  # [d_inner]: the steps
        self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(bias) == dt

    def new_state(
        self, batch: int, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> MixerState:
        """A zero state: conv [batch, d_inner, conv_kernel] in ``dtype`` (default: the weights'), recurrent
        [batch, d_inner, 1, d_state] in fp32 (one state vector per channel)."""
        weight = self.out_proj.weight
        return MixerState.zeros(
            batch, conv_channels=self.d_inner, conv_kernel=self.conv1d.kernel, heads=self.d_inner, rows=1,
            cols=self.d_state, dtype=dtype or weight.dtype, device=device or weight.device,
        )  # fmt: skip

    def forward(self, x: torch.Tensor, state: MixerState) -> torch.Tensor:
        """x: [batch, seq, d_model] (a prefill, a chunk of one, or one decode token); ``state`` updated in place."""
        xs, z = self.in_proj(x).chunk(2, dim=-1)  # [batch, seq, d_inner] each
        xs = F.silu(self.conv1d(xs.transpose(1, 2), state.conv)).transpose(1, 2)  # [batch, seq, d_inner]
        dt, b, c = self.x_proj(xs).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        if self.bcdt_norms and self.norm_weights:
            dt, b, c = self.dt_layernorm(dt), self.b_layernorm(b), self.c_layernorm(c)
        elif self.bcdt_norms:
            dt, b, c = (rms_normalise(t, self.eps) for t in (dt, b, c))
        dt = F.softplus(self.dt_proj(dt).float())  # [batch, seq, d_inner]
        a = -self.A_log.float().exp()  # [d_inner, d_state]
        y = selective_scan(xs, dt, a, b, c, self.D, state.recurrent[:, :, 0])  # [batch, seq, d_inner], fp32
        y = y * F.silu(z.float())
        return self.out_proj(y.to(x.dtype))  # [batch, seq, d_model]
