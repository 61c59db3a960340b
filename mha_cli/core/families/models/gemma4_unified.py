"""Gemma 4 Unified: Gemma 4's per-kind head geometry and K/V sharing without its MoE and per-layer embeddings; read as
Gemma 4.

transformers 5.24, ``models/gemma4_unified``: ``Gemma4UnifiedTextConfig.__post_init__`` builds the same
``per_layer_config`` override of ``head_dim`` (``global_head_dim``) and, with ``attention_k_eq_v``, of
``num_key_value_heads`` (``num_global_key_value_heads``) on every ``full_attention`` layer as Gemma 4's; its own
defaults differ (a 1,024-token window, 262,144 positions).
"""

from mha_cli.core.families import ANY_VALUE, SLIDES
from mha_cli.core.families.models.gemma4 import FAMILY as GEMMA4

FAMILY = GEMMA4._replace(
    model_types=("gemma4_unified", "gemma4_unified_text"),
    config_class="Gemma4UnifiedTextConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={
        **{key: value for key, value in GEMMA4.defaults.items() if "per_layer_input" not in key},
        "sliding_window": 1024,
        "max_position_embeddings": 262144,
    },
    names=("gemma4-unified", "gemma-4-unified"),
    differences=GEMMA4.differences[:1],  # its per-kind heads; it has no MoE block
    uncounted=None,
    unbuilt="per-kind head geometry and K/V-sharing",
    left_unread={"use_bidirectional_attention": ANY_VALUE},
)
