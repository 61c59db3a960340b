"""MPT: ALiBi, LayerNorms and projections without bias, a GELU MLP ``expansion_ratio`` x d_model
wide, q/k/v fused one after the other; its own field names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.bloom import alibi_positions
from mha_cli.core.weight_layout import WeightLayout, split_qkv

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _grouped_kv_heads(r: ConfigReader, n_heads: int) -> int:
    """MPT's attention options live in ``attn_config`` (``kv_n_heads``: grouped KV heads)."""
    grouped = (r.config.get("attn_config") or {}).get("kv_n_heads")
    return int(grouped) if isinstance(grouped, int) and grouped > 0 else n_heads


def _expansion(r: ConfigReader) -> int | None:
    if r.get("expansion_ratio") is None:
        return None
    return r.count("expansion_ratio", "expansion_ratio") * r.count("hidden size", "d_model")


def _mpt_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """transformers' MPT always applies ALiBi (slopes for alibi_bias_max 8, whatever attn_config says), builds no
    bias whatever ``no_bias`` says, and reads attn_config's softmax_scale and clip_qkv (the fused q/k/v clamped)."""
    alibi_positions(r, fields)
    attn = r.config.get("attn_config") or {}
    if attn.get("softmax_scale"):
        fields["attn_scale"] = float(attn["softmax_scale"])
    if attn.get("clip_qkv"):
        fields["qkv_clip"] = float(attn["clip_qkv"])


# MPT: Wqkv holds q, k, v one after the other (MHA).
WEIGHTS = WeightLayout(
    renames=(
        (r"^transformer\.wte\.", "model.embed_tokens."),
        (r"^transformer\.norm_f\.", "model.norm."),
        (r"^transformer\.blocks\.(\d+)\.", r"model.layers.\1."),
        (r"\.norm_1\.", ".input_layernorm."),
        (r"\.norm_2\.", ".post_attention_layernorm."),
        (r"\.attn\.Wqkv\.", ".self_attn.qkv_proj."),
        (r"\.attn\.out_proj\.", ".self_attn.o_proj."),
        (r"\.ffn\.", ".mlp."),
    ),
    fused=(split_qkv("qkv"),),
)

FAMILY = Family(
    model_types=("mpt",),
    config_class="MptConfig (transformers 5.24)",
    spellings={"layers": ("n_layers",), "heads": ("n_heads",)},
    layout={"mlp": "plain", "norm": "layernorm", "norm_bias": False},  # transformers' MPT has no bias at all
    tied_by_default=True,
    kv_heads=_grouped_kv_heads,
    dense_width=_expansion,
    read_fields=_mpt_fields,
    names=("mpt",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread=dict.fromkeys(
        ("max_seq_len", "learned_pos_emb", "init_device", "logit_scale", "no_bias", "embedding_fraction", "norm_type"),
        ANY_VALUE,
    ),  # unused by transformers' MPT,
)
