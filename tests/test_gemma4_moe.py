"""Gemma 4's MoE block (26B-A4B, ``enable_moe_block``): a dense MLP beside 128 routed experts in every layer. Its
weights are counted by hand and against transformers' own model built from the same config (meta and random
weights), its cache against what transformers allocates, and the published config is planned and sized by the CLI."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from tests.test_gemma4_family import tiny_gemma4_prefill

CONFIG_26B = Path(__file__).parent / "fixtures" / "hf_configs" / "gemma-4-26b-a4b.json"
"""google/gemma-4-26B-A4B's config.json (tests/fixtures/hf_configs/SOURCES.md)."""
BF16 = 2


def _text_26b() -> dict:
    return json.loads(CONFIG_26B.read_text())["text_config"]


def _by_hand_26b() -> tuple[int, int]:
    """(total, active) weights of gemma-4-26B-A4B's text model, by hand from its config: d 2816, 30 layers (25 sliding
    with 16 heads and 8 KV heads of 256, 5 full with 16 heads and 2 KV heads of 512, K as V), a dense MLP of 2112 and
    128 experts of 704 (8 a token), a tied 262,144-row embedding."""
    d, vocab, layers, experts, active_experts = 2816, 262144, 30, 128, 8
    sliding = 2 * d * 16 * 256 + 2 * d * 8 * 256 + 2 * 256  # q, o; k, v; q_norm, k_norm
    full = 2 * d * 16 * 512 + d * 2 * 512 + 2 * 512  # q, o; k (attention_k_eq_v: no v_proj); q_norm, k_norm
    one_expert = 3 * d * 704  # gate, up (fused (E, 2f, d)) and down (E, d, f)
    per_layer = (
        7 * d  # 4 layer norms + pre_feedforward_layernorm_2, post_feedforward_layernorm_1, _2
        + 3 * d * 2112  # the dense MLP beside the experts
        + experts * d
        + d
        + experts  # router.proj, router.scale, router.per_expert_scale
        + experts * one_expert
    )
    total = vocab * d + 25 * sliding + 5 * full + layers * per_layer + d  # final norm
    return total, total - layers * (experts - active_experts) * one_expert


def test_gemma4_26b_a4b_weights_by_hand_equal_transformers_and_the_published_25_2b_and_3_8b():
    """The model card gives 25.2B total and 3.8B active (https://huggingface.co/google/gemma-4-26B-A4B, "Total
    Parameters", "Active Parameters"; the vision encoder apart): by hand 25,233,141,760 and 3,822,530,560, the same
    count transformers' Gemma4ForCausalLM has on the meta device, and mha's beside the vision tower it lists
    (``tests/test_vision_tower.py``: 572,792,112, the card's "~550M" encoder and its projector)."""
    total, active = _by_hand_26b()
    assert (total, active) == (25_233_141_760, 3_822_530_560)
    assert round(total / 1e9, 1) == 25.2 and round(active / 1e9, 1) == 3.8
    counted = count_params(import_hf_config(json.loads(CONFIG_26B.read_text())).model)
    assert (counted.total - counted.vision_tower, counted.active) == (total, active)
    assert counted.vision_tower == TOWER_26B
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    fields = {k: v for k, v in _text_26b().items() if k != "model_type"}
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(**fields))
    assert sum(p.numel() for p in model.parameters()) == total


TOWER_26B = 572_792_112
"""Gemma 4 26B-A4B's vision tower and embedder (``core.vision_tower``; transformers' own count in
``tests/test_vision_tower.py``)."""

TINY_MOE = {
    "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 6, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 8, "global_head_dim": 16, "num_global_key_value_heads": 1,
    "attention_k_eq_v": True, "sliding_window": 16, "hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
    "enable_moe_block": True, "num_experts": 6, "top_k_experts": 2, "moe_intermediate_size": 8,
}  # fmt: skip
"""A tiny Gemma 4 with the MoE block: 6 experts of 8 (2 a token) beside a dense MLP of 48."""


