"""The published configs added for the 2025-26 serving rows (hf_configs/SOURCES.md, "Serving rows' models"), each
priced against a reference independent of the importer: the weights against the checkpoint's tensor listing or
transformers' model built on the meta device, the KV bytes by hand."""

from __future__ import annotations

import json
import warnings

import pytest

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from tests.conftest import reference_hf_config


def _config(name: str) -> dict:
    return json.loads(reference_hf_config(name).read_text())


def _kv_bytes_one_token(config: dict) -> int:
    """The cache of one token over every layer, in bf16 (sliding layers hold it too at one token)."""
    imported = import_hf_config(config)
    return kv_footprint(imported.model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes


def test_gpt_oss_120b_counts_as_transformers_builds_it():
    """openai/gpt-oss-120b: 36 layers of 8 KV heads x 64 (sliding and full alternate; at one token both hold it),
    and OpenAI's 116.8B parameters: transformers' GptOss model on the meta device gives the same count."""
    config = _config("gpt-oss-120b")
    assert _kv_bytes_one_token(config) == 36 * 8 * 64 * 2 * 2 == 73_728
    weights = count_params(import_hf_config(config).model).total
    assert weights == 116_829_156_672
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    fields = {k: v for k, v in config.items() if k not in ("architectures", "model_type", "quantization_config")}
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("gpt_oss", **fields))
    assert weights == sum(p.numel() for p in model.parameters())


def test_kimi_k2_5_text_decoder_is_kimi_k2_s():
    """moonshotai/Kimi-K2.5 wraps a Kimi-K2 decoder: the same parameter count as Kimi-K2-Instruct's checkpoint
    listing (test_family_architectures) and the MLA cache of 61 layers x (512 latent + 64 RoPE key)."""
    config = _config("kimi-k2.5")
    assert _kv_bytes_one_token(config) == 61 * (512 + 64) * 2 == 70_272
    k2 = count_params(import_hf_config(_config("kimi-k2-instruct")).model).total
    k25 = count_params(import_hf_config(config).model)
    assert k25.total - k25.vision_tower == k2 == 1_026_408_209_408  # and its MoonViT tower beside it
    assert k25.vision_tower == 471_143_920


@pytest.mark.parametrize("name", ["glm-5", "glm-5.1"])
def test_glm_5_prices_its_checkpoint_listing_less_the_mtp_layer(name):
    """zai-org/GLM-5.1's checkpoint lists 753,864,139,008 values (SOURCES.md). Less its MTP layer (layer 78:
    attention with indexer, 256 experts + shared, router and bias, eh_proj, three norms: 9,952,920,576) and the 75
    other routers' correction biases (75 x 256): the decoder mha counts. GLM-5 has the same architecture fields.
    The cache: 78 layers x (576 MLA values x 2 B + the indexer's 128 fp8 key bytes and a 4-byte scale)."""
    config = _config(name)
    h = 6144
    attention = (
        2048 * h + 2048 + 16384 * 2048 + 576 * h + 512 + 28672 * 512 + h * 16384  # q_a, q_b, kv_a, kv_b, o, norms
        + 4096 * 2048 + 128 * h + 2 * 128 + 32 * h  # indexer: wq_b, wk, k_norm weight and bias, weights_proj
    )  # fmt: skip
    experts = 256 * 3 * 2048 * h + 256 * h + 256 + 3 * 2048 * h  # routed, router, correction bias, shared
    mtp_layer = attention + experts + 2 * h + h * 2 * h + 3 * h  # + its two layer norms, eh_proj, enorm/hnorm/head norm
    assert mtp_layer == 9_952_920_576
    weights = count_params(import_hf_config(config).model).total
    assert weights == 753_864_139_008 - mtp_layer - 75 * 256 == 743_911_199_232
    assert _kv_bytes_one_token(config) == 78 * (576 * 2 + 128 + 4) == 100_152
