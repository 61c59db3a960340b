"""Cohere2 (Command R7B): one LayerNorm before a parallel attention + MLP block, 3 local : 1 global layers."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("cohere2",),
    config_class="Cohere2Config (transformers 5.24)",
    defaults={"sliding_window": 4096},
    layout={"norm": "layernorm", "n_norms_per_layer": 1},
    tied_by_default=True,
    local_cycle=("local",) * 3 + ("global",),
    local_cycle_note="layer pattern: Cohere2 runs 3 local : 1 global (Cohere2Config)",
    use_qk_norm_is_rmsnorm=False,  # a LayerNorm per head
    names=("cohere2", "command-r7b"),
    differences=(
        "Cohere's LayerNorm has no bias; this one has one",
        "Cohere applies RoPE to interleaved pairs and not at all on its global layers (NoPE); here rotate-half on"
        " every layer",
        "Cohere multiplies the final logits by logit_scale",
    ),
)
