"""MoE routing fields read from config.json: DeepSeek-V3's sigmoid group-limited routing, DeepSeek-V2's
softmax, Qwen's norm_topk_prob and shared-expert gate (family defaults where a field is absent)."""

from __future__ import annotations

import json

from mha_cli.core.hf_import import import_hf_config
from tests.conftest import reference_hf_config


def _moe(config: dict):
    return import_hf_config(config).model.block.moe


def test_deepseek_v3_config_json_routes_by_sigmoid_in_groups() -> None:
    moe = _moe(json.loads(reference_hf_config("deepseek-v3").read_text()))
    assert (moe.scoring_func, moe.topk_method, moe.norm_topk_prob) == ("sigmoid", "noaux_tc", True)
    assert (moe.n_group, moe.topk_group, moe.routed_scaling_factor, moe.n_dense_layers) == (8, 4, 2.5, 3)


def test_deepseek_v2_lite_routes_greedily_without_renormalising() -> None:
    moe = _moe(json.loads(reference_hf_config("deepseek-v2-lite").read_text()))
    assert (moe.scoring_func, moe.topk_method, moe.norm_topk_prob, moe.n_group) == ("softmax", "greedy", False, 1)


BASE = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
        "vocab_size": 100, "intermediate_size": 128, "moe_intermediate_size": 32, "num_experts": 8,
        "num_experts_per_tok": 2}  # fmt: skip


def test_qwen_moe_families_use_the_configs_norm_topk_prob_else_false() -> None:
    assert _moe({**BASE, "model_type": "qwen3_moe", "norm_topk_prob": True}).norm_topk_prob is True
    assert _moe({**BASE, "model_type": "qwen3_moe"}).norm_topk_prob is False  # transformers' Qwen3MoeConfig default
    qwen2 = _moe({**BASE, "model_type": "qwen2_moe", "shared_expert_intermediate_size": 96})
    assert (qwen2.shared_expert_gate, qwen2.n_shared_experts, qwen2.d_ff_shared) == (True, 1, 96)
    assert qwen2.scoring_func == "softmax" and qwen2.topk_method == "greedy"


def test_mixtral_always_renormalises() -> None:
    config = {**BASE, "model_type": "mixtral", "num_local_experts": 8, "norm_topk_prob": False}
    assert _moe(config).norm_topk_prob is True


def test_qwen_dense_layers_lead_repeat_or_are_listed_layer_by_layer() -> None:
    leading = import_hf_config({**BASE, "model_type": "qwen3_moe", "num_hidden_layers": 4, "mlp_only_layers": [0, 1]})
    assert leading.model.block.moe.n_dense_layers == 2 and leading.model.n_moe_layers == 2
    assert not any("follow no period" in note for note in leading.assumptions)
    every_other = import_hf_config(
        {**BASE, "model_type": "qwen2_moe", "num_hidden_layers": 4, "decoder_sparse_step": 2}
    )
    # layers 0 and 2 dense in transformers, 1 and 3 MoE: exactly that
    assert [every_other.model.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert not any("follow no period" in note for note in every_other.assumptions)
    scattered = import_hf_config({**BASE, "model_type": "qwen3_moe", "num_hidden_layers": 4, "mlp_only_layers": [1]})
    # no period describes MoE on layers 0, 2 and 3: each layer's kind is listed (ModelSpec.mlp_pattern)
    assert [scattered.model.mlp_kind(i) for i in range(4)] == ["moe", "dense", "moe", "moe"]
    assert not any("follow no period" in note for note in scattered.assumptions)
