"""DeepSeek-V3.2: DeepSeek-V3's MLA with a lightning indexer, whose key is cached beside the latent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, MLA_UNREAD, Family
from mha_cli.core.families.models.deepseek_v3 import MTP

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

INDEXER_WEIGHTS = (
    "weights approximate: the lightning indexer's own projections (wq_b, wk, weights_proj, its k norm) are not"
    " counted (about 1% of DeepSeek-V3.2's weights; against transformers on 4-layer configs: GLM-5 -7.4%); the cache"
    " is exact"
)
"""What ``count_params`` leaves out of an indexed-MLA family."""
INDEXER_FIELDS = frozenset({"index_head_dim", "index_n_heads"})
"""The indexer's fields (``hf_import.UNREAD_FIELDS`` outside the indexed-MLA families)."""


def read_indexer(r: ConfigReader, fields: dict[str, Any]) -> None:
    """The indexer key (``index_head_dim`` wide) each MLA layer caches."""
    if "mla" in fields:
        fields["mla"]["indexer"] = {"index_head_dim": r.count("index_head_dim", "index_head_dim")}


FAMILY = Family(
    model_types=("deepseek_v32",),
    config_class="DeepseekV32Config (transformers 5.24)",
    defaults={"index_head_dim": 128},
    reads=INDEXER_FIELDS,
    read_fields=read_indexer,
    names=("deepseek-v3.2", "deepseek-v32"),
    differences=MTP,
    unbuilt="an indexer",
    uncounted=INDEXER_WEIGHTS,
    left_unread={**MLA_UNREAD, "index_topk": ANY_VALUE},
)
