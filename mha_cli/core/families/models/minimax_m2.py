"""MiniMax-M2: q/k RMSNorms over the whole projection, partial RoPE, sigmoid-routed experts chosen with a correction
bias (no groups, renormalised, unscaled) on every layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

ROUTING = {
    "scoring_func": "sigmoid",
    "topk_method": "noaux_tc",
    "norm_topk_prob": True,
    "routed_scaling_factor": 1.0,
    "n_group": 1,
    "topk_group": 1,
}
"""What MiniMaxM2TopKRouter hard-codes, whatever the config says."""


def _rotary_dim(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Released checkpoints give partial RoPE as ``rotary_dim`` (rotated values a head), not a factor."""
    rope, rotary_dim = fields.get("rope"), r.config.get("rotary_dim")
    if rope is None or rotary_dim is None or "partial_rotary_factor" in rope:
        return
    head_dim = fields.get("head_dim") or fields["d_model"] // fields["n_heads"]
    if rotary_dim != head_dim:
        rope["partial_rotary_factor"] = rotary_dim / head_dim


# The correction bias hangs on the MoE block (mlp.e_score_correction_bias), ours on its router.
WEIGHTS = WeightLayout(renames=((r"\.mlp\.e_score_correction_bias$", ".mlp.gate.e_score_correction_bias"),))

FAMILY = Family(
    model_types=("minimax_m2",),
    config_class="MiniMaxM2Config (transformers 5.24)",
    defaults={"head_dim": 128, "num_key_value_heads": 8, "num_local_experts": 256, "num_experts_per_tok": 8},
    layout={"qk_norm": True, "qk_norm_span": "projection"},
    routing_defaults=ROUTING,
    routing_fixed=tuple(ROUTING),
    read_fields=_rotary_dim,
    names=("minimax-m2",),
    equal_test="tests/test_family_sweep.py (the decoder sweep: minimax_m2)",
    weights=WEIGHTS,
)
