"""Phi-3: Llama's arithmetic with fused qkv_proj and gate_up_proj weights; longrope in its 128k variants."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("phi3",),
    config_class="Phi3Config (transformers 5.24)",
    names=("phi3", "phi-3"),
    differences=(
        "Phi-3 stores fused qkv_proj and gate_up_proj weights; here q/k/v and gate/up are separate (same sizes)",
        "Phi-3's longrope scaling (128k variants) is not modelled",
    ),
)
