"""Hunyuan 3 (HY-V3): per-head q/k norms, DeepSeek-V3's sigmoid routing with its correction bias (kept on the MoE
block, not its router) and ``router_scaling_factor``, a dense first layer (``mlp_layer_types``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.glm4_moe import SIGMOID_NOAUX
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _scaling(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Its routed weights are renormalised, then multiplied by ``router_scaling_factor``."""
    if "moe" in fields:
        fields["moe"]["routed_scaling_factor"] = float(r.get("router_scaling_factor"))


FAMILY = Family(
    model_types=("hy_v3",),
    config_class="HYV3Config (transformers 5.24)",
    defaults={"router_scaling_factor": 2.826, "num_shared_experts": 1},
    spellings={"shared_experts": ("num_shared_experts",)},
    layout={"qk_norm": True},
    routing_defaults={"scoring_func": "sigmoid", "topk_method": "noaux_tc", "norm_topk_prob": True},
    routing_fixed=(*SIGMOID_NOAUX, "norm_topk_prob"),
    read_fields=_scaling,
    names=("hy-v3", "hunyuan-3"),
    equal_test=EQUAL_BY_SWEEP,
    weights=WeightLayout(
        renames=((r"\.mlp\.e_score_correction_bias$", ".mlp.gate.e_score_correction_bias"),),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
    left_unread={"enable_moe_fp32_combine": ANY_VALUE},  # numerics,
)
