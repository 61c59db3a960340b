"""HyperCLOVA X: Llama's decoder with peri-layer norms (``use_post_norm``: each sublayer's output normed too, four
norms a layer) and MuP factors: ``attention_multiplier`` the softmax scale, the logits multiplied by
``logits_scaling``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

# Its four norms under Gemma 2's names (in this order: its post_attention_layernorm normalises the MLP's input).
PERI_LAYER_NORMS = (
    (r"\.post_attention_layernorm\.", ".pre_feedforward_layernorm."),
    (r"\.post_norm1\.", ".post_attention_layernorm."),
    (r"\.post_norm2\.", ".post_feedforward_layernorm."),
)


def _fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Four norms with ``use_post_norm``; the MuP softmax scale and logit factor where the config sets them."""
    fields["n_norms_per_layer"] = 4 if r.get("use_post_norm") else 2
    if r.get("attention_multiplier") is not None:
        fields["attn_scale"] = float(r.get("attention_multiplier"))
    fields["logit_scale"] = float(r.get("logits_scaling"))


FAMILY = Family(
    model_types=("hyperclovax",),
    config_class="HyperCLOVAXConfig (transformers 5.24)",
    defaults={"use_post_norm": True, "logits_scaling": 1.0},
    read_fields=_fields,
    names=("hyperclovax", "hyperclova"),
    differences=(
        "HyperCLOVA X's embedding_multiplier and residual_multiplier (1 by default) are not applied",
        "HyperCLOVA X without use_post_norm does not load (its norms are renamed as the peri-layer block's)",
    ),
    weights=WeightLayout(renames=PERI_LAYER_NORMS, dropped=(r"\.rotary_emb\.inv_freq$",)),
    left_unread=dict.fromkeys(("embedding_multiplier", "residual_multiplier"), ANY_VALUE),  # listed in differences,
)
