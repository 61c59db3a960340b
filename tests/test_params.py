"""Parameter counts against published totals (Hugging Face model cards / safetensors metadata)."""

import json
from pathlib import Path

import pytest

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.params import count_params
from mha_cli.core.presets import get_preset, preset_names
from mha_cli.core.schemas import ModelSpec
from tests.spec_paths import copy_with

FIXTURE_CONFIGS = Path(__file__).resolve().parent / "fixtures" / "hf_configs"

PUBLISHED_TOTALS = {
    "gpt2": 124_439_808,
    "llama-2-7b": 6_738_415_616,
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "llama-3.2-1b": 1_235_814_400,
    "mistral-7b-v0.1": 7_241_732_096,
    "qwen2.5-7b": 7_615_616_512,
    "qwen3-8b": 8_190_735_360,
    "qwen3-0.6b": 596_049_920,
    "gemma-2-9b": 9_241_705_984,
    "phi-3-mini": 3_821_079_552,
}


@pytest.mark.parametrize(("name", "expected"), PUBLISHED_TOTALS.items(), ids=list(PUBLISHED_TOTALS))
def test_dense_models_match_published_totals_exactly(name, expected):
    assert count_params(get_preset(name)).total == expected


@pytest.mark.parametrize(
    ("name", "total_b", "active_b", "rel"),
    [  # published: model cards (DeepSeek-V3 "671B total, 37B activated"; gpt-oss-20b 20.9B / 3.6B)
        ("deepseek-v3", 671, 37, 0.02),
        ("deepseek-v2-lite", 15.7, 2.4, 0.03),
        ("gpt-oss-20b", 20.9, 3.61, 0.005),
    ],
)
def test_moe_models_match_published_totals_and_active_counts(name, total_b, active_b, rel):
    params = count_params(get_preset(name))
    assert params.total / 1e9 == pytest.approx(total_b, rel=0.01)
    assert params.active / 1e9 == pytest.approx(active_b, rel=rel)


def test_dense_active_count_leaves_out_only_the_lookup_tables():
    llama = count_params(get_preset("llama-3-8b"))
    assert llama.total - llama.active == 128256 * 4096  # the untied input embedding
    gpt2 = count_params(get_preset("gpt2"))
    assert gpt2.total - gpt2.active == 1024 * 768  # tied embedding is the head's matmul; positions are a lookup


def test_gqa_shrinks_only_k_and_v():
    llama = get_preset("llama-3-8b")
    mha = copy_with(llama, {"attention.n_kv_heads": 32})
    saved = count_params(mha).attention_per_layer - count_params(llama).attention_per_layer
    assert saved == 2 * 4096 * (32 - 8) * 128


def test_moe_on_every_other_layer_counts_and_builds_what_it_says():
    """Jamba's layout (MoE on odd layers, dense MLPs between): counted, sharded and built alike."""
    pytest.importorskip("torch")
    from mha_cli.core.pipeline import layers_model
    from mha_cli.nn import build_model

    spec = ModelSpec(
        d_model=64, n_layers=4, n_heads=4, n_kv_heads=2, vocab_size=128, d_ff=96,
        moe=dict(n_experts=4, n_active_experts=2, d_ff_expert=32, layer_period=2, layer_offset=1),
    )  # fmt: skip
    assert [spec.is_moe_layer(i) for i in range(4)] == [False, True, False, True] and spec.n_moe_layers == 2
    built = build_model(spec, device="meta")
    assert sum(p.numel() for p in built.parameters()) == count_params(spec).total
    assert [hasattr(layer.mlp, "experts") for layer in built.model.layers] == [False, True, False, True]
    every_layer = copy_with(
        spec, {"block.moe": spec.block.moe.model_copy(update={"layer_period": 1, "layer_offset": 0})}
    )
    assert count_params(every_layer).total - count_params(spec).total == 2 * (
        4 * 3 * 64 * 32 + 4 * 64 - 3 * 64 * 96
    )  # two dense MLPs become MoE: 4 experts of 3 x 64 x 32 and a 64 x 4 router, less a 3 x 64 x 96 MLP
    stage = layers_model(spec, 1, 2)  # layers 1 and 2 of the original: MoE, then dense
    assert [stage.is_moe_layer(i) for i in range(2)] == [True, False]


def _every_model() -> list[tuple[str, ModelSpec]]:
    """Every preset and every Hugging Face config fixture (the ones the importer reads)."""
    models = [(name, get_preset(name)) for name in preset_names()]
    for path in sorted(FIXTURE_CONFIGS.glob("*.json")):
        models.append((path.stem, import_hf_config(json.loads(path.read_text()), name=path.stem).model))
    return models


def test_the_parts_of_every_model_add_up_to_its_total():
    """Review 376 #6: each part is summed over every layer, so models whose layers differ (Gemma 4's two attention
    widths, E2B's wide MLPs and K/V-sharing layers, hybrids) still add up."""
    for name, model in _every_model():
        p = count_params(model)
        parts = (
            p.attention_total + p.mlp_dense_total + p.mlp_moe_total + p.norms_total + p.mixer_total
            + p.per_layer_inputs_total + p.embeddings + p.final_norm + p.vision_tower
        )  # fmt: skip
        assert parts == p.total, name


def test_gemma_4_attention_is_summed_over_its_two_layer_kinds():
    """gemma-4-26B-A4B: 25 sliding layers (16 heads and 8 KV heads of 256: q, k, v, o and two QK norms of 256) and 5
    full ones (16 heads and 2 KV heads of 512, k doubling as v: q, k, o and QK norms of 512). The first layer's count
    times 30 (1,038,105,600) was the old answer."""
    model = import_hf_config(json.loads((FIXTURE_CONFIGS / "gemma-4-26b-a4b.json").read_text())).model
    d = 2816
    sliding = 2 * d * 16 * 256 + 2 * d * 8 * 256 + 2 * 256
    full = 2 * d * 16 * 512 + d * 2 * 512 + 2 * 512
    p = count_params(model)
    assert (p.attention_per_layer, sliding, full) == (34_603_520, 34_603_520, 49_021_952)
    assert p.attention_total == 25 * sliding + 5 * full == 1_110_197_760


def test_a_uniform_model_s_totals_are_its_per_layer_counts_times_its_layers():
    p = count_params(get_preset("llama-3-8b"))
    assert p.attention_total == 32 * p.attention_per_layer == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)
    assert p.mlp_dense_total == 32 * p.mlp_dense_per_layer == 32 * 3 * 4096 * 14336
    assert p.norms_total == 32 * p.norms_per_layer == 32 * 2 * 4096
