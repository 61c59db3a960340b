"""Cohere2 (Command R7B): Cohere's block (one bias-free LayerNorm, a parallel attention + MLP, scaled logits),
3 local : 1 global layers, interleaved RoPE on the local layers only (its global layers are NoPE)."""

from mha_cli.core.families import SLIDES, Family
from mha_cli.core.families.models.cohere import LAYOUT, logit_scale

FAMILY = Family(
    model_types=("cohere2",),
    config_class="Cohere2Config (transformers 5.24)",
    window_fields=SLIDES,
    defaults={"sliding_window": 4096, "logit_scale": 0.0625},
    layout={**LAYOUT, "nope_layers": "global"},
    tied_by_default=True,
    local_cycle=("local",) * 3 + ("global",),
    local_cycle_note="layer pattern: Cohere2 runs 3 local : 1 global (Cohere2Config)",
    use_qk_norm_is_rmsnorm=False,  # a LayerNorm per head
    interleaved_rope=True,
    read_fields=logit_scale,
    names=("cohere2", "command-r7b"),
    equal_test="tests/test_family_sweep.py (the decoder sweep: cohere2)",
)
