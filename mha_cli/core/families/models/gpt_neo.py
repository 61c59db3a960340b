"""GPT-Neo: GPT-2's block with separate q/k/v, learned positions, global and local layers (``attention_layers``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.layer_types import kinds_of_layer_types
from mha_cli.core.families.models.gpt2 import GPT2_TREE
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _attention_layers(r: ConfigReader, n_layers: int) -> list[LayerKind] | None:
    """``attention_layers``: "global" or "local", one per layer."""
    listed = r.config.get("attention_layers")
    if not listed:
        return None
    neo = {"global": "full_attention", "local": "sliding_attention"}
    named = [neo.get(str(kind), str(kind)) for kind in listed] if isinstance(listed, list) else listed
    return kinds_of_layer_types(r, named, n_layers)


# GPT-Neo: GPT-2's module tree with nn.Linear (out, in) and separate q/k/v under attn.attention.
WEIGHTS = WeightLayout(
    renames=(
        *GPT2_TREE,
        (r"\.attn\.attention\.out_proj\.", ".self_attn.o_proj."),
        (r"\.attn\.attention\.", ".self_attn."),
        (r"\.mlp\.c_fc\.", ".mlp.up_proj."),
        (r"\.mlp\.c_proj\.", ".mlp.down_proj."),
    ),
    dropped=(r"\.attn\.attention\.(bias|masked_bias)$",),
)

FAMILY = Family(
    model_types=("gpt_neo",),
    config_class="GPTNeoConfig (transformers 5.24)",
    spellings={"heads": ("num_heads",), "window": ("window_size",)},
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "o_bias": True, "attn_scale": 1.0},
    tied_by_default=True,
    layer_kinds=_attention_layers,
    learned_positions="max_position_embeddings",
    names=("gpt-neo", "gpt_neo"),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={"attention_types": ANY_VALUE},
)
