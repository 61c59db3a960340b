"""Phi-3.5-MoE (PhiMoE): Llama's attention with biased LayerNorms, Mixtral-style experts behind a sparsemixer
router (``router``: experts picked one at a time, each weighted by a softmax over the logits near it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _sparsemixer(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Its routing's jitter epsilon (``router_jitter_noise``) and its LM head's bias (``lm_head_bias``: Phi-3.5-MoE
    publishes true; transformers builds it so, and vLLM 0.32 ``phimoe.py`` always)."""
    if "moe" in fields:
        fields["moe"]["sparsemixer_eps"] = float(r.get("router_jitter_noise"))
    fields["lm_head_bias"] = bool(r.get("lm_head_bias"))


FAMILY = Family(
    model_types=("phimoe",),
    config_class="PhimoeConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={"router_jitter_noise": 0.01},
    layout={"norm": "layernorm"},
    read_fields=_sparsemixer,
    names=("phi-3.5-moe", "phimoe"),
    equal_test=EQUAL_BY_SWEEP,
    weights=WeightLayout(renames=((r"\.mlp\.router\.", ".mlp.gate."),), dropped=(r"\.rotary_emb\.inv_freq$",)),
)
