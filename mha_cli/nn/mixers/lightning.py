"""Lightning attention (MiniMax-Text-01 / M1's linear-attention layer), in its plain token-by-token recurrent form.

Per head the layer keeps one matrix ``S`` of [head_dim, head_dim] (the decayed sum of k^T v). For each token it
decays ``S`` by the head's fixed factor ``exp(-slope)`` and adds the token's outer product, then reads the output
with the query:

    S = exp(-slope) * S + k^T v;   o = q S

so o_t = sum over j <= t of exp(-slope (t - j)) (q_t . k_j) v_j: causal linear attention with an exponential
decay, no softmax, no scale. q, k and v are SiLU of one projection (laid out head by head, q then k then v of
each head); the outputs of every head are RMS-normalised together (eps 1e-6, transformers' default for this norm),
multiplied by sigmoid(output_gate(x)) and projected back. The slope of head i (1-based) in layer l of L is
``2^(-8 i / heads) * (1 - l / (L - 1 + 1e-5) + 1e-5)``: earlier layers forget faster.

transformers computes a prefill blockwise (blocks of ``block_size`` tokens: intra-block products masked by the
decay, the state carried between blocks) and decodes by the recurrence above; both are this sum, so the plain
recurrence equals either within fp32 rounding. Weight names follow transformers' ``MiniMaxLightningAttention``
(``qkv_proj``, ``output_gate``, ``out_proj``, ``norm``); its decay buffers are recomputed from the config, not
loaded. Padding masks are not supported (every position is a real token).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.nn.mixers.state import MixerState
from mha_cli.nn.norms import RMSNorm

NORM_EPS = 1e-6
"""Epsilon of the output RMSNorm: transformers builds it with its norm's default, not the config's rms_norm_eps."""


def lightning_slopes(n_heads: int, layer: int, n_layers: int) -> torch.Tensor:
    """Each head's decay rate (per token, > 0) in layer ``layer`` of ``n_layers``: [heads], fp32."""
    base = 2.0 ** (-8.0 / n_heads)
    rates = base ** torch.arange(1, n_heads + 1, dtype=torch.float32)  # [heads]
    return rates * (1 - layer / (n_layers - 1 + 1e-5) + 1e-5)


def lightning_recurrence(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, decay: torch.Tensor, state: torch.Tensor
) -> torch.Tensor:
    """Run the recurrence over ``seq`` tokens from ``state``, which is updated in place (in its own dtype).

    q, k, v: [batch, seq, heads, head_dim]; decay (exp(-slope), in (0, 1)): [heads]; state: [batch, heads,
    head_dim, head_dim]. Computed in fp32; returns the outputs [batch, seq, heads, head_dim] in fp32."""
    s = state.float()  # [batch, heads, head_dim (k), head_dim (v)]
    factor = decay.float()[:, None, None]  # [heads, 1, 1]
    outputs = []
    for t in range(q.shape[1]):
        q_t, k_t, v_t = q[:, t].float(), k[:, t].float(), v[:, t].float()  # [batch, heads, head_dim]
        s = factor * s + k_t[..., :, None] * v_t[..., None, :]  # rank-one write: [batch, heads, d, d]
        outputs.append(torch.einsum("bhk,bhkv->bhv", q_t, s))  # [batch, heads, head_dim]
    state.copy_(s)
    return torch.stack(outputs, dim=1)  # [batch, seq, heads, head_dim]


class LightningAttention(nn.Module):
    """MiniMax's lightning attention mixer: [batch, seq, d_model] -> [batch, seq, d_model] with a fixed state."""

    def __init__(
        self,
        d_model: int,
        *,
        n_heads: int,
        head_dim: int,
        layer: int,
        n_layers: int,
        state_dtype: torch.dtype | None = torch.float32,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        """``layer`` of ``n_layers`` (the model's, built or not) sets the decay; ``state_dtype`` None keeps the
        state in the activations' dtype (as transformers and vLLM do), else in that dtype."""
        super().__init__()
        if not 0 <= layer < n_layers:
            raise ValueError(f"layer ({layer}) must be in [0, {n_layers})")
        self.n_heads, self.head_dim = n_heads, head_dim
        self.layer, self.n_layers = layer, n_layers
        self.state_dtype = state_dtype
        self.width = n_heads * head_dim  # channels of q (and of k, v, the gate)
        factory = {"dtype": dtype, "device": device}
        self.qkv_proj = nn.Linear(d_model, 3 * self.width, bias=False, **factory)
        self.output_gate = nn.Linear(d_model, self.width, bias=False, **factory)
        self.norm = RMSNorm(self.width, NORM_EPS, **factory)
        self.out_proj = nn.Linear(self.width, d_model, bias=False, **factory)
        self.register_buffer("decay", torch.empty(n_heads, dtype=torch.float32, device=device), persistent=False)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        """The decay buffer, exp(-slope) per head (the projections and norm initialise themselves)."""
        slopes = lightning_slopes(self.n_heads, self.layer, self.n_layers)
        self.decay.copy_(torch.exp(-slopes).to(self.decay.device))

    def new_state(
        self, batch: int, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> MixerState:
        """A zero state: no conv ([batch, 0, 0]), recurrent [batch, heads, head_dim, head_dim] in ``state_dtype``,
        or in ``dtype`` (default: the weights') when the state is kept in the activations' dtype."""
        weight = self.out_proj.weight
        activation = dtype or weight.dtype
        return MixerState.zeros(
            batch, conv_channels=0, conv_kernel=0, heads=self.n_heads, rows=self.head_dim, cols=self.head_dim,
            dtype=activation, state_dtype=self.state_dtype or activation, device=device or weight.device,
        )  # fmt: skip

    def forward(self, x: torch.Tensor, state: MixerState) -> torch.Tensor:
        """x: [batch, seq, d_model] (a prefill, a chunk of one, or one decode token); ``state`` updated in place."""
        batch, seq, _ = x.shape
        qkv = F.silu(self.qkv_proj(x)).view(batch, seq, self.n_heads, 3 * self.head_dim)  # [b, s, heads, 3 d]
        q, k, v = qkv.split(self.head_dim, dim=-1)  # [batch, seq, heads, head_dim] each
        o = lightning_recurrence(q, k, v, self.decay, state.recurrent).to(x.dtype)  # [b, s, heads, head_dim]
        o = self.norm(o.reshape(batch, seq, self.width))  # [batch, seq, width]
        o = torch.sigmoid(self.output_gate(x)) * o  # [batch, seq, width]
        return self.out_proj(o)  # [batch, seq, d_model]
