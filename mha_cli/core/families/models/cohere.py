"""Cohere (Command R): one LayerNorm before a parallel attention + MLP block, every layer global."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("cohere",),
    config_class="CohereConfig (transformers 5.24)",
    layout={"norm": "layernorm", "n_norms_per_layer": 1},
    tied_by_default=True,
    use_qk_norm_is_rmsnorm=False,  # a LayerNorm per head
    names=("cohere", "command-r"),
    differences=(
        "Cohere's LayerNorm has no bias; this one has one",
        "Cohere applies RoPE to interleaved pairs; here rotate-half",
        "Cohere multiplies the final logits by logit_scale",
    ),
)
