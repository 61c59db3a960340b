"""RoFormer run as a causal LM (``is_decoder``): BERT's post-LN encoder with no learned positions, q and k rotated
by an interleaved RoPE of theta 10,000 over each head, embeddings ``embedding_size`` wide (projected to hidden_size
when it differs) and a head transform back to that width; tied. Its sinusoidal table (``embed_positions``, a
frozen parameter) is recomputed, not loaded; ``rotary_value`` (V rotated too) is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families.models.bert import bert_family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _roformer_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("rotary_value"):
        raise BadInputError(f"{r.origin}: rotary_value: RoFormer's rotated values are not built, so it is refused")
    fields["rope"] = {"theta": 10000.0, "interleaved": True}  # fixed by its modeling code, not read
    r.assumptions[:] = [note for note in r.assumptions if not note.startswith("rope_theta absent")]


FAMILY = bert_family(
    ("roformer",), "RoFormerConfig (transformers 5.24)", "roformer", projects=True, rotary=True,
    read_more=_roformer_fields, dropped=(r"^roformer\.encoder\.embed_positions\.",),
    uncounted="its frozen sinusoidal table (max_position_embeddings x head_dim), recomputed, is not counted",
)  # fmt: skip
