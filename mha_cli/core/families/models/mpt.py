"""MPT: LayerNorm without biases, a GELU MLP ``expansion_ratio`` x d_model wide, ALiBi; its own field names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.families import Family

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


FAMILY = Family(
    model_types=("mpt",),
    config_class="MptConfig (transformers 5.24)",
    spellings={"layers": ("n_layers",), "heads": ("n_heads",)},
    layout={"mlp": "plain", "norm": "layernorm", "norm_bias": False},  # transformers' MPT has no bias at all
    tied_by_default=True,
    kv_heads=_grouped_kv_heads,
    dense_width=_expansion,
    names=("mpt",),
    differences=("MPT's ALiBi position biases (attn_config.alibi); here RoPE",),
)