def test_a_tiny_gemma4_moe_s_weights_and_cache_equal_transformers_with_random_weights():
    """transformers' model from the config object, random weights: its parameter count is mha's, and the cache a
    12-token prefill of 2 sequences allocates is mha's KV bytes (fp32)."""
    _, model, cache = tiny_gemma4_prefill(TINY_MOE)
    spec = import_hf_config({"model_type": "gemma4_text", **TINY_MOE}).model
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    names = {name for name, _ in model.named_parameters()}
    assert {"model.layers.0.router.scale", "model.layers.0.router.per_expert_scale"} <= names  # what is counted
    allocated = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
    assert allocated == 2 * 12 * (4 * 2 * 2 * 8 + 2 * 2 * 1 * 16)  # sliding 2 x 8, full 1 x 16, K and V
    assert kv_footprint(spec, seq_len=12, batch=2, kv_dtype="fp32").total_bytes == allocated * 4


def test_gemma4_26b_a4b_s_cache_is_gemma4_s_per_kind_sum(cli):
    """bf16, below the window: 25 sliding x 8 x 256 x 2 (K, V) x 2 B + 5 full x 2 x 512 x 2 x 2 B = 225,280 B a
    token; the MoE block changes no cache."""
    kv = cli.json("kv", str(CONFIG_26B))["kv"]
    assert kv["bytes_per_token"] == 25 * 8 * 256 * 2 * BF16 + 5 * 2 * 512 * 2 * BF16 == 225_280


def test_gemma4_26b_a4b_plans_on_an_h100_with_its_experts_and_dense_mlp(cli):
    """``mha plan`` prices it (vLLM, one H100): the bf16 weights of all 25,233,141,760 parameters and the vision
    tower's 572,792,112 on the one device (none of the tower with --text-only), every expert whole, and a decode step
    priced."""
    pick = cli.json("plan", str(CONFIG_26B), "--target", "h100")["candidates"][0]
    assert pick["memory"]["weight_bytes_per_device"] == (_by_hand_26b()[0] + TOWER_26B) * BF16 == 51_611_867_744
    text_only = cli.json("plan", str(CONFIG_26B), "--target", "h100", "--text-only")["candidates"][0]
    assert text_only["memory"]["weight_bytes_per_device"] == _by_hand_26b()[0] * BF16 == 50_466_283_520
    assert pick["memory"]["weights_fit"] and pick["memory"]["experts_per_device"] == "all 128 experts whole"
    assert pick["decode_step"]["flops"] > 0


