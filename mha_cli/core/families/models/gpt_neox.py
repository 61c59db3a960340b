"""GPT-NeoX (Pythia): a parallel block with two LayerNorms, partial rotate-half RoPE, q/k/v fused head by head."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout, split_qkv

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def partial_rotation(r: ConfigReader, fields: dict[str, Any], pct_key: str, base_key: str) -> None:
    """An older config.json's ``rotary_pct`` (the rotated fraction of a head) and ``rotary_emb_base`` (theta), read
    where transformers 5's ``rope_parameters`` does not state them (GPT-NeoX, Persimmon)."""
    rope = dict(fields.get("rope") or {})
    params = r.config.get("rope_parameters") or {}
    if not isinstance(params, dict) or params.get("partial_rotary_factor") is None:
        rope["partial_rotary_factor"] = float(r.get(pct_key))
    if (not isinstance(params, dict) or params.get("rope_theta") is None) and r.config.get(base_key) is not None:
        rope["theta"] = float(r.config[base_key])
        r.assumptions[:] = [note for note in r.assumptions if not note.startswith("rope_theta absent")]
    fields["rope"] = rope


def _block(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("use_parallel_residual"):
        fields["parallel_residual"] = True
    partial_rotation(r, fields, "rotary_pct", "rotary_emb_base")


# GPT-NeoX: query_key_value holds, head by head, that head's query, key and value (n_kv = n_heads groups).
WEIGHTS = WeightLayout(
    renames=(
        (r"^gpt_neox\.embed_in\.", "model.embed_tokens."),
        (r"^gpt_neox\.final_layer_norm\.", "model.norm."),
        (r"^embed_out\.", "lm_head."),
        (r"^gpt_neox\.layers\.(\d+)\.", r"model.layers.\1."),
        (r"\.attention\.query_key_value\.", ".self_attn.qkv_proj."),
        (r"\.attention\.dense\.", ".self_attn.o_proj."),
        (r"\.mlp\.dense_h_to_4h\.", ".mlp.up_proj."),
        (r"\.mlp\.dense_4h_to_h\.", ".mlp.down_proj."),
    ),
    fused=(split_qkv("qkv_per_kv_group"),),
    dropped=(r"\.attention\.(bias|masked_bias|rotary_emb\.inv_freq)$",),
)

FAMILY = Family(
    model_types=("gpt_neox",),
    config_class="GPTNeoXConfig (transformers 5.24)",
    defaults={"use_parallel_residual": True, "rotary_pct": 0.25, "attention_bias": True},
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True},
    read_fields=_block,
    names=("gpt-neox", "gpt_neox", "pythia"),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
