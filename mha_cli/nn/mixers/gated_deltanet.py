"""Gated DeltaNet (Qwen3-Next's linear-attention layer), in its plain token-by-token recurrent form.

Per value head the layer keeps a fp32 matrix ``S`` of [key dim, value dim]. For each token it decays ``S`` by
``exp(g)``, reads what ``S`` already predicts for the key, writes back the error scaled by ``beta`` (the delta rule),
and reads the output with the query:

    S = exp(g) * S;   S = S + k (beta * (v - S^T k))^T;   o = S^T q

q and k are L2-normalised and q is scaled by 1/sqrt(key dim); each key head serves ``n_value_heads / n_key_heads``
consecutive value heads. Weight names follow transformers' ``Qwen3NextGatedDeltaNet`` so a state dict loads as is;
``split_projections`` builds Qwen3.5's four projections instead (``Qwen3_5GatedDeltaNet``: in_proj_qkv, in_proj_z,
in_proj_b, in_proj_a, each head after head).
Padding masks are not supported (every position is a real token).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.nn.mixers.gated_norm import GatedRMSNorm
from mha_cli.nn.mixers.short_conv import ShortConv
from mha_cli.nn.mixers.state import MixerState


def l2_normalise(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(sum(x^2) + eps) over the last dimension."""
    return x * torch.rsqrt(x.pow(2).sum(dim=-1, keepdim=True) + eps)


def gated_delta_rule(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, state: torch.Tensor
) -> torch.Tensor:
    """Run the recurrence over ``seq`` tokens from ``state``, which is updated in place.

    q, k: [batch, seq, heads, key_dim] (already normalised and scaled); v: [batch, seq, heads, value_dim];
    g (log decay, <= 0): [batch, seq, heads], one per head, or [batch, seq, heads, key_dim], one per key channel
    (KDA's fine-grained gate decays each row of the state by its own); beta (write strength, 0..1): [batch, seq,
    heads]; state: [batch, heads, key_dim, value_dim], fp32. Returns the outputs [batch, seq, heads, value_dim] in
    fp32."""
    s = state.clone()  # [batch, heads, key_dim, value_dim]
    outputs = []
    for t in range(q.shape[1]):
        q_t, k_t, v_t = q[:, t].float(), k[:, t].float(), v[:, t].float()  # [batch, heads, key_dim | value_dim]
        decay = g[:, t].float().exp()  # [batch, heads] or [batch, heads, key_dim]
        s = s * (decay[..., None, None] if decay.dim() == 2 else decay[..., None])  # each row (key channel) decays
        predicted = torch.einsum("bhkv,bhk->bhv", s, k_t)  # [batch, heads, value_dim]
        delta = beta[:, t].float()[..., None] * (v_t - predicted)  # [batch, heads, value_dim]
        s = s + k_t[..., :, None] * delta[..., None, :]  # rank-one write: [batch, heads, key_dim, value_dim]
        outputs.append(torch.einsum("bhkv,bhk->bhv", s, q_t))  # [batch, heads, value_dim]
    state.copy_(s)
    return torch.stack(outputs, dim=1)  # [batch, seq, heads, value_dim]


