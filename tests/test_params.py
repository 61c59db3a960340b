"""Parameter counts against published totals (Hugging Face model cards / safetensors metadata)."""

import pytest

from mha_cli.core.params import count_params
from mha_cli.core.presets import get_preset

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
    mha = llama.model_copy(update={"n_kv_heads": 32})
    saved = count_params(mha).attention_per_layer - count_params(llama).attention_per_layer
    assert saved == 2 * 4096 * (32 - 8) * 128
