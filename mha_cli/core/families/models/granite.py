"""Granite (3.x): Llama's decoder with Granite's embedding, attention, residual and logit multipliers."""

from mha_cli.core.families import ANY_VALUE, Family

GRANITE_MULTIPLIERS = (
    "Granite's multipliers: embedding_multiplier on the embeddings, attention_multiplier as the softmax scale,"
    " residual_multiplier on each branch, the logits divided by logits_scaling; none here",
)

GRANITE_MULTIPLIER_FIELDS = dict.fromkeys(
    ("embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"), ANY_VALUE
)
"""Granite's multipliers change no figure, and ``differences`` says the decoder does not apply them."""

FAMILY = Family(
    model_types=("granite",),
    config_class="GraniteConfig (transformers 5.24)",
    names=("granite",),
    differences=GRANITE_MULTIPLIERS,
    left_unread=GRANITE_MULTIPLIER_FIELDS,
)
