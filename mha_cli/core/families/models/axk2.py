"""A.X K2: MLA with DeepSeek-V3.2's lightning indexer."""

from mha_cli.core.families import ANY_VALUE, MLA_UNREAD, Family
from mha_cli.core.families.models.deepseek_v32 import INDEXER_FIELDS, INDEXER_TOPK, read_indexer

FAMILY = Family(
    model_types=("axk2",),
    config_class="AXK2Config (transformers 5.24)",
    reads=INDEXER_FIELDS,
    read_fields=read_indexer,
    unbuilt="an indexer",
    defaults={"index_head_dim": 128, "index_n_heads": 16, "index_topk": 2048},
    differences=(
        *INDEXER_TOPK,
        "A.X K2's attention output gate (q_gate_proj) and its low-rank gated norms (gated_norm_rank) are not built;"
        " its weights do not load",
    ),
    uncounted=(
        "weights approximate: its attention's output gate (q_gate_proj, n_heads x v_head_dim x d_model a layer) and"
        " its gated norms' low-rank projections are not counted"
    ),
    left_unread={**MLA_UNREAD, "index_topk": ANY_VALUE, "gated_norm_rank": 16},
)
