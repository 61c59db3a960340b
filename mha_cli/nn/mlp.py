"""The dense MLP of a decoder layer: gated (SwiGLU, GeGLU) or plain (GELU), Llama's projection names.

gated: down(act(gate(x)) * up(x)), 3 matrices; plain: down(act(up(x))), 2 matrices. ``act`` is the spec's
``activation``: SiLU for gated and exact GELU for plain by default, or GELU's tanh approximation, ReLU or ReLU^2
(Persimmon, Nemotron, JAIS 2's ``relu2``), or xIELU with its two learned scalars (Apertus, ``nn.xielu``).
``gate_scale`` and ``down_scale`` multiply the gate projection and the output (Falcon-H1's ``mlp_multipliers``).
Under tensor
parallelism ``d_ff`` is this rank's slice of the hidden width (gate/up column-split, down row-split).
Shapes: ``b`` batch, ``s`` tokens, ``d`` d_model, ``f`` the (rank-local) hidden width.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.core.schemas import Activation
from mha_cli.nn.row_parallel import Reduce, row_parallel
from mha_cli.nn.xielu import XIELU

ActivationFn = Callable[[torch.Tensor], torch.Tensor]


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


def _relu_squared(x: torch.Tensor) -> torch.Tensor:
    return F.relu(x).square()


ACTIVATIONS: dict[Activation, ActivationFn] = {
    "silu": F.silu, "gelu": F.gelu, "gelu_tanh": _gelu_tanh, "relu": F.relu, "relu2": _relu_squared,
}  # fmt: skip
"""Each ``ModelSpec.activation`` as a function."""


def activation_fn(activation: Activation | None, *, gated: bool) -> ActivationFn:
    """The nonlinearity ``activation`` names; None: the MLP kind's own (SiLU gated, exact GELU plain). xIELU, with
    weights, is a module (``nn.xielu``), built by ``MLP``."""
    if activation == "xielu":
        raise ValueError("xIELU has weights: it is built as the MLP's act_fn module")
    return ACTIVATIONS[activation or ("silu" if gated else "gelu")]


class MLP(nn.Module):
    """``forward(x, reduce=None)``: x (b, s, d) -> (b, s, d); ``reduce`` sums the ranks' partial outputs."""

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        *,
        gated: bool = True,
        bias: bool = False,
        activation: Activation | None = None,
        gate_scale: float = 1.0,
        down_scale: float = 1.0,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.gated = gated
        if activation == "xielu":  # Apertus: an activation with weights of its own
            self.act_fn = XIELU(**factory)
            self.activation: ActivationFn = self.act_fn.forward  # a method: the module is registered once
        else:
            self.activation = activation_fn(activation, gated=gated)
        self.d_ff = d_ff
        self.gate_scale, self.down_scale = gate_scale, down_scale  # Falcon-H1's mlp_multipliers
        if gated:
            self.gate_proj = nn.Linear(d_model, d_ff, bias=bias, **factory)
        self.up_proj = nn.Linear(d_model, d_ff, bias=bias, **factory)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias, **factory)

    def forward(self, x: torch.Tensor, reduce: Reduce | None = None) -> torch.Tensor:
        up = self.up_proj(x)  # (b, s, f)
        if self.gated:
            gate = self.gate_proj(x)  # (b, s, f)
            hidden = self.activation(gate if self.gate_scale == 1.0 else gate * self.gate_scale) * up  # (b, s, f)
        else:
            hidden = self.activation(up)  # (b, s, f)
        out = row_parallel(self.down_proj, hidden, reduce)  # (b, s, d)
        return out if self.down_scale == 1.0 else out * self.down_scale
