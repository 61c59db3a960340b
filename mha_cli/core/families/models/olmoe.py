"""OLMoE: Llama's pre-norm block, q/k RMSNorms over the whole projection (then q, k, v clamped to ``clip_qkv`` when
set), softmax-routed experts on every layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def clip_qkv(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("clip_qkv") is not None:
        fields["qkv_clip"] = float(r.get("clip_qkv"))


FAMILY = Family(
    model_types=("olmoe",),
    config_class="OlmoeConfig (transformers 5.24)",
    defaults={"num_experts": 64, "num_experts_per_tok": 8},
    layout={"qk_norm": True, "qk_norm_span": "projection"},
    routing_defaults={"norm_topk_prob": False},
    read_fields=clip_qkv,
    names=("olmoe",),
    equal_test="tests/test_family_sweep.py (the decoder sweep: olmoe)",
)
