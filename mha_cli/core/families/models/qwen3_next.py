"""Qwen3-Next: Gated DeltaNet layers, every ``full_attention_interval``-th layer gated softmax attention."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.state_readers import gated_deltanet_state
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind

GATED_DELTANET_DEFAULTS = {
    "head_dim": 256, "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
}  # fmt: skip
"""The Gated DeltaNet fields' defaults, the same in Qwen3-Next's and Qwen3.5's config classes."""


def every_nth_attention(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    """Every ``full_attention_interval``-th layer attends; the others are Gated DeltaNet."""
    every = r.count("full_attention_interval", "full_attention_interval")
    return ["global" if (i + 1) % every == 0 else "linear" for i in range(n_layers)]


WEIGHTS = WeightLayout(renames=((r"\.linear_attn\.", ".self_attn."),))
"""Its Gated DeltaNet layers hold their mixer as ``linear_attn``; ours sits where attention would (``self_attn``)."""

FAMILY = Family(
    model_types=("qwen3_next",),
    config_class="Qwen3NextConfig (transformers 5.24)",
    defaults=GATED_DELTANET_DEFAULTS,
    layout={"qk_norm": True, "attn_output_gate": True, "norm_weight_offset": 1.0},  # (1 + weight) RMSNorms
    layer_kinds=every_nth_attention,
    fixed_state="Gated DeltaNet",
    state=gated_deltanet_state,
    gated_shared_expert=True,
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
)
