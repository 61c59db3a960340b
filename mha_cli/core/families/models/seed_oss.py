"""Seed-OSS: Llama's decoder with q/k/v biases and none on o (``attention_out_bias``)."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

FAMILY = Family(
    model_types=("seed_oss",),
    config_class="SeedOssConfig (transformers 5.24)",
    equal_test=EQUAL_BY_SWEEP,
)
