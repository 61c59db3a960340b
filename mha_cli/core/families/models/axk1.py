"""A.X K1: DeepSeek-V3 (MLA, sigmoid routing with its correction bias) with an RMSNorm on each MoE block's output
(``post_mlp_layernorm``; its dense layers' copy in the checkpoints is unused)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, MLA_UNREAD, Family
from mha_cli.core.families.models.deepseek_v3 import FAMILY as DEEPSEEK_V3

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _output_norm(r: ConfigReader, fields: dict[str, Any]) -> None:
    if "moe" in fields:
        fields["moe"]["output_norm"] = True


FAMILY = Family(
    model_types=("axk1",),
    config_class="AXK1Config (transformers 5.24)",
    routing_defaults=DEEPSEEK_V3.routing_defaults,
    routing_fixed=DEEPSEEK_V3.routing_fixed,
    read_fields=_output_norm,
    names=("a.x-k1", "axk1"),
    equal_test=EQUAL_BY_SWEEP,
    left_unread=MLA_UNREAD,
)
