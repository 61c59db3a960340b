"""Mistral: Llama's decoder with a sliding window on every layer (Mistral-7B-v0.1) or none."""

from mha_cli.core.families import SLIDES, Family

FAMILY = Family(
    model_types=("mistral",),
    config_class="MistralConfig (transformers 5.24)",
    window_fields=SLIDES,
    equal_test="tests/test_nn_model.py::test_same_logits_as_transformers[mistral]",
)
