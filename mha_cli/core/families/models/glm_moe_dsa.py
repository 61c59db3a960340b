"""GLM-5 (glm_moe_dsa): MLA with DeepSeek-V3.2's lightning indexer, on every layer (``indexer_types`` "full")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import MLA_UNREAD, Family
from mha_cli.core.families.models.deepseek_v32 import INDEXER_FIELDS, INDEXER_TOPK, read_indexer
from mha_cli.core.families.models.glm4_moe import FAMILY as GLM4_MOE

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def read_indexer_layers(r: ConfigReader, fields: dict[str, Any]) -> None:
    """The indexer as DeepSeek-V3.2's, on every layer: a layer whose ``indexer_types`` entry is "shared" reuses the
    previous layer's top-k and has no indexer (no weights, no key cached), which the price does not know, so such a
    config is refused."""
    read_indexer(r, fields)
    kinds = r.config.get("indexer_types")
    if kinds is not None and (not isinstance(kinds, list) or set(map(str, kinds)) - {"full"}):
        raise BadInputError(
            f"{r.origin}: indexer_types {str(kinds)[:60]}: layers sharing the previous layer's indexer are not read"
            " (mha prices an indexer key and weights on every layer), so it is refused"
        )


FAMILY = Family(
    model_types=("glm_moe_dsa",),
    config_class="GlmMoeDsaConfig (transformers 5.24)",
    defaults={"index_head_dim": 128, "index_n_heads": 32, "index_topk": 2048},
    routing_defaults=GLM4_MOE.routing_defaults,
    routing_fixed=GLM4_MOE.routing_fixed,
    reads=INDEXER_FIELDS,
    read_fields=read_indexer_layers,
    unbuilt="an indexer",
    differences=INDEXER_TOPK,
    left_unread=MLA_UNREAD,
)
