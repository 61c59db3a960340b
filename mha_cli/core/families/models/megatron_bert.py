"""Megatron-BERT run as a causal LM (``is_decoder``): BERT with pre-LN blocks and a final LayerNorm, its
embeddings not normed; BERT's LM head."""

from mha_cli.core.families.models.bert import bert_family

FAMILY = bert_family(
    ("megatron-bert",), "MegatronBertConfig (transformers 5.24)", "bert", placement="megatron", embedding_norm=False,
)  # fmt: skip
