"""LFM2: gated short-convolution layers with attention on the layers ``full_attn_idxs`` (or ``layer_types``) names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _attention_on_listed_layers(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    """The layers ``full_attn_idxs`` lists attend, the others convolve; none listed: every layer attends
    (Lfm2Config's default). A config's ``layer_types`` is read before this, as for every family."""
    listed = r.config.get("full_attn_idxs")
    if listed is None:
        return r.assume(["global"] * n_layers, "full_attn_idxs absent: every layer attends (Lfm2Config)")
    if not isinstance(listed, list) or not all(type(i) is int and 0 <= i < n_layers for i in listed):
        raise BadInputError(f"{r.origin}: full_attn_idxs must list layer numbers 0..{n_layers - 1}, got {listed!r}")
    return ["global" if i in set(listed) else "linear" for i in range(n_layers)]


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """A conv over d_model channels keeping ``conv_L_cache`` inputs; ``conv_bias`` sets its and the projections'
    biases."""
    bias = bool(r.config.get("conv_bias", False))
    return {
        "kind": "short_conv", "n_heads": 1, "head_dim": 1, "state_dim": 0, "conv_dim": d_model,
        "conv_kernel": r.count("conv_L_cache", "conv_L_cache"), "conv_bias": bias, "in_proj_bias": bias,
        "out_proj_bias": bias,
    }  # fmt: skip


def _mlp_width(r: ConfigReader) -> int | None:
    """Lfm2MLP's width: with ``block_auto_adjust_ff_dim``, 2/3 of intermediate_size, times
    ``block_ffn_dim_multiplier``, rounded up to a multiple of ``block_multiple_of``."""
    width = r.count("intermediate_size", "intermediate_size")
    if not r.get("block_auto_adjust_ff_dim"):
        return width
    width = int(2 * width / 3)
    factor = r.get("block_ffn_dim_multiplier")
    if factor is not None:
        multiple = r.count("block_multiple_of", "block_multiple_of")
        width = int(float(factor) * width)
        width = multiple * -(-width // multiple)
    return width


def _norm_eps(r: ConfigReader, fields: dict[str, Any]) -> None:
    eps = r.get("norm_eps")
    if eps is not None:
        fields["norm_eps"] = float(eps)


WEIGHTS = WeightLayout(
    renames=(
        (r"^model\.embedding_norm\.", "model.norm."),
        (r"\.self_attn\.out_proj\.", ".self_attn.o_proj."),
        (r"\.self_attn\.q_layernorm\.", ".self_attn.q_norm."),
        (r"\.self_attn\.k_layernorm\.", ".self_attn.k_norm."),
        (r"(\.layers\.\d+)\.conv\.", r"\1.self_attn."),
        (r"\.feed_forward\.w1\.", ".mlp.gate_proj."),
        (r"\.feed_forward\.w3\.", ".mlp.up_proj."),
        (r"\.feed_forward\.w2\.", ".mlp.down_proj."),
        (r"\.operator_norm\.", ".input_layernorm."),
        (r"\.ffn_norm\.", ".post_attention_layernorm."),
    )
)
"""Its conv layers hold the mixer as ``conv`` (ours: ``self_attn``), its attention's o_proj is ``out_proj`` and its
q/k norms ``q_layernorm``/``k_layernorm``, its SwiGLU w1/w3/w2, its norms ``operator_norm``/``ffn_norm``, and its
last norm ``embedding_norm``."""

DEFAULTS = {"conv_L_cache": 3, "block_auto_adjust_ff_dim": True, "block_ffn_dim_multiplier": 1.0,
            "block_multiple_of": 256}  # fmt: skip
"""Lfm2Config's defaults for the fields read here."""

FAMILY = Family(
    model_types=("lfm2",),
    config_class="Lfm2Config (transformers 5.24)",
    defaults=DEFAULTS,
    layout={"qk_norm": True},
    tied_by_default=True,
    layer_kinds=_attention_on_listed_layers,
    reads=frozenset({"full_attn_idxs", "conv_L_cache"}),
    fixed_state="short convolution",
    state=_state,
    dense_width=_mlp_width,
    read_fields=_norm_eps,
    names=("lfm2",),
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
)
