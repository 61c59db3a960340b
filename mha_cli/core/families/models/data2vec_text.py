"""Data2Vec-Text run as a causal LM (``is_decoder``): RoBERTa's architecture under ``data2vec_text.``."""

from mha_cli.core.families.models.bert import bert_family

FAMILY = bert_family(
    ("data2vec-text",), "Data2VecTextConfig (transformers 5.24)", "data2vec_text", head="lm_head",
    head_activation="gelu", offset_positions=True,
)  # fmt: skip
