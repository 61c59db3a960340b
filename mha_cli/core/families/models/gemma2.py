"""Gemma 2: four norms a layer, sliding-window and global layers alternating, soft-capped logits."""

from mha_cli.core.families import SLIDES, Family
from mha_cli.core.families.models.gemma import GEMMA_LAYOUT

FAMILY = Family(
    model_types=("gemma2",),
    config_class="Gemma2Config (transformers 5.24)",
    window_fields=SLIDES,
    defaults={
        "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
        "hidden_activation": "gelu_pytorch_tanh",
    },
    spellings={"activation": ("hidden_activation",)},
    layout={**GEMMA_LAYOUT, "n_norms_per_layer": 4},
    tied_by_default=True,
    local_cycle=("local", "global"),
    local_cycle_note="layer pattern: Gemma 2 alternates sliding-window and global layers",
    names=("gemma2", "gemma-2"),
    equal_test="tests/test_nn_gemma.py::test_gemma_logits_equal_transformers[gemma2]",
    left_unread={"use_bidirectional_attention": False},
)
