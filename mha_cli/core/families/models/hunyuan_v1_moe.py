"""Hunyuan MoE (v1): per-head q/k norms, ``moe_topk`` experts a token and one shared MLP in every layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _shared_mlp(r: ConfigReader, fields: dict[str, Any]) -> None:
    if "moe" in fields:
        fields["moe"]["n_shared_experts"] = 1


FAMILY = Family(
    model_types=("hunyuan_v1_moe",),
    config_class="HunYuanMoEV1Config (transformers 5.24)",
    spellings={"experts_per_token": ("moe_topk",)},
    layout={"qk_norm": True},
    read_fields=_shared_mlp,
)
