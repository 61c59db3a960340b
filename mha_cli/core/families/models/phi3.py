"""Phi-3: Llama's arithmetic with fused qkv_proj and gate_up_proj weights; longrope in its 128k variants."""

from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.weight_layout import FusedSplit, WeightLayout, split_qkv

# Phi-3: Llama's names, with q/k/v fused in qkv_proj and gate/up (gate first) in gate_up_proj.
WEIGHTS = WeightLayout(
    fused=(
        split_qkv("qkv"),
        FusedSplit(
            r"(.*)\.mlp\.gate_up_proj\.weight", (r"\1.mlp.gate_proj.weight", r"\1.mlp.up_proj.weight"), "gate_up"
        ),
    ),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("phi3",),
    config_class="Phi3Config (transformers 5.24)",
    window_fields=SLIDES,
    names=("phi3", "phi-3"),
    differences=("Phi-3's longrope scaling (128k variants) is not modelled",),
    weights=WEIGHTS,
    left_unread={"original_max_position_embeddings": ANY_VALUE},
)
