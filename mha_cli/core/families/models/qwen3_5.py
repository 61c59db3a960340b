"""Qwen3.5 (dense): Qwen3-Next's Gated DeltaNet : gated attention layout without experts, the mixer's projections
split (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families.models.qwen3_next import FAMILY as QWEN3_NEXT
from mha_cli.core.families.state_readers import gated_deltanet_state

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def split_gated_deltanet_state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Qwen3-Next's Gated DeltaNet state; its four projections hold q/k/v, z, b and a head after head."""
    return {**gated_deltanet_state(r, d_model, fields), "split_projections": True}


FAMILY = QWEN3_NEXT._replace(
    model_types=("qwen3_5", "qwen3_5_text"), config_class="Qwen3_5TextConfig (transformers 5.24)",
    gated_shared_expert=False, state=split_gated_deltanet_state,
    equal_test="tests/test_family_sweep.py (the decoder sweep: qwen3_5_text)",
)  # fmt: skip
