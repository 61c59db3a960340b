"""ERNIE 4.5: Llama's decoder with RoPE on interleaved pairs; tied embeddings."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

FAMILY = Family(
    model_types=("ernie4_5",),
    config_class="Ernie4_5Config (transformers 5.24)",
    tied_by_default=True,
    interleaved_rope=True,
    equal_test=EQUAL_BY_SWEEP,
)
