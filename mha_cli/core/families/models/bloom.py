"""BLOOM: ALiBi positions, a LayerNorm on the token embeddings, q/k/v fused head by head, a tanh-GELU MLP 4 x
d_model wide, biases everywhere; tied head."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout, split_qkv

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def alibi_positions(r: ConfigReader, fields: dict[str, Any]) -> None:
    """ALiBi in place of the RoPE the standard reader assumes for a model without learned positions (BLOOM, MPT)."""
    fields.pop("rope", None)
    fields["alibi"] = True
    r.assumptions[:] = [note for note in r.assumptions if not note.startswith("rope_theta absent")]


def _bloom_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    alibi_positions(r, fields)
    if r.get("apply_residual_connection_post_layernorm"):
        r.assume(
            None,
            "apply_residual_connection_post_layernorm: BLOOM's residual from the normed input is built from the"
            " block's input (the weights load, the logits differ)",
        )


# BLOOM: query_key_value holds, head by head, that head's query, key and value (n_kv = n_heads groups).
WEIGHTS = WeightLayout(
    renames=(
        (r"^transformer\.word_embeddings\.", "model.embed_tokens."),
        (r"^transformer\.word_embeddings_layernorm\.", "model.embed_norm."),
        (r"^transformer\.ln_f\.", "model.norm."),
        (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
        (r"\.self_attention\.query_key_value\.", ".self_attn.qkv_proj."),
        (r"\.self_attention\.dense\.", ".self_attn.o_proj."),
        (r"\.mlp\.dense_h_to_4h\.", ".mlp.up_proj."),
        (r"\.mlp\.dense_4h_to_h\.", ".mlp.down_proj."),
    ),
    fused=(split_qkv("qkv_per_kv_group"),),
)

LAYOUT = {
    "mlp": "plain", "mlp_bias": True, "activation": "gelu_tanh", "norm": "layernorm", "qkv_bias": True,
    "o_bias": True, "embedding_norm": True,
}  # fmt: skip

FAMILY = Family(
    model_types=("bloom",),
    config_class="BloomConfig (transformers 5.24)",
    layout=LAYOUT,
    tied_by_default=True,
    read_fields=_bloom_fields,
    names=("bloom",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={"slow_but_exact": ANY_VALUE},  # how training split its matmuls,
)
