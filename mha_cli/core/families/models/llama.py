"""Llama (1-3.3): the reference decoder, built equal to transformers."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("llama",),
    config_class="LlamaConfig (transformers 5.24)",
    equal_test="tests/test_nn_model.py::test_same_logits_as_transformers[llama-3]",
)
