"""Build the mixer a ``RecurrentSpec`` describes, so its measured state can be set against the price.

``gated_deltanet``, ``mamba2`` and ``lightning`` (MiniMax) are built; Mamba-1 (Jamba) and KDA (Kimi-Linear) are
refused by name. A lightning state is kept in the format the spec says (``activation``: the activations' dtype, as
transformers and vLLM keep MiniMax's; ``fp32`` or ``auto``, transformers' convention: fp32); the other two keep
fp32 only. The spec keeps the conv width, not the key-head or group count, so those are
read back from it: Gated DeltaNet ``conv_dim = 2 * key_heads * key_dim + value_heads * value_dim``, Mamba-2
``conv_dim = heads * head_dim + 2 * groups * d_state``.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import RecurrentSpec
from mha_cli.nn.mixers.gated_deltanet import GatedDeltaNet
from mha_cli.nn.mixers.lightning import LightningAttention
from mha_cli.nn.mixers.mamba2 import Mamba2

BUILT_KINDS = ("gated_deltanet", "mamba2", "lightning")


def _whole(numerator: int, denominator: int, what: str) -> int:
    if denominator <= 0 or numerator <= 0 or numerator % denominator:
        raise BadInputError(f"recurrent.conv_dim does not give a whole number of {what}")
    return numerator // denominator


def build_mixer(
    spec: RecurrentSpec,
    d_model: int,
    *,
    eps: float = 1e-6,
    layer: int = 0,
    n_layers: int = 1,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> nn.Module:
    """The ``GatedDeltaNet``, ``Mamba2`` or ``LightningAttention`` of ``spec`` (random weights), as layer ``layer``
    of ``n_layers`` (lightning attention's decay depends on it); ``BadInputError`` for the other kinds."""
    if spec.kind == "lightning":
        state_dtype = None if spec.state_dtype == "activation" else torch.float32
        return LightningAttention(
            d_model, n_heads=spec.n_heads, head_dim=spec.head_dim, layer=layer, n_layers=n_layers,
            state_dtype=state_dtype, dtype=dtype, device=device,
        )  # fmt: skip
    factory = {"eps": eps, "dtype": dtype, "device": device}
    if spec.state_dtype == "activation":  # "auto" is transformers' fp32, what these mixers keep
        raise BadInputError(f"a {spec.kind} mixer with an activation-dtype recurrent state is not built (fp32 only)")
    if spec.kind == "gated_deltanet":
        value_dim = spec.n_heads * spec.state_dim
        key_heads = _whole(spec.conv_dim - value_dim, 2 * spec.head_dim, "key heads")
        return GatedDeltaNet(
            d_model, n_key_heads=key_heads, n_value_heads=spec.n_heads, key_head_dim=spec.head_dim,
            value_head_dim=spec.state_dim, conv_kernel=spec.conv_kernel, **factory,
        )  # fmt: skip
    if spec.kind == "mamba2":
        groups = _whole(spec.conv_dim - spec.n_heads * spec.head_dim, 2 * spec.state_dim, "groups")
        return Mamba2(
            d_model, n_heads=spec.n_heads, head_dim=spec.head_dim, d_state=spec.state_dim, n_groups=groups,
            conv_kernel=spec.conv_kernel, **factory,
        )  # fmt: skip
    raise BadInputError(f"no torch mixer for recurrent kind {spec.kind!r} (built: {', '.join(BUILT_KINDS)})")
