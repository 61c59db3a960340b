"""ELECTRA's generator run as a causal LM (``is_decoder``): BERT's post-LN encoder on embeddings ``embedding_size``
wide (normed at that width, then projected to hidden_size when narrower or wider), and an LM head behind a dense
back to that width, exact GELU and LayerNorm; tied."""

from mha_cli.core.families.models.bert import bert_family

FAMILY = bert_family(
    ("electra",), "ElectraConfig (transformers 5.24)", "electra", head="generator", head_activation="gelu",
    projects=True,
)  # fmt: skip