def test_the_inventory_names_and_shapes_every_weight_as_transformers_gemma4_does():
    """mha's inventory of the tiny model is transformers' ``named_parameters``, name for name and shape for shape:
    the dense MLP at ``layers.N.mlp``, the router at ``layers.N.router`` (proj, scale, per_expert_scale), the experts
    at ``layers.N.experts``, the branch norms on the layer; what a checkpoint's ignore list is matched against."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from mha_cli.core.inventory import model_tensors

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(**TINY_MOE))
    theirs = {name: tuple(p.shape) for name, p in model.named_parameters()}
    spec = import_hf_config({"model_type": "gemma4_text", **TINY_MOE}).model
    ours = {t.name: t.shape for t in model_tensors(spec)}
    assert ours == theirs
    assert ours["model.layers.0.router.proj.weight"] == (6, 32)
    assert ours["model.layers.0.mlp.gate_proj.weight"] == (48, 32)


CONFIG_26B_NVFP4 = CONFIG_26B.with_name("gemma-4-26b-a4b-nvfp4.json")
"""nvidia/Gemma-4-26B-A4B-NVFP4's config.json: ModelOpt NVFP4 on every Linear but those its exclude list names,
``model.language_model.layers.N.{mlp,router,self_attn}*`` (tests/fixtures/hf_configs/SOURCES.md)."""


def test_nvidia_s_nvfp4_gemma4_26b_stores_only_the_routed_experts_in_nvfp4():
    """The exclude list, spelled from the multimodal checkpoint's ``model.language_model``, names the attention, the
    dense MLP (``layers.N.mlp``) and the router of every layer, not the experts (``layers.N.experts``): by hand the
    22,837,985,280 expert weights at 4 bits with an fp8 scale per 16 and two fp32 scalars per matrix (ModelOpt's
    weight_scale_2 and input_scale), every other weight bf16, the vision tower's too (vLLM quantises no tower whose
    MLP width 64 does not divide, 4,304 here: ``gemma4_mm.py`` ``_get_tower_quant_config``)."""
    from mha_cli.core.sources import load_source
    from mha_cli.core.weight_bytes import model_bytes_by_kind

    total, _ = _by_hand_26b()
    expert_weights = 30 * 128 * 3 * 2816 * 704
    assert expert_weights == 22_837_985_280
    by_hand = expert_weights // 2 + expert_weights // 16 + 30 * 128 * 3 * 2 * 4 + (total - expert_weights) * BF16
    assert by_hand == 17_636_771_840
    by_hand += TOWER_26B * BF16
    source = load_source(str(CONFIG_26B_NVFP4))
    deployment = source.deployment
    assert deployment is not None
    by_kind = model_bytes_by_kind(source.model, deployment.weight_dtype, deployment)
    assert sum(by_kind.values()) == by_hand
    assert by_kind["attention"] == 1_110_179_840 * BF16 and by_kind["shared_expert"] == 3 * 30 * 2816 * 2112 * BF16
    assert by_kind["vision"] == TOWER_26B * BF16
    unmatched = next(a for a in source.assumptions if "has none of" in a)
    assert "layers" not in unmatched and "embed_vision" not in unmatched  # lm_head only: the embedder is listed


def test_a_step_prices_the_dense_mlp_always_and_the_branch_norms_of_every_layer():
    """64 decode tokens, bf16, one rank: the dense MLP's three 2112 x 2816 matmuls in all 30 layers (always on, as
    vLLM's Gemma4MLP runs before the MoE branch), the experts' beside them, and the MoE layers' elementwise passes by
    hand: 4 layer norms (a read and a write each) and the residual adds (10 d), the routed experts' activation
    (3 x 8 x 704), the dense MLP's (its shared expert: 3 x 2112) and Gemma 4's 11 passes of its branch norms,
    router scaling and branch sum; without branch_norms those 11 passes go."""
    from mha_cli.core.cost.work import layer_ops

    model = import_hf_config(json.loads(CONFIG_26B.read_text())).model
    ops = layer_ops(model, 64)
    dense = [op for op in ops if op.name.startswith("mlp ")]
    assert sorted(op.name for op in dense) == ["mlp 2112x2816", "mlp 2112x2816", "mlp 2816x2112"]
    assert all(op.count == 30 and op.flops == 2 * 64 * 2112 * 2816 for op in dense)
    assert {op.name for op in ops if op.name.startswith("expert ")} == {"expert 704x2816", "expert 2816x704"}
    (memory,) = [op for op in ops if op.name == "norms, residuals, routing"]
    d = 2816
    # was 9,732,096 before sharedact, when the memory op left out the shared expert's (the dense MLP's) activation
    assert memory.bytes == 64 * BF16 * (10 * d + 3 * (8 * 704 + 2112) + 11 * d) == 10_543_104
    assert memory.count == 30
    moe = model.block.moe
    assert moe is not None
    plain = model.model_copy(
        update={"block": model.block.model_copy(update={"moe": moe.model_copy(update={"branch_norms": False})})}
    )
    (without,) = [op for op in layer_ops(plain, 64) if op.name == "norms, residuals, routing"]
    assert memory.bytes - without.bytes == 64 * BF16 * 11 * d
