"""Falcon: one LayerNorm before a parallel attention + MLP block; MQA (7B) or grouped KV heads (40B, 180B)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family

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


def _biases(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("bias"):
        fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = True


FAMILY = Family(
    model_types=("falcon",),
    config_class="FalconConfig (transformers 5.24)",
    old_names=("RefinedWebModel", "RefinedWeb"),
    layout={"mlp": "plain", "norm": "layernorm", "n_norms_per_layer": 1},
    tied_by_default=True,
    kv_heads=_kv_heads,
    read_fields=_biases,
    names=("falcon",),
    differences=(
        "Falcon stores a fused query_key_value weight under transformer.h.N; here Llama's names and separate q/k/v",
    ),
)
