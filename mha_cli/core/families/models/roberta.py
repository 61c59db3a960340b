"""RoBERTa run as a causal LM (``is_decoder``): BERT's post-LN encoder, positions numbered from pad_token_id + 1
(position p at row padding_idx + 1 + p), an LM head behind a dense, exact GELU and LayerNorm; tied."""

from mha_cli.core.families.models.bert import bert_family

FAMILY = bert_family(
    ("roberta",), "RobertaConfig (transformers 5.24)", "roberta", head="lm_head", head_activation="gelu",
    offset_positions=True,
)  # fmt: skip
