"""Mixtral: Mistral with sparse MoE layers; its router always renormalises the top k."""

from mha_cli.core.families import SLIDES, Family

FAMILY = Family(
    model_types=("mixtral",),
    config_class="MixtralConfig (transformers 5.24)",
    window_fields=SLIDES,
    routing_defaults={"norm_topk_prob": True},
    routing_fixed=("norm_topk_prob",),
    equal_test="tests/test_nn_moe.py (the MoE block only)",
)
