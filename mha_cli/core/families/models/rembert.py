"""RemBERT run as a causal LM (``is_decoder``): BERT's post-LN encoder on embeddings ``input_embedding_size`` wide
(normed at that width, then always projected to hidden_size), and an untied LM head behind a transform to
``output_embedding_size`` (dense, its ``hidden_act``, LayerNorm)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families.models.bert import bert_family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _rembert_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    fields["embedding_size"] = r.count("input_embedding_size", "input_embedding_size")
    output = r.count("output_embedding_size", "output_embedding_size")
    if output != fields["embedding_size"]:
        fields["lm_head_size"] = output


FAMILY = bert_family(
    ("rembert",), "RemBertConfig (transformers 5.24)", "rembert", head="rembert", read_more=_rembert_fields,
    defaults={"input_embedding_size": 256, "output_embedding_size": 1664, "tie_word_embeddings": False},
)  # fmt: skip
