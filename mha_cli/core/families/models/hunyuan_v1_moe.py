"""Hunyuan MoE (v1): per-head q/k norms, ``moe_topk`` experts a token and one shared MLP in every layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family
from mha_cli.core.families.models.hunyuan_v1_dense import HUNYUAN_QK_NORM
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _shared_mlp(r: ConfigReader, fields: dict[str, Any]) -> None:
    if "moe" in fields:
        fields["moe"]["n_shared_experts"] = 1


# HunYuan MoE: HunYuan's q/k norm names, a router gate.wg and one shared expert shared_mlp beside the routed
# ones (stored as ours).
WEIGHTS = WeightLayout(
    renames=(
        (r"\.self_attn\.query_layernorm\.", ".self_attn.q_norm."),
        (r"\.self_attn\.key_layernorm\.", ".self_attn.k_norm."),
        (r"\.mlp\.gate\.wg\.", ".mlp.gate."),
        (r"\.mlp\.shared_mlp\.", ".mlp.shared_experts."),
    ),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("hunyuan_v1_moe",),
    config_class="HunYuanMoEV1Config (transformers 5.24)",
    spellings={"experts_per_token": ("moe_topk",)},
    layout={"qk_norm": True},
    differences=(HUNYUAN_QK_NORM,),
    read_fields=_shared_mlp,
    weights=WEIGHTS,
)
