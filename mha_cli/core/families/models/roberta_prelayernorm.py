"""RoBERTa-PreLayerNorm run as a causal LM (``is_decoder``): RoBERTa with pre-LN blocks and a final LayerNorm (its
embeddings still normed)."""

from mha_cli.core.families.models.bert import bert_family

FAMILY = bert_family(
    ("roberta-prelayernorm",), "RobertaPreLayerNormConfig (transformers 5.24)", "roberta_prelayernorm",
    placement="prelayernorm", head="lm_head", head_activation="gelu", offset_positions=True,
)  # fmt: skip