class GatedDeltaNet(nn.Module):
    """Qwen3-Next's Gated DeltaNet mixer: [batch, seq, d_model] -> [batch, seq, d_model] with a fixed state."""

    def __init__(
        self,
        d_model: int,
        *,
        n_key_heads: int,
        n_value_heads: int,
        key_head_dim: int,
        value_head_dim: int,
        conv_kernel: int,
        split_projections: bool = False,
        eps: float = 1e-6,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if n_value_heads % n_key_heads:
            raise ValueError(f"n_value_heads ({n_value_heads}) must be a multiple of n_key_heads ({n_key_heads})")
        self.n_key_heads, self.n_value_heads = n_key_heads, n_value_heads
        self.key_head_dim, self.value_head_dim = key_head_dim, value_head_dim
        self.key_dim = n_key_heads * key_head_dim  # channels of q (and of k)
        self.value_dim = n_value_heads * value_head_dim  # channels of v (and of the gate z)
        self.conv_dim = 2 * self.key_dim + self.value_dim  # the conv runs over q, k and v
        factory = {"dtype": dtype, "device": device}
        self.split_projections = split_projections
        if split_projections:  # Qwen3.5
            self.in_proj_qkv = nn.Linear(d_model, self.conv_dim, bias=False, **factory)
            self.in_proj_z = nn.Linear(d_model, self.value_dim, bias=False, **factory)
            self.in_proj_b = nn.Linear(d_model, n_value_heads, bias=False, **factory)
            self.in_proj_a = nn.Linear(d_model, n_value_heads, bias=False, **factory)
        else:  # Qwen3-Next
            self.in_proj_qkvz = nn.Linear(d_model, 2 * self.key_dim + 2 * self.value_dim, bias=False, **factory)
            self.in_proj_ba = nn.Linear(d_model, 2 * n_value_heads, bias=False, **factory)
        self.conv1d = ShortConv(self.conv_dim, conv_kernel, bias=False, **factory)
        self.dt_bias = nn.Parameter(torch.empty(n_value_heads, **factory))
        self.A_log = nn.Parameter(torch.empty(n_value_heads, **factory))
        self.norm = GatedRMSNorm(value_head_dim, eps, norm_before_gate=True, **factory)
        self.out_proj = nn.Linear(self.value_dim, d_model, bias=False, **factory)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        """The layer's own parameters (the projections, conv and norm initialise themselves): dt_bias 1, A uniform
        in [1, 16] (A_log its log), as Qwen3-Next draws them."""
        self.dt_bias.fill_(1.0)
        self.A_log.copy_(torch.empty_like(self.A_log).uniform_(1, 16).log())

    def new_state(
        self, batch: int, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> MixerState:
        """A zero state: conv [batch, conv_dim, conv_kernel] in ``dtype`` (default: the weights'), recurrent
        [batch, value heads, key head dim, value head dim] in fp32."""
        weight = self.out_proj.weight
        return MixerState.zeros(
            batch, conv_channels=self.conv_dim, conv_kernel=self.conv1d.kernel, heads=self.n_value_heads,
            rows=self.key_head_dim, cols=self.value_head_dim, dtype=dtype or weight.dtype,
            device=device or weight.device,
        )  # fmt: skip

    def _project(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """q, k [batch, seq, key_dim], v, z [batch, seq, value_dim], b, a [batch, seq, value heads].

        in_proj_qkvz is laid out key head by key head: [q (key_head_dim), k (key_head_dim), v (r * value_head_dim),
        z (r * value_head_dim)] with r value heads per key head; in_proj_ba likewise [b (r), a (r)]. Split, each
        projection holds its own part, head after head."""
        batch, seq, _ = x.shape
        if self.split_projections:
            q, k, v = self.in_proj_qkv(x).split([self.key_dim, self.key_dim, self.value_dim], dim=-1)
            return q, k, v, self.in_proj_z(x), self.in_proj_b(x), self.in_proj_a(x)
        r = self.n_value_heads // self.n_key_heads
        qkvz = self.in_proj_qkvz(x).view(batch, seq, self.n_key_heads, -1)  # [batch, seq, key heads, per head]
        dk, rv = self.key_head_dim, r * self.value_head_dim
        q, k, v, z = qkvz.split([dk, dk, rv, rv], dim=-1)
        ba = self.in_proj_ba(x).view(batch, seq, self.n_key_heads, 2 * r)  # [batch, seq, key heads, 2r]
        b, a = ba.split([r, r], dim=-1)
        flat = [t.reshape(batch, seq, -1) for t in (q, k, v, z, b, a)]
        return tuple(flat)

    def forward(self, x: torch.Tensor, state: MixerState) -> torch.Tensor:
        """x: [batch, seq, d_model] (a prefill, a chunk of one, or one decode token); ``state`` updated in place."""
        batch, seq, _ = x.shape
        q, k, v, z, b, a = self._project(x)
        qkv = torch.cat([q, k, v], dim=-1).transpose(1, 2)  # [batch, conv_dim, seq]
        qkv = F.silu(self.conv1d(qkv, state.conv)).transpose(1, 2)  # [batch, seq, conv_dim]
        q, k, v = qkv.split([self.key_dim, self.key_dim, self.value_dim], dim=-1)
        r = self.n_value_heads // self.n_key_heads
        q = q.view(batch, seq, self.n_key_heads, self.key_head_dim).repeat_interleave(r, dim=2)  # [b, s, vh, dk]
        k = k.view(batch, seq, self.n_key_heads, self.key_head_dim).repeat_interleave(r, dim=2)  # [b, s, vh, dk]
        v = v.view(batch, seq, self.n_value_heads, self.value_head_dim)  # [batch, seq, value heads, dv]
        q = l2_normalise(q.float()) / self.key_head_dim**0.5
        k = l2_normalise(k.float())
        beta = b.sigmoid()  # [batch, seq, value heads]
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)  # log decay: [batch, seq, value heads]
        o = gated_delta_rule(q, k, v, g, beta, state.recurrent).to(x.dtype)  # [batch, seq, value heads, dv]
        o = self.norm(o, z.view(batch, seq, self.n_value_heads, self.value_head_dim))
        return self.out_proj(o.reshape(batch, seq, self.value_dim))  # [batch, seq, d_model]
