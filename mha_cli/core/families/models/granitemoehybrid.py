"""Granite-4.0-H: Mamba-2 layers with a few attention layers, a shared MLP beside its experts, Granite's scalars."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.granite import read_granite_scalars
from mha_cli.core.families.state_readers import mamba2_state
from mha_cli.core.weight_layout import FusedSplit, WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _every_layer_mamba(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    return r.assume(["linear"] * n_layers, "layer_types absent: every layer Mamba-2 (GraniteMoeHybridConfig)")


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    return {**mamba2_state(r, d_model, inner=None, out_proj="mamba_proj_bias"), "on_attention_layers": False}


def _shared_mlp_and_scalars(r: ConfigReader, fields: dict[str, Any]) -> None:
    """GraniteMoeHybridMLP (shared_mlp) runs beside the experts, as wide as ``shared_intermediate_size``; Granite's
    scalars: ``embedding_multiplier`` on the embeddings, ``attention_multiplier`` the softmax scale,
    ``residual_multiplier`` on each branch, the logits divided by ``logits_scaling``; no RoPE unless
    ``position_embedding_type`` is ``rope``."""
    if "moe" in fields:
        fields["moe"]["n_shared_experts"] = 1
        fields["moe"]["d_ff_shared"] = r.get("shared_intermediate_size") or fields["moe"]["d_ff_expert"]
    read_granite_scalars(r, fields)
    if r.config.get("position_embedding_type") != "rope":
        fields["nope_layers"] = "global"  # every attention layer is global: none rotates


WEIGHTS = WeightLayout(
    renames=(
        (r"\.mamba\.", ".self_attn."),
        (r"\.block_sparse_moe\.router\.", ".mlp.gate."),
        (r"\.block_sparse_moe\.experts\.", ".mlp.experts."),
        (r"\.shared_mlp\.output_linear\.", ".mlp.shared_experts.down_proj."),
        (r"\.shared_mlp\.input_linear\.", ".mlp.shared_experts.gate_up_proj."),
    ),
    fused=(
        FusedSplit(
            r"(.*)\.shared_experts\.gate_up_proj\.weight",
            (r"\1.shared_experts.gate_proj.weight", r"\1.shared_experts.up_proj.weight"), "gate_up",
        ),
    ),
)  # fmt: skip
"""Its Mamba-2 layers hold the mixer as ``mamba`` (ours: ``self_attn``); its router and experts sit in
``block_sparse_moe``; its shared MLP (``shared_mlp``: input_linear fused gate then up, output_linear) is the MoE's
shared expert. A model without experts (``num_local_experts`` 0), whose shared MLP is the dense MLP, does not load
(its ``mlp.shared_experts`` names are unexpected, loudly)."""

FAMILY = Family(
    model_types=("granitemoehybrid",),
    config_class="GraniteMoeHybridConfig (transformers 5.24)",
    defaults={"mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2},
    spellings={"d_ff": ("shared_intermediate_size",)},
    layer_kinds=_every_layer_mamba,
    fixed_state="Mamba-2",
    state=_state,
    read_fields=_shared_mlp_and_scalars,
    names=("granitemoehybrid", "granite-4.0-h"),
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
    left_unread={"mamba_chunk_size": ANY_VALUE, "time_step_limit": [0.0, float("inf")]},
)
