"""Youtu-LLM: a decoder with the standard fields, tied embeddings by default."""

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, MLA_UNREAD, Family

FAMILY = Family(
    model_types=("youtu",),
    config_class="YoutuConfig (transformers 5.24)",
    tied_by_default=True,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={**MLA_UNREAD, "embedding_initializer_range": ANY_VALUE},
)
