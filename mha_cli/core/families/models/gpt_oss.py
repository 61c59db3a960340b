"""gpt-oss: sliding-window and global layers alternating, attention sinks, biased experts with a clamped SwiGLU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _expert_biases(r: ConfigReader, fields: dict[str, Any]) -> None:
    if "moe" in fields:
        fields["moe"]["expert_bias"] = True


FAMILY = Family(
    model_types=("gpt_oss",),
    config_class="GptOssConfig (transformers 5.24)",
    layout={"qkv_bias": True, "o_bias": True},
    local_cycle=("local", "global"),
    local_cycle_note="layer pattern: gpt-oss alternates sliding-window and global layers",
    read_fields=_expert_biases,
    names=("gpt-oss",),
    differences=(
        "gpt-oss's attention sinks (a learned logit per head in every softmax)",
        "gpt-oss's clamped SwiGLU (alpha 1.702, (up + 1) gating)",
    ),
)
