"""Mamba-2 (``mistralai/Mamba-Codestral-7B-v0.1``, ``state-spaces/mamba2-*``): attention-free, every layer one
Mamba-2 mixer and no MLP.

A block is x + mixer(norm(x)), as Mamba's. The mixer has ``num_heads`` heads of ``head_dim`` (their product is
expand x hidden_size, which Mamba2Config checks), ``n_groups`` groups sharing B and C of ``state_size``, a conv over
x, B and C, and its gated RMSNorm (gate, then normalise). ``use_bias`` biases in_proj and out_proj. Each layer holds
heads x head_dim x d_state recurrent values and a conv over d_inner + 2 x groups x d_state channels per sequence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.families.models.mamba import MIXER_NUMERICS, WEIGHTS, every_layer_mixes

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    heads = r.count("num_heads", "num_heads")
    head_dim = r.count("head_dim", "head_dim")
    d_state = r.count("state_size", "state_size")
    groups = r.count("n_groups", "n_groups")
    biased = bool(r.config.get("use_bias", False))
    return {
        "kind": "mamba2", "n_heads": heads, "head_dim": head_dim, "state_dim": d_state, "n_groups": groups,
        "conv_dim": heads * head_dim + 2 * groups * d_state, "conv_kernel": r.count("conv_kernel", "conv_kernel"),
        "conv_bias": bool(r.config.get("use_conv_bias", True)), "in_proj_bias": biased, "out_proj_bias": biased,
    }  # fmt: skip


FAMILY = Family(
    model_types=("mamba2",),
    config_class="Mamba2Config (transformers 5.24)",
    defaults={"num_heads": 128, "head_dim": 64, "state_size": 128, "n_groups": 8, "conv_kernel": 4},
    spellings={"layers": ("n_layer",)},
    layout={"mlp_pattern": ["none"]},
    layer_kinds=every_layer_mixes,
    fixed_state="Mamba-2",
    attention_free=True,
    state=_state,
    names=("mamba2", "mamba-2", "mamba-codestral"),
    weights=WEIGHTS,
    equal_test="tests/test_attention_free.py::test_the_built_model_gives_transformers_logits (whole decoder)",
    left_unread={
        **MIXER_NUMERICS,
        **dict.fromkeys(
            ("chunk_size", "time_step_rank", "time_step_limit", "norm_before_gate", "intermediate_size"), ANY_VALUE
        ),
    },
)
