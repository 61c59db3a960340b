"""BertGeneration's decoder: BERT's post-LN encoder run causally without token types, its LM head a plain
decoder with a bias (no transform); tied."""

from mha_cli.core.families.models.bert import bert_family

FAMILY = bert_family(("bert-generation",), "BertGenerationConfig (transformers 5.24)", "bert", head="decoder_only")
