"""GPT-BigCode (SantaCoder, StarCoder 1): GPT-2's block with nn.Linear weights and multi-query attention."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.gpt2 import GPT2_BLOCK, GPT2_TREE
from mha_cli.core.weight_layout import WeightLayout, split_qkv

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _kv_heads(r: ConfigReader, n_heads: int) -> int:
    """``multi_query`` (default true): one KV head; false: one per query head (num_key_value_heads is not read)."""
    return 1 if r.get("multi_query") else n_heads


# GPT-BigCode: c_attn is q (all heads), then k, then v with multi_query; head by head (q, k, v) without it;
# both are n_kv groups of (query heads, key, value).
WEIGHTS = WeightLayout(
    renames=(
        *GPT2_TREE,
        *GPT2_BLOCK,
    ),
    fused=(split_qkv("qkv_per_kv_group"),),
    dropped=(r"\.attn\.(bias|masked_bias)$",),
)

FAMILY = Family(
    model_types=("gpt_bigcode",),
    config_class="GPTBigCodeConfig (transformers 5.24)",
    defaults={"multi_query": True},
    spellings={"d_ff": ("n_inner",)},
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True},
    tied_by_default=True,
    kv_heads=_kv_heads,
    learned_positions="n_positions",
    names=("gpt_bigcode", "gpt-bigcode", "santacoder"),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={
        "scale_attn_weights": True,
        "num_key_value_heads": ANY_VALUE,
        **dict.fromkeys(("attention_softmax_in_fp32", "scale_attention_softmax_in_fp32"), ANY_VALUE),
    },
)
