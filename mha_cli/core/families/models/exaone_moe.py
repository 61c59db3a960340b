"""EXAONE MoE: EXAONE 4's attention (per-head q/k norms, RoPE on its sliding layers), sigmoid-routed experts beside
shared experts, its dense layers listed in ``mlp_layer_types``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.families.models.exaone4 import nope_full_attention
from mha_cli.core.families.models.glm4_moe import SIGMOID_NOAUX

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

NOPE_GLOBAL = (
    "EXAONE 4's full-attention layers skip RoPE (NoPE) when the model has a sliding window; here every layer is rotary"
)


def _read_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    nope_full_attention(r, fields)
    num_shared_experts(r, fields)


def num_shared_experts(r: ConfigReader, fields: dict[str, Any]) -> None:
    """``num_shared_experts``: EXAONE MoE's and Sarvam's spelling of n_shared_experts. (Their ``mlp_layer_types``,
    ``dense`` or ``sparse`` per layer, the standard reader reads.)"""
    moe = fields.get("moe")
    if moe is None:
        return
    if r.config.get("n_shared_experts") is None and r.get("num_shared_experts") is not None:
        moe["n_shared_experts"] = r.get("num_shared_experts")


FAMILY = Family(
    model_types=("exaone_moe",),
    config_class="ExaoneMoeConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={"num_shared_experts": 1, "first_k_dense_replace": 1, "num_key_value_heads": 32},
    layout={"qk_norm": True},
    routing_defaults={
        "scoring_func": "sigmoid",
        "topk_method": "noaux_tc",
        "norm_topk_prob": True,
        "routed_scaling_factor": 2.5,
        "n_group": 1,
        "topk_group": 1,
    },
    routing_fixed=SIGMOID_NOAUX,
    read_fields=_read_fields,
    names=("exaone-moe", "k-exaone"),
    equal_test="tests/test_family_sweep.py (the decoder sweep: exaone_moe)",
    left_unread={"sliding_window_pattern": ANY_VALUE},
)
