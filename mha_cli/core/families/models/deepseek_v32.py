"""DeepSeek-V3.2: DeepSeek-V3's MLA with a lightning indexer, whose key is cached beside the latent and whose top
``index_topk`` keys each query attends to (its weights built, ``nn.indexer``; the selection not)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import MLA_UNREAD, Family
from mha_cli.core.families.models.deepseek_v3 import FAMILY as DEEPSEEK_V3
from mha_cli.core.families.models.deepseek_v3 import MTP

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

INDEXER_FIELDS = frozenset({"index_head_dim", "index_n_heads"})
"""The indexer's fields (``hf_import.UNREAD_FIELDS`` outside the indexed-MLA families)."""
INDEXER_TOPK = (
    "the lightning indexer's top-k selection: its weights load and are counted, but every query attends to all its"
    " keys, which equals the model only up to index_topk keys (2048 for DeepSeek-V3.2); past them, dense attention",
)
"""What the decoder does not reproduce of an indexed-MLA family."""


def read_indexer(r: ConfigReader, fields: dict[str, Any]) -> None:
    """The indexer key (``index_head_dim`` wide) each MLA layer caches, its query heads and its top k."""
    if "mla" in fields:
        fields["mla"]["indexer"] = {
            "index_head_dim": r.count("index_head_dim", "index_head_dim"),
            "index_n_heads": r.count("index_n_heads", "index_n_heads"),
            "index_topk": r.count("index_topk", "index_topk"),
        }


FAMILY = Family(
    model_types=("deepseek_v32",),
    config_class="DeepseekV32Config (transformers 5.24)",
    defaults={"index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048},
    routing_defaults=DEEPSEEK_V3.routing_defaults,
    routing_fixed=DEEPSEEK_V3.routing_fixed,
    reads=INDEXER_FIELDS,
    read_fields=read_indexer,
    names=("deepseek-v3.2", "deepseek-v32"),
    differences=MTP + INDEXER_TOPK,
    unbuilt="an indexer",
    left_unread=MLA_UNREAD,
)
