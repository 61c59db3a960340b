"""Bamba: Mamba-2 layers, attention on the layers ``attn_layer_indices`` lists, a SwiGLU MLP after every mixer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.state_readers import mamba2_state
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def attention_on_listed_layers(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    """The layers ``attn_layer_indices`` lists attend; every other is Mamba-2 (all of them, none listed)."""
    listed = r.config.get("attn_layer_indices")
    if not listed:
        return r.assume(["linear"] * n_layers, "attn_layer_indices absent: every layer Mamba-2 (BambaConfig)")
    valid = isinstance(listed, list) and all(type(i) is int and 0 <= i < n_layers for i in listed)
    if not valid:
        raise BadInputError(f"{r.origin}: attn_layer_indices must list layer numbers 0..{n_layers - 1}, got {listed!r}")
    attending = set(listed)
    return ["global" if i in attending else "linear" for i in range(n_layers)]


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Mamba-2 over mamba_expand x d_model channels; ``mamba_proj_bias`` sets both its projections' biases."""
    return {**mamba2_state(r, d_model, inner=None, out_proj="mamba_proj_bias"), "on_attention_layers": False}


WEIGHTS = WeightLayout(
    renames=(
        (r"^model\.final_layernorm\.", "model.norm."),
        (r"\.mamba\.", ".self_attn."),
        (r"\.feed_forward\.", ".mlp."),
        (r"\.pre_ff_layernorm\.", ".post_attention_layernorm."),
    )
)
"""Its Mamba-2 layers hold the mixer as ``mamba`` (ours: where attention would be, ``self_attn``), its MLP as
``feed_forward`` after ``pre_ff_layernorm``, its last norm as ``final_layernorm``."""

FAMILY = Family(
    model_types=("bamba",),
    config_class="BambaConfig (transformers 5.24)",
    defaults={"mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2},
    layer_kinds=attention_on_listed_layers,
    reads=frozenset({"attn_layer_indices"}),
    fixed_state="Mamba-2",
    state=_state,
    names=("bamba",),
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
    left_unread={"mamba_chunk_size": ANY_VALUE, "time_step_limit": [0.0, float("inf")]},
)
