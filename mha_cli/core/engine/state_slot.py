"""One request's recurrent-state slot on one tensor-parallel rank, as the engines that keep such states in a pool of
their own shape it (SGLang's ``Mamba2StateShape.create``, TensorRT-LLM's ``MambaCacheManager``): for a Mamba-2,
Gated DeltaNet or KDA layer, a conv state of (conv channels / tp) x (kernel - 1) and a recurrent state of (heads / tp) x head
dim x state size.

The conv channels are the inner width plus two groups' worth: q and k of every key head of a Gated DeltaNet or KDA
layer (width: the key dim; KDA's three short convolutions over q, k and v hold the same channels), B and C of every
Mamba-2 group (width: d_state). SGLang pads groups that tp does not divide up
to tp (``extra_groups_for_head_shards``); TensorRT-LLM asserts that tp divides the heads and the channels (rounded
up here). Pure Python.
"""

from __future__ import annotations

from mha_cli.core.schemas import RecurrentSpec

SLOT_KINDS = ("gated_deltanet", "kda", "mamba2")
"""The mixers whose slot is shaped here."""


def slot_parts_per_layer(
    state: RecurrentSpec, tp: int, *, conv_bytes: int, ssm_bytes: int, pad_groups: bool
) -> tuple[int, int]:
    """(conv, recurrent) bytes one layer of ``state`` (a kind of ``SLOT_KINDS``) holds for one request on one rank,
    each value of ``conv_bytes`` and ``ssm_bytes``; ``pad_groups``: groups that tp does not divide are padded to tp."""
    assert state.kind in SLOT_KINDS
    group_width = state.state_dim if state.kind == "mamba2" else state.head_dim
    if state.kind == "mamba2":
        groups = state.n_groups
    else:  # Gated DeltaNet, KDA: the key heads, from the conv channels less the values'
        groups = (state.conv_dim - state.n_heads * state.state_dim) // (2 * group_width)
    inner = state.conv_dim - 2 * groups * group_width
    if pad_groups and groups % tp:  # extra_groups_for_head_shards
        groups += tp - groups
    conv_channels = -(-(inner + 2 * groups * group_width) // tp)
    conv = conv_channels * max(0, state.conv_kernel - 1) * conv_bytes
    recurrent = -(-state.n_heads // tp) * state.head_dim * state.state_dim * ssm_bytes
    return conv, recurrent
