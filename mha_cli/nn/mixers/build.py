"""Build the mixer a ``RecurrentSpec`` describes, so its measured state can be set against the price.

``gated_deltanet``, ``mamba`` (Mamba-1), ``mamba2``, ``lightning`` (MiniMax) and ``kda`` (Kimi-Linear) are built
with LFM2's ``short_conv`` (all measured by ``mha verify``, ``BUILT_KINDS``). A lightning state is
kept in the format the spec says (``activation``: the activations' dtype, as transformers and vLLM keep MiniMax's;
``fp32`` or ``auto``, transformers' convention: fp32); the others keep fp32 only. The spec keeps the conv width,
not the key-head or group count, so those are read back from it: Gated DeltaNet ``conv_dim = 2 * key_heads *
key_dim + value_heads * value_dim``, Mamba-2 ``conv_dim = heads * head_dim + 2 * groups * d_state``; KDA's must be
``3 * heads * head_dim`` (q, k, v of every head) with a square state (``state_dim == head_dim``). Mamba-1 keeps one
state vector per channel: ``n_heads`` is d_inner, ``head_dim`` 1, and the conv runs over d_inner (``conv_dim``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import RecurrentSpec
from mha_cli.nn.mixers.gated_deltanet import GatedDeltaNet
from mha_cli.nn.mixers.gated_short_conv import GatedShortConv
from mha_cli.nn.mixers.kda import KimiDeltaAttention
from mha_cli.nn.mixers.lightning import LightningAttention
from mha_cli.nn.mixers.mamba1 import Mamba1
from mha_cli.nn.mixers.mamba2 import Mamba2

BUILT_KINDS = ("gated_deltanet", "mamba", "mamba2", "lightning", "kda", "short_conv")


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
    projection_scales: Sequence[float] | None = None,
) -> nn.Module:
    """The ``GatedDeltaNet``, ``Mamba1``, ``Mamba2``, ``LightningAttention`` or ``KimiDeltaAttention`` of ``spec``
    (random weights), as layer ``layer`` of ``n_layers`` (lightning attention's decay depends on it);
    ``BadInputError`` for the other kinds. ``projection_scales``: a Mamba-2's fixed factors on its in_proj parts
    (Falcon-H1's ``ssm_multipliers``)."""
    if spec.kind not in BUILT_KINDS:  # xLSTM's mLSTM: priced, not built
        raise BadInputError(f"no torch mixer for recurrent kind {spec.kind!r} (built: {', '.join(BUILT_KINDS)})")
    if spec.kind == "lightning":
        state_dtype = None if spec.state_dtype == "activation" else torch.float32
        return LightningAttention(
            d_model, n_heads=spec.n_heads, head_dim=spec.head_dim, layer=layer, n_layers=n_layers,
            state_dtype=state_dtype, dtype=dtype, device=device,
        )  # fmt: skip
    factory = {"eps": eps if spec.norm_eps is None else spec.norm_eps, "dtype": dtype, "device": device}
    if spec.state_dtype == "activation":  # "auto" is transformers' fp32, what these mixers keep
        raise BadInputError(f"a {spec.kind} mixer with an activation-dtype recurrent state is not built (fp32 only)")
    if spec.kind == "gated_deltanet":
        value_dim = spec.n_heads * spec.state_dim
        key_heads = _whole(spec.conv_dim - value_dim, 2 * spec.head_dim, "key heads")
        return GatedDeltaNet(
            d_model, n_key_heads=key_heads, n_value_heads=spec.n_heads, key_head_dim=spec.head_dim,
            value_head_dim=spec.state_dim, conv_kernel=spec.conv_kernel, split_projections=spec.split_projections,
            **factory,
        )  # fmt: skip
    if spec.kind == "mamba":
        return _mamba1(spec, d_model, factory)
    if spec.kind == "mamba2":
        groups = _whole(spec.conv_dim - spec.n_heads * spec.head_dim, 2 * spec.state_dim, "groups")
        return Mamba2(
            d_model, n_heads=spec.n_heads, head_dim=spec.head_dim, d_state=spec.state_dim, n_groups=groups,
            conv_kernel=spec.conv_kernel, bias=spec.in_proj_bias, out_bias=spec.out_proj_bias,
            conv_bias=spec.has_conv_bias, norm=spec.output_norm, norm_before_gate=spec.norm_before_gate,
            projection_scales=projection_scales, **factory,
        )  # fmt: skip
    if spec.kind == "kda":
        return KimiDeltaAttention(
            d_model, n_heads=spec.n_heads, head_dim=_kda_head_dim(spec), conv_kernel=spec.conv_kernel, **factory
        )
    if spec.kind == "short_conv":
        if spec.conv_dim != d_model:
            raise BadInputError(f"a short_conv mixer convolves d_model ({d_model}) channels, not {spec.conv_dim}")
        if spec.in_proj_bias != spec.out_proj_bias or spec.in_proj_bias != spec.has_conv_bias:
            raise BadInputError("a short_conv mixer is built with one bias setting for its projections and conv")
        return GatedShortConv(d_model, conv_kernel=spec.conv_kernel, bias=spec.in_proj_bias, dtype=dtype, device=device)
    raise BadInputError(f"no torch mixer for recurrent kind {spec.kind!r} (built: {', '.join(BUILT_KINDS)})")


def _kda_head_dim(spec: RecurrentSpec) -> int:
    """KDA's head width, once the spec is one the mixer builds: a square state per head, a conv over q, k and v,
    no biases, the output norm."""
    width = spec.n_heads * spec.head_dim
    if spec.state_dim != spec.head_dim or spec.conv_dim != 3 * width or not spec.conv_kernel:
        raise BadInputError(
            f"a kda mixer keeps heads x head_dim x head_dim and convolves q, k and v (conv_dim {3 * width}):"
            f" got state_dim {spec.state_dim}, head_dim {spec.head_dim}, conv_dim {spec.conv_dim},"
            f" conv_kernel {spec.conv_kernel}"
        )
    if spec.has_conv_bias or spec.in_proj_bias or spec.out_proj_bias or not spec.output_norm:
        raise BadInputError("a kda mixer is built without biases and with its output norm (as Kimi-Linear's)")
    return spec.head_dim


def _mamba1(spec: RecurrentSpec, d_model: int, factory: dict) -> Mamba1:
    """Mamba-1 over d_inner = ``n_heads`` channels of one state vector each; ``output_norm``: Jamba's dt, B, C norms
    (Falcon-Mamba's without weights: ``weightless_norms``)."""
    if spec.head_dim != 1 or spec.conv_dim != spec.n_heads:
        raise BadInputError(
            f"a mamba mixer keeps one state vector per channel: recurrent.head_dim must be 1 (not {spec.head_dim})"
            f" and conv_dim the channel count n_heads ({spec.n_heads}, not {spec.conv_dim})"
        )
    return Mamba1(
        d_model, d_inner=spec.n_heads, d_state=spec.state_dim, dt_rank=spec.dt_rank or math.ceil(d_model / 16),
        conv_kernel=spec.conv_kernel, conv_bias=spec.has_conv_bias, in_proj_bias=spec.in_proj_bias,
        out_proj_bias=spec.out_proj_bias, bcdt_norms=spec.output_norm, norm_weights=not spec.weightless_norms,
        **factory,
    )  # fmt: skip
