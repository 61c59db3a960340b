"""The Mamba-2 mixer (Falcon-H1, Granite-4.0-H, Nemotron-H), in its plain token-by-token recurrent form (SSD).

Per head the layer keeps a fp32 matrix ``h`` of [head_dim, d_state]. For each token, with a step ``dt`` (softplus,
one per head) and the head's scalar ``A < 0``:

    h = exp(dt * A) * h + dt * x B^T;   y = h C + D * x

x is the head's slice of the conv output, B and C (d_state each) come from the head's group (``n_heads / n_groups``
heads share one). The output is gated by silu(z), RMS-normalised per group, and projected back. Weight names follow
transformers' ``Mamba2Mixer`` so a state dict loads as is. Padding masks are not supported. Falcon-H1's options:
``norm=False`` (no gated norm: y * silu(z)), ``norm_before_gate`` (normalise, then gate), ``projection_scales``
(fixed factors on in_proj's z, x, B, C and dt parts, its ``ssm_multipliers``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.nn.mixers.gated_norm import GatedRMSNorm
from mha_cli.nn.mixers.short_conv import ShortConv
from mha_cli.nn.mixers.state import MixerState


def ssd_recurrence(
    x: torch.Tensor,
    dt: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    d: torch.Tensor,
    state: torch.Tensor,
) -> torch.Tensor:
    """Run the selective state space recurrence over ``seq`` tokens from ``state``, which is updated in place.

    x: [batch, seq, heads, head_dim]; dt (after softplus): [batch, seq, heads]; a (negative), d: [heads];
    b, c: [batch, seq, heads, d_state] (already expanded from groups to heads); state: [batch, heads, head_dim,
    d_state], fp32. Returns y [batch, seq, heads, head_dim] in fp32."""
    h = state.clone()  # [batch, heads, head_dim, d_state]
    outputs = []
    for t in range(x.shape[1]):
        x_t, dt_t = x[:, t].float(), dt[:, t].float()  # [batch, heads, head_dim], [batch, heads]
        decay = (dt_t * a.float()).exp()[..., None, None]  # [batch, heads, 1, 1]
        write = (dt_t[..., None] * x_t)[..., :, None] * b[:, t].float()[..., None, :]  # [b, heads, head_dim, d_state]
        h = decay * h + write
        y_t = torch.einsum("bhpn,bhn->bhp", h, c[:, t].float())  # [batch, heads, head_dim]
        outputs.append(y_t + d.float()[:, None] * x_t)
    state.copy_(h)
    return torch.stack(outputs, dim=1)  # [batch, seq, heads, head_dim]


class Mamba2(nn.Module):
    """Mamba-2 mixer: [batch, seq, d_model] -> [batch, seq, d_model] with a fixed state."""

    def __init__(
        self,
        d_model: int,
        *,
        n_heads: int,
        head_dim: int,
        d_state: int,
        n_groups: int,
        conv_kernel: int,
        eps: float = 1e-5,
        bias: bool = False,
        out_bias: bool | None = None,
        conv_bias: bool = True,
        dt_limit: tuple[float, float] = (0.0, float("inf")),
        norm: bool = True,
        norm_before_gate: bool = False,
        projection_scales: Sequence[float] | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if n_heads % n_groups:
            raise ValueError(f"n_heads ({n_heads}) must be a multiple of n_groups ({n_groups})")
        self.n_heads, self.head_dim, self.d_state, self.n_groups = n_heads, head_dim, d_state, n_groups
        self.d_inner = n_heads * head_dim  # channels of x (and of the gate z)
        self.conv_dim = self.d_inner + 2 * n_groups * d_state  # the conv runs over x, B and C
        self.dt_limit = dt_limit
        factory = {"dtype": dtype, "device": device}
        self.in_proj = nn.Linear(d_model, self.d_inner + self.conv_dim + n_heads, bias=bias, **factory)
        self.conv1d = ShortConv(self.conv_dim, conv_kernel, bias=conv_bias, **factory)
        self.dt_bias = nn.Parameter(torch.empty(n_heads, **factory))
        self.A_log = nn.Parameter(torch.empty(n_heads, **factory))
        self.D = nn.Parameter(torch.empty(n_heads, **factory))
        group_size = self.d_inner // n_groups
        if norm:
            self.norm = GatedRMSNorm(
                self.d_inner, eps, group_size=group_size, norm_before_gate=norm_before_gate, **factory
            )
        self.has_norm = norm
        self.projection_scales = projection_scales
        out_bias = bias if out_bias is None else out_bias  # Falcon-H1's out_proj bias is its own field
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=out_bias, **factory)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        """The layer's own parameters (the projections, conv and norm initialise themselves): A = 1..heads (A_log its
        log), D 1, dt_bias the inverse softplus of steps drawn log-uniform in [0.001, 0.1] (Mamba-2's defaults)."""
        self.A_log.copy_(torch.arange(1, self.n_heads + 1, dtype=torch.float32).log())
        self.D.fill_(1.0)
        dt = torch.empty(self.n_heads).uniform_(math.log(1e-3), math.log(1e-1)).exp()  # [heads]: the step sizes
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) == dt

    def new_state(
        self, batch: int, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> MixerState:
        """A zero state: conv [batch, conv_dim, conv_kernel] in ``dtype`` (default: the weights'), recurrent
        [batch, heads, head_dim, d_state] in fp32."""
        weight = self.out_proj.weight
        return MixerState.zeros(
            batch, conv_channels=self.conv_dim, conv_kernel=self.conv1d.kernel, heads=self.n_heads,
            rows=self.head_dim, cols=self.d_state, dtype=dtype or weight.dtype, device=device or weight.device,
        )  # fmt: skip

    def forward(self, x: torch.Tensor, state: MixerState) -> torch.Tensor:
        """x: [batch, seq, d_model] (a prefill, a chunk of one, or one decode token); ``state`` updated in place."""
        batch, seq, _ = x.shape
        projected = self.in_proj(x)  # [batch, seq, d_inner + conv_dim + heads]
        if self.projection_scales is not None:
            projected = projected * self._scales(projected)
        z, xbc, dt = projected.split([self.d_inner, self.conv_dim, self.n_heads], dim=-1)
        xbc = F.silu(self.conv1d(xbc.transpose(1, 2), state.conv)).transpose(1, 2)  # [batch, seq, conv_dim]
        group_width = self.n_groups * self.d_state
        xs, b, c = xbc.split([self.d_inner, group_width, group_width], dim=-1)
        heads_per_group = self.n_heads // self.n_groups
        b = b.view(batch, seq, self.n_groups, self.d_state).repeat_interleave(heads_per_group, dim=2)  # [b,s,h,n]
        c = c.view(batch, seq, self.n_groups, self.d_state).repeat_interleave(heads_per_group, dim=2)  # [b,s,h,n]
        dt = F.softplus(dt.float() + self.dt_bias.float()).clamp(*self.dt_limit)  # [batch, seq, heads]
        a = -self.A_log.float().exp()  # [heads]
        xs = xs.reshape(batch, seq, self.n_heads, self.head_dim)  # [batch, seq, heads, head_dim]
        y = ssd_recurrence(xs, dt, a, b, c, self.D, state.recurrent)  # [batch, seq, heads, head_dim], fp32
        y = y.reshape(batch, seq, self.d_inner)  # [batch, seq, d_inner]
        y = self.norm(y, z) if self.has_norm else y * F.silu(z.float())  # [batch, seq, d_inner]
        return self.out_proj(y.to(x.dtype))  # [batch, seq, d_model]

    def _scales(self, projected: torch.Tensor) -> torch.Tensor:
        """The factor of each in_proj output channel [d_inner + conv_dim + heads]: z, x, B, C, dt parts."""
        group_width = self.n_groups * self.d_state
        widths = [self.d_inner, self.d_inner, group_width, group_width, self.n_heads]
        factors = [torch.full((w,), f, dtype=projected.dtype, device=projected.device) for w, f in zip(
            widths, self.projection_scales, strict=True)]  # fmt: skip
        return torch.cat(factors)  # [d_inner + conv_dim + heads]
