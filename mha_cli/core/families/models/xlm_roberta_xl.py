"""XLM-RoBERTa-XL run as a causal LM (``is_decoder``): RoBERTa with pre-LN blocks and a final LayerNorm, its
embeddings not normed."""

from mha_cli.core.families.models.bert import bert_family

FAMILY = bert_family(
    ("xlm-roberta-xl",), "XLMRobertaXLConfig (transformers 5.24)", "roberta", placement="xl", head="lm_head",
    head_activation="gelu", offset_positions=True, embedding_norm=False,
)  # fmt: skip
