"""Falcon: one LayerNorm before a parallel attention + MLP block (7B), two (40B, 180B: ``parallel_residual``), or a
sequential pre-norm block (``parallel_attn`` false); MQA (7B) or grouped KV heads (40B, 180B)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.weight_layout import WeightLayout, split_qkv

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _kv_heads(r: ConfigReader, n_heads: int) -> int | None:
    """Falcon-40B/180B's ``new_decoder_architecture`` groups KV heads; the 7B's MQA is the default."""
    if r.get("new_decoder_architecture"):
        if r.get("num_kv_heads", "n_head_kv") is None:
            return r.assume(n_heads, "num_kv_heads absent: one KV head per query head (the falcon default)")
        return r.count("num_kv_heads", "num_kv_heads", "n_head_kv")
    if r.get("multi_query") is None:
        return r.assume(1, "multi_query absent: MQA, the falcon default")
    return None  # the standard reading (multi_query true: 1)


def _biases_and_norms(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("bias"):
        fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = True
    if r.get("new_decoder_architecture") and r.get("num_ln_in_parallel_attn") != 1:
        fields["n_norms_per_layer"] = 2  # Falcon-40B/180B: ln_attn and ln_mlp, each before its branch
        fields["parallel_residual"] = True
    elif not r.get("new_decoder_architecture") and r.get("parallel_attn") is False:
        fields["n_norms_per_layer"] = 2  # Falcon-RW: a sequential pre-norm block


# Falcon (RefinedWeb): query_key_value holds one group per KV head (its query heads, its key, its value). Its new
# decoder architecture's two parallel norms (ln_attn, ln_mlp) are a parallel_residual block's two.
WEIGHTS = WeightLayout(
    renames=(
        (r"^transformer\.word_embeddings\.", "model.embed_tokens."),
        (r"\.ln_attn\.", ".input_layernorm."),
        (r"\.ln_mlp\.", ".post_attention_layernorm."),
        (r"^transformer\.ln_f\.", "model.norm."),
        (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
        (r"\.self_attention\.query_key_value\.", ".self_attn.qkv_proj."),
        (r"\.self_attention\.dense\.", ".self_attn.o_proj."),
        (r"\.mlp\.dense_h_to_4h\.", ".mlp.up_proj."),
        (r"\.mlp\.dense_4h_to_h\.", ".mlp.down_proj."),
    ),
    fused=(split_qkv("qkv_per_kv_group"),),
    dropped=(r"\.self_attention\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("falcon",),
    config_class="FalconConfig (transformers 5.24)",
    old_names=("RefinedWebModel", "RefinedWeb"),
    layout={"mlp": "plain", "norm": "layernorm", "n_norms_per_layer": 1},
    tied_by_default=True,
    kv_heads=_kv_heads,
    read_fields=_biases_and_norms,
    names=("falcon",),
    equal_test="tests/test_hf_state_dict.py::test_a_converted_family_loads_strictly_and_gives_transformers_logits",
    weights=WEIGHTS,
    left_unread={  # the first two are read where they count (the old and new decoder architecture)
        "num_ln_in_parallel_attn": ANY_VALUE,
        "parallel_attn": ANY_VALUE,
        "num_kv_heads": ANY_VALUE,
        # written by transformers 5.25's FalconConfig.__post_init__, derived from the fields above: num_kv_heads under
        # the new decoder architecture or without multi_query, else 1, the value _kv_heads builds
        "num_key_value_heads": ANY_VALUE,
        "activation": "gelu",
    },
)
