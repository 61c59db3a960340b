"""Laguna: per-head q/k norms, a softplus output gate on its attention (``gating``: per head or per element),
sliding-window and global layers with RoPE of their own, DeepSeek-V3's sigmoid routing with its correction bias."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.families.layer_types import class_default_kinds
from mha_cli.core.families.models.glm4_moe import SIGMOID_NOAUX

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Its output gate: per head for ``gating`` true or "per-head", per element for any other true value."""
    gating = r.get("gating")
    if gating:
        fields["attn_softplus_gate"] = "head" if gating is True or gating == "per-head" else "element"
    if "moe" in fields:
        fields["moe"]["routed_scaling_factor"] = float(r.get("moe_routed_scaling_factor"))


FAMILY = Family(
    model_types=("laguna",),
    config_class="LagunaConfig (transformers 5.24)",
    window_fields=SLIDES,
    layer_kinds=class_default_kinds(lambda i, n: True, "LagunaConfig", "every layer full"),
    defaults={"gating": True, "moe_routed_scaling_factor": 1.0},
    layout={"qk_norm": True},
    routing_defaults={"scoring_func": "sigmoid", "topk_method": "noaux_tc", "norm_topk_prob": True},
    routing_fixed=(*SIGMOID_NOAUX, "norm_topk_prob"),
    read_fields=_fields,
    names=("laguna",),
    differences=(
        "Laguna's per-layer head counts (num_attention_heads_per_layer): every layer here has num_attention_heads",
        "Laguna's router logit soft cap (moe_router_logit_softcapping, 0 by default)",
    ),
    uncounted=(
        "weights approximate where num_attention_heads_per_layer varies: every layer is counted with"
        " num_attention_heads query heads (the cache, of its uniform KV heads, is exact)"
    ),
    left_unread={
        "num_attention_heads_per_layer": ANY_VALUE,
        "moe_router_logit_softcapping": ANY_VALUE,
        "moe_apply_router_weight_on_input": False,
    },  # the first two listed,
)
