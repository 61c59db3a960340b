"""BigBird run as a causal LM (``is_decoder``): BERT's architecture under ``bert.``, a tanh-GELU (``gelu_new``) MLP
and head transform, q/k/v biases by ``use_bias``, token embeddings scaled by sqrt(hidden_size) with
``rescale_embeddings``; its causal LM keeps a pooler no logit reads (not counted, not loaded). transformers runs a cached causal LM with full attention (``original_full``) whatever
``attention_type`` says, as it is priced and built here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE
from mha_cli.core.families.models.bert import bert_family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _big_bird_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("use_bias") is False:
        fields["qkv_bias"] = False
    if r.get("rescale_embeddings"):
        fields["scale_embeddings"] = True
    if r.get("attention_type") == "block_sparse":
        r.assumptions.append(
            "attention_type block_sparse: transformers' causal LM attends to every token once it keeps a cache"
            " (original_full), as priced and built"
        )


FAMILY = bert_family(
    ("big_bird",), "BigBirdConfig (transformers 5.24)", "bert", read_more=_big_bird_fields,
    dropped=(r"^bert\.pooler\.",),
    uncounted="its pooler (a hidden_size x hidden_size linear with bias), which no logit reads, is not counted",
    defaults={"hidden_act": "gelu_new", "attention_type": "block_sparse"},
)._replace(left_unread={"block_size": ANY_VALUE, "num_random_blocks": ANY_VALUE})  # fmt: skip
# its block-sparse pattern's sizes: a causal decoder attends fully (transformers' BigBird as a decoder)
