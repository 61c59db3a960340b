"""Gemma 2: four norms a layer, sliding-window and global layers alternating, soft-capped logits."""

from mha_cli.core.families import Family
from mha_cli.core.families.models.gemma import GEMMA_DIFFERENCES

FAMILY = Family(
    model_types=("gemma2",),
    config_class="Gemma2Config (transformers 5.24)",
    layout={"n_norms_per_layer": 4},
    tied_by_default=True,
    local_cycle=("local", "global"),
    local_cycle_note="layer pattern: Gemma 2 alternates sliding-window and global layers",
    names=("gemma2", "gemma-2"),
    differences=(
        *GEMMA_DIFFERENCES,
        "Gemma 2's soft-capping of attention logits (50) and of the final logits (30)",
        "Gemma 2's softmax scale query_pre_attn_scalar^-0.5; this one uses head_dim^-0.5",
    ),
)
