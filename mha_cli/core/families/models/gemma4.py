"""Gemma 4: its full-attention layers have their own head width and KV head count; refused.

transformers 5.24, ``models/gemma4``: ``Gemma4TextConfig.__post_init__`` gives every ``full_attention`` layer a
``per_layer_config`` override of ``head_dim`` (``global_head_dim``, 512 by default, against the sliding layers'
256) and, where ``attention_k_eq_v`` is set, of ``num_key_value_heads`` (``num_global_key_value_heads``: 4 in
gemma-4-31B, against its sliding layers' 16); ``Gemma4TextAttention.__init__`` sizes each layer's q/k/v/o and its
cache from that override. One ``AttentionSpec`` per model cannot hold two head geometries, so a figure priced from
either would be wrong (gemma-4-31B in bf16: 50 sliding layers x 16 x 256 x 2 x 2 B plus 10 full layers x 4 x 512 x
2 x 2 B = 901,120 B per token; at 16 x 256 everywhere, 983,040). The family is registered to say so by name.
"""

from mha_cli.core.families import Family

PER_KIND_HEAD_GEOMETRY = (
    "its full_attention layers cache K/V at their own head width (global_head_dim) and, with attention_k_eq_v,"
    " their own KV head count (num_global_key_value_heads) (transformers' {config} per_layer_config), a per-kind"
    " head geometry mha does not price"
)
"""The refusal of the Gemma 4 families, ``config`` their transformers config class."""

FAMILY = Family(
    model_types=("gemma4", "gemma4_text"),
    config_class="Gemma4TextConfig (transformers 5.24)",
    names=("gemma4", "gemma-4"),
    refused=PER_KIND_HEAD_GEOMETRY.format(config="Gemma4TextConfig"),
)
