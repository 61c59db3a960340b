"""Command A MoE (Cohere2-MoE): Cohere2's parallel block (one LayerNorm, attention and MLP side by side, 3 local : 1
global layers, interleaved RoPE on the local ones) with routed experts past its dense prefix layers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.families.models.cohere import LAYOUT, logit_scale

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _dense_prefix_width(r: ConfigReader) -> int | None:
    """Its dense prefix layers' MLP is ``prefix_dense_intermediate_size`` wide (the experts: intermediate_size)."""
    return r.get("prefix_dense_intermediate_size")


def _fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """logit_scale; an RMSNorm in place of the LayerNorm when the config sets ``rms_norm_eps``; its routing: a
    softmax over the top k logits (our renormalised softmax), or their sigmoids, renormalised with norm_topk_prob."""
    logit_scale(r, fields)
    if "moe" in fields and r.get("expert_selection_fn") == "sigmoid":
        fields["moe"].update(scoring_func="sigmoid", norm_topk_prob=bool(r.get("norm_topk_prob")))
    if r.get("rms_norm_eps") is not None:
        fields.update(norm="rmsnorm", norm_eps=float(r.get("rms_norm_eps")))


FAMILY = Family(
    model_types=("cohere2_moe",),
    config_class="Cohere2MoeConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={"sliding_window": 4096, "logit_scale": 0.0625, "expert_selection_fn": "softmax", "norm_topk_prob": True},
    layout={**LAYOUT, "nope_layers": "global"},
    tied_by_default=True,
    local_cycle=("local",) * 3 + ("global",),
    local_cycle_note="layer pattern: Cohere2-MoE runs 3 local : 1 global (sliding_window_pattern 4)",
    dense_width=_dense_prefix_width,
    routing_defaults={"scoring_func": "softmax", "norm_topk_prob": True},
    routing_fixed=("scoring_func", "norm_topk_prob"),
    use_qk_norm_is_rmsnorm=False,
    interleaved_rope=True,
    read_fields=_fields,
    names=("cohere2-moe", "command-a-moe"),
    differences=(
        "Cohere2-MoE's shared experts averaged with the routed output (shared_expert_combination_strategy average)",
        "Cohere2-MoE's RoPE on global dense prefix layers (prefix_dense_sliding_window_pattern 1)",
    ),
    left_unread={
        "num_shared_experts": 0,
        **dict.fromkeys(
            (
                "rope_theta",
                "shared_expert_combination_strategy",
                "prefix_dense_sliding_window_pattern",
                "sliding_window_pattern",
            ),
            ANY_VALUE,
        ),
    },  # rope_parameters and layer_types are read,
)
