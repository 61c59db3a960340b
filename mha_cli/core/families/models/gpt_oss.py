"""gpt-oss: sliding-window and global layers alternating, attention sinks, biased experts with a clamped SwiGLU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _experts(r: ConfigReader, fields: dict[str, Any]) -> None:
    """gpt-oss's experts carry biases and a clamped SwiGLU; its router a bias."""
    if "moe" in fields:
        fields["moe"]["expert_bias"] = True
        fields["moe"]["router_bias"] = True
        fields["moe"]["swiglu_limit"] = float(r.get("swiglu_limit"))
        fields["moe"]["swiglu_alpha"] = float(r.get("swiglu_alpha"))


# gpt-oss: experts (E, d, 2f) with gate and up columns alternating, (E, f, d); its router is router (with a
# bias, our gate.bias); its attention sinks are ours (self_attn.sinks).
WEIGHTS = WeightLayout(
    renames=((r"\.mlp\.router\.", ".mlp.gate."),),
    transposed=(r"\.mlp\.experts\.(gate_up_proj|down_proj)$",),
    interleaved=((r"\.mlp\.experts\.gate_up_proj(_bias)?$", -1),),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("gpt_oss",),
    config_class="GptOssConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={"swiglu_limit": 7.0, "swiglu_alpha": 1.702},
    layout={"qkv_bias": True, "o_bias": True, "attn_sinks": True},
    local_cycle=("local", "global"),
    local_cycle_note="layer pattern: gpt-oss alternates sliding-window and global layers",
    read_fields=_experts,
    names=("gpt-oss",),
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
)
