"""Youtu-LLM: a decoder with the standard fields, tied embeddings by default."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

FAMILY = Family(
    model_types=("youtu",),
    config_class="YoutuConfig (transformers 5.24)",
    tied_by_default=True,
    equal_test=EQUAL_BY_SWEEP,
)
