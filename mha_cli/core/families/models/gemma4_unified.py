"""Gemma 4 Unified: Gemma 4's per-kind head geometry without its MoE and per-layer embeddings; refused as Gemma 4.

transformers 5.24, ``models/gemma4_unified``: ``Gemma4UnifiedTextConfig.__post_init__`` builds the same
``per_layer_config`` override of ``head_dim`` (``global_head_dim``) and, with ``attention_k_eq_v``, of
``num_key_value_heads`` (``num_global_key_value_heads``) on every ``full_attention`` layer as Gemma 4's.
"""

from mha_cli.core.families import Family
from mha_cli.core.families.models.gemma4 import PER_KIND_HEAD_GEOMETRY

FAMILY = Family(
    model_types=("gemma4_unified", "gemma4_unified_text"),
    config_class="Gemma4UnifiedTextConfig (transformers 5.24)",
    names=("gemma4-unified", "gemma-4-unified"),
    refused=PER_KIND_HEAD_GEOMETRY.format(config="Gemma4UnifiedTextConfig"),
)
