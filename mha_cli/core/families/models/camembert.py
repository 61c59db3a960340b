"""CamemBERT run as a causal LM (``is_decoder``): RoBERTa's architecture and weight names (``roberta.``)."""

from mha_cli.core.families.models.bert import bert_family

FAMILY = bert_family(
    ("camembert",), "CamembertConfig (transformers 5.24)", "roberta", head="lm_head", head_activation="gelu",
    offset_positions=True,
)  # fmt: skip
