"""Flint: per-head q/k norms, attention sinks, RoPE on its sliding-window layers only (the global ones NoPE),
sigmoid-scored experts and one ungated shared expert."""

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.families.layer_types import class_default_kinds
from mha_cli.core.weight_layout import WeightLayout

# Its shared expert (shared_expert, always added in full) is our ungated shared_experts.
WEIGHTS = WeightLayout(
    renames=((r"\.mlp\.shared_expert\.", ".mlp.shared_experts."),),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("flint",),
    config_class="FlintConfig (transformers 5.24)",
    window_fields=SLIDES,
    layer_kinds=class_default_kinds(
        lambda i, n: i < 2 or i % 4 == 1 or i == n - 1,
        "FlintConfig",
        "the first two layers, every fourth from 1 and the last full, the others sliding",
    ),
    layout={"qk_norm": True, "attn_sinks": True, "nope_layers": "global"},
    routing_defaults={"scoring_func": "sigmoid", "topk_method": "greedy"},
    routing_fixed=("scoring_func", "topk_method"),
    names=("flint",),
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
)
