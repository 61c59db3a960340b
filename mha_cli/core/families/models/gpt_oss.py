"""gpt-oss: sliding-window and global layers alternating, attention sinks, biased experts with a clamped SwiGLU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _expert_biases(r: ConfigReader, fields: dict[str, Any]) -> None:
    if "moe" in fields:
        fields["moe"]["expert_bias"] = True


# gpt-oss: experts (E, d, 2f) with gate and up columns alternating, (E, f, d); its router is router (with a
# bias). Its attention sinks (self_attn.sinks) and router bias (mlp.gate.bias) have no counterpart in the
# decoder, so they stay unexpected.
WEIGHTS = WeightLayout(
    renames=((r"\.mlp\.router\.", ".mlp.gate."),),
    transposed=(r"\.mlp\.experts\.(gate_up_proj|down_proj)$",),
    interleaved=((r"\.mlp\.experts\.gate_up_proj(_bias)?$", -1),),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("gpt_oss",),
    config_class="GptOssConfig (transformers 5.24)",
    layout={"qkv_bias": True, "o_bias": True},
    local_cycle=("local", "global"),
    local_cycle_note="layer pattern: gpt-oss alternates sliding-window and global layers",
    read_fields=_expert_biases,
    names=("gpt-oss",),
    differences=(
        "gpt-oss's attention sinks (a learned logit per head in every softmax)",
        "gpt-oss's clamped SwiGLU (alpha 1.702, (up + 1) gating)",
        "gpt-oss's router bias (a learned bias per expert on the router logits)",
    ),
    weights=WEIGHTS,
)
