"""RoCBert run as a causal LM: BERT whose token embeddings are joined by pronunciation and shape embeddings of each
token (concatenated, then projected); refused (those embeddings are not counted or built)."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("roc_bert",),
    config_class="RoCBertConfig (transformers 5.24)",
    refused="its pronunciation and shape embeddings (concatenated with the token embeddings, then projected) are not"
    " counted or built",
)
