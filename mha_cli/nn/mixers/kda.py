"""KDA, Kimi delta attention (Kimi-Linear's linear-attention layer), in its plain token-by-token recurrent form.

Gated DeltaNet with a fine-grained forget gate: per head the layer keeps a fp32 matrix ``S`` of [head_dim,
head_dim] (key channels x value channels), and each key channel decays by its own ``exp(g)``. For each token:

    S = diag(exp(g)) S;   S = S + k (beta * (v - S^T k))^T;   o = S^T q

q, k and v come from three projections through one short causal conv (silu) over their 3 x heads x head_dim
channels; q and k are L2-normalised in fp32 and q is scaled by 1/sqrt(head_dim). The log decay
``g = -exp(A_log[head]) * softplus(f_b(f_a(x)) + dt_bias)`` has one value per channel (a low-rank projection,
head_dim wide in the middle); ``beta = sigmoid(b_proj(x))`` one per head. The output is RMS-normalised per head
(in fp32, its weight too) and gated by sigmoid(g_b(g_a(x))) (another low-rank projection), then projected back.

Every head has its own q, k and v (no grouping). Weight names and shapes follow transformers'
``KimiLinearDeltaAttention`` so a state dict loads as is. Padding masks are not supported (every position is a real
token); the conv's activation is silu (Kimi-Linear's ``hidden_act``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.nn.mixers.gated_deltanet import gated_delta_rule, l2_normalise
from mha_cli.nn.mixers.gated_norm import GatedRMSNorm
from mha_cli.nn.mixers.short_conv import ShortConv
from mha_cli.nn.mixers.state import MixerState


class ChannelForgetGate(nn.Module):
    """KDA's per-channel log decay: [batch, seq, d_model] -> [batch, seq, heads, head_dim], fp32, <= 0."""

    def __init__(
        self,
        d_model: int,
        *,
        n_heads: int,
        head_dim: int,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, head_dim
        width = n_heads * head_dim
        factory = {"dtype": dtype, "device": device}
        self.f_a_proj = nn.Linear(d_model, head_dim, bias=False, **factory)  # low rank: head_dim wide
        self.f_b_proj = nn.Linear(head_dim, width, bias=False, **factory)
        self.dt_bias = nn.Parameter(torch.empty(width, **factory))  # one per channel
        self.A_log = nn.Parameter(torch.empty(1, 1, n_heads, 1, **factory))  # one per head, [1, 1, heads, 1]
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        """The gate's own parameters (the projections initialise themselves): A uniform in [1, 16] (A_log its log),
        dt_bias the inverse softplus of steps drawn log-uniform in [0.001, 0.1], as Kimi-Linear draws them."""
        self.A_log.copy_(torch.empty_like(self.A_log).uniform_(1, 16).log())
        dt = torch.empty_like(self.dt_bias).uniform_(math.log(1e-3), math.log(1e-1)).exp().clamp_min(1e-4)
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) == dt

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        g = self.f_b_proj(self.f_a_proj(x)).float() + self.dt_bias.float()  # [batch, seq, width]
        g = g.view(batch, seq, self.n_heads, self.head_dim)  # [batch, seq, heads, head_dim]
        return -self.A_log.float().exp() * F.softplus(g)  # softplus is x itself above 20, as Kimi-Linear's


class KimiDeltaAttention(nn.Module):
    """Kimi-Linear's KDA mixer: [batch, seq, d_model] -> [batch, seq, d_model] with a fixed state."""

    def __init__(
        self,
        d_model: int,
        *,
        n_heads: int,
        head_dim: int,
        conv_kernel: int,
        eps: float = 1e-6,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, head_dim
        self.width = n_heads * head_dim  # channels of q, of k and of v
        self.conv_dim = 3 * self.width  # the conv runs over q, k and v
        factory = {"dtype": dtype, "device": device}
        self.q_proj = nn.Linear(d_model, self.width, bias=False, **factory)
        self.k_proj = nn.Linear(d_model, self.width, bias=False, **factory)
        self.v_proj = nn.Linear(d_model, self.width, bias=False, **factory)
        self.conv1d = ShortConv(self.conv_dim, conv_kernel, bias=False, **factory)
        self.forget_gate = ChannelForgetGate(d_model, n_heads=n_heads, head_dim=head_dim, **factory)
        self.b_proj = nn.Linear(d_model, n_heads, bias=False, **factory)
        self.g_a_proj = nn.Linear(d_model, head_dim, bias=False, **factory)  # the output gate, low rank as f_a/f_b
        self.g_b_proj = nn.Linear(head_dim, self.width, bias=False, **factory)
        self.o_norm = GatedRMSNorm(
            head_dim, eps, norm_before_gate=True, gate_activation="sigmoid", weight_in_fp32=True, **factory
        )
        self.o_proj = nn.Linear(self.width, d_model, bias=False, **factory)

    def new_state(
        self, batch: int, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> MixerState:
        """A zero state: conv [batch, 3 x heads x head_dim, conv_kernel] in ``dtype`` (default: the weights'),
        recurrent [batch, heads, head_dim, head_dim] in fp32."""
        weight = self.o_proj.weight
        return MixerState.zeros(
            batch, conv_channels=self.conv_dim, conv_kernel=self.conv1d.kernel, heads=self.n_heads,
            rows=self.head_dim, cols=self.head_dim, dtype=dtype or weight.dtype, device=device or weight.device,
        )  # fmt: skip

    def forward(self, x: torch.Tensor, state: MixerState) -> torch.Tensor:
        """x: [batch, seq, d_model] (a prefill, a chunk of one, or one decode token); ``state`` updated in place."""
        batch, seq, _ = x.shape
        heads = (batch, seq, self.n_heads, self.head_dim)
        qkv = torch.cat([self.q_proj(x), self.k_proj(x), self.v_proj(x)], dim=-1).transpose(1, 2)  # [b, conv_dim, s]
        qkv = F.silu(self.conv1d(qkv, state.conv)).transpose(1, 2)  # [batch, seq, conv_dim]
        q, k, v = (t.reshape(heads) for t in qkv.split(self.width, dim=-1))  # [batch, seq, heads, head_dim] each
        q = l2_normalise(q.float()) * self.head_dim**-0.5  # fp32, as the kernels normalise
        k = l2_normalise(k.float())
        g = self.forget_gate(x)  # log decay per channel: [batch, seq, heads, head_dim], fp32
        beta = self.b_proj(x).float().sigmoid()  # [batch, seq, heads]
        o = gated_delta_rule(q, k, v, g, beta, state.recurrent).to(x.dtype)  # [batch, seq, heads, head_dim]
        o = self.o_norm(o, self.g_b_proj(self.g_a_proj(x)).view(heads))  # [batch, seq, heads, head_dim]
        return self.o_proj(o.reshape(batch, seq, self.width))  # [batch, seq, d_model]
