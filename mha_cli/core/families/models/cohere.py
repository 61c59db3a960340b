"""Cohere (Command R): one bias-free LayerNorm before a parallel attention + MLP block, interleaved RoPE on every
layer, the logits scaled by ``logit_scale``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

LAYOUT = {"norm": "layernorm", "norm_bias": False, "n_norms_per_layer": 1}
"""CohereLayerNorm: mean and variance over d_model, a weight and no bias; attention and MLP read the same norm."""


def logit_scale(r: ConfigReader, fields: dict[str, Any]) -> None:
    """CohereForCausalLM multiplies its logits by ``logit_scale``."""
    scale = r.get("logit_scale")
    if scale is not None:
        fields["logit_scale"] = float(scale)


FAMILY = Family(
    model_types=("cohere",),
    config_class="CohereConfig (transformers 5.24)",
    defaults={"logit_scale": 0.0625},
    layout=LAYOUT,
    tied_by_default=True,
    use_qk_norm_is_rmsnorm=False,  # a LayerNorm per head
    interleaved_rope=True,
    read_fields=logit_scale,
    names=("cohere", "command-r"),
    differences=(
        "Cohere's use_qk_norm LayerNorms (a weight row per head, Command R+) are not built: such a checkpoint does"
        " not load",
    ),
)
