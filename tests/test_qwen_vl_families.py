"""Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3-VL-MoE's language models (``text_config``) read as their families:
Qwen2's q/k/v biases, Qwen3's q/k norms and Qwen3-MoE's experts, weighed as transformers builds the text model, the
cache as before. The control: the same config under a model_type no family carries (a Llama-style reading) loses
exactly those weights, and prices the same cache."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import pytest

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params

VISION = Path(__file__).resolve().parent / "fixtures" / "vision"
QWEN2_5_VL_7B = VISION / "qwen2.5-vl-7b-instruct.json"
QWEN3_VL_8B = VISION / "qwen3-vl-8b-instruct.json"
QWEN3_VL_30B_A3B = VISION / "qwen3-vl-30b-a3b-instruct.json"


def _text_config(path: Path) -> dict:
    """The file's text_config, with the wrapper's tie_word_embeddings where the text_config leaves it out."""
    config = json.loads(path.read_text())
    text = dict(config["text_config"])
    text.setdefault("tie_word_embeddings", config.get("tie_word_embeddings", False))
    return text


def _transformers_text_weights(text: dict) -> int:
    """transformers' text model for ``text`` on the meta device, plus its LM head when untied."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    fields = {key: value for key, value in copy.deepcopy(text).items() if key != "model_type"}
    config = transformers.AutoConfig.for_model(text["model_type"], **fields)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.AutoModel.from_config(config)  # the text model has no LM head of its own
    head = 0 if text.get("tie_word_embeddings") else config.vocab_size * config.hidden_size
    return sum(p.numel() for p in model.parameters()) + head


def _bytes_per_token(config: dict) -> int:
    model = import_hf_config(config).model
    return kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16").bytes_per_token


@pytest.mark.parametrize(
    ("path", "model_type", "llama_style_missing"),
    [
        (QWEN2_5_VL_7B, "qwen2_5_vl_text", 28 * (3584 + 2 * 512)),  # q, k, v biases: 129,024
        (QWEN3_VL_8B, "qwen3_vl_text", 36 * 2 * 128),  # q and k RMSNorm weights, one head wide: 9,216
        (QWEN3_VL_30B_A3B, "qwen3_vl_moe_text", 48 * 2 * 128),  # the same on the MoE decoder: 12,288
    ],
    ids=["qwen2.5-vl-7b", "qwen3-vl-8b", "qwen3-vl-30b-a3b"],
)
def test_the_qwen_vl_decoders_are_read_as_their_families(path, model_type, llama_style_missing):
    text = _text_config(path)
    imported = import_hf_config(copy.deepcopy(text))
    assert imported.model.family == model_type
    assert not any("not a known family" in line for line in imported.assumptions)
    reference = _transformers_text_weights(text)
    assert count_params(imported.model).total == reference

    unnamed = {key: value for key, value in text.items() if key != "architectures"}  # no architecture to go by
    llama_style = {**copy.deepcopy(unnamed), "model_type": "no_such_family_text"}
    assert count_params(import_hf_config(llama_style).model).total == reference - llama_style_missing  # the control
    assert _bytes_per_token(text) == _bytes_per_token(llama_style)


def test_the_kv_per_token_is_the_hand_count():
    # layers x 2 (K and V) x KV heads x head_dim x 2 B (bf16)
    assert _bytes_per_token(_text_config(QWEN2_5_VL_7B)) == 28 * 2 * 4 * 128 * 2 == 57_344
    assert _bytes_per_token(_text_config(QWEN3_VL_8B)) == 36 * 2 * 8 * 128 * 2 == 147_456
    assert _bytes_per_token(_text_config(QWEN3_VL_30B_A3B)) == 48 * 2 * 4 * 128 * 2 == 98_304


def test_qwen3_vl_moe_routes_as_its_modeling_code():
    """128 experts, 8 per token, no shared expert, on every layer (decoder_sparse_step 1, no mlp_only_layers); the
    router renormalises the top 8 whatever norm_topk_prob says (Qwen3VLMoeTextTopKRouter)."""
    text = _text_config(QWEN3_VL_30B_A3B)
    moe = import_hf_config(copy.deepcopy(text)).model.block.moe
    assert (moe.n_experts, moe.n_active_experts, moe.n_shared_experts, moe.d_ff_expert) == (128, 8, 0, 768)
    assert moe.n_dense_layers == 0 and moe.norm_topk_prob
    assert import_hf_config({**text, "norm_topk_prob": False}).model.block.moe.norm_topk_prob


@pytest.mark.parametrize("model_type", ["qwen2_vl_text", "qwen2_5_vl_text", "qwen3_vl_text", "qwen3_vl_moe_text"])
def test_each_qwen_vl_text_class_at_small_widths_weighs_what_transformers_builds(model_type):
    """Each text config class's defaults, shrunk (4 layers of width 256, 4 experts), untied: transformers' count."""
    transformers = pytest.importorskip("transformers")
    small = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
             "intermediate_size": 512, "vocab_size": 512, "moe_intermediate_size": 128, "num_local_experts": 4,
             "num_experts_per_tok": 2, "head_dim": 64}  # fmt: skip
    defaults = transformers.AutoConfig.for_model(model_type).to_dict()
    text = {**defaults, **{key: value for key, value in small.items() if key in defaults}, "tie_word_embeddings": False}
    text.pop("layer_types", None)  # listed for the class's default depth; derived again from use_sliding_window
    assert count_params(import_hf_config(copy.deepcopy(text)).model).total == _transformers_text_weights(text)


def test_an_older_qwen2_5_vl_file_with_the_decoder_at_the_top_reads_the_same_decoder():
    """Qwen2.5-VL's files before transformers 4.53 keep the decoder's fields beside vision_config, no text_config."""
    config = json.loads(QWEN2_5_VL_7B.read_text())
    older = import_hf_config({key: value for key, value in config.items() if key != "text_config"}).model
    newer = import_hf_config(config).model
    assert (older.family, newer.family) == ("qwen2_5_vl", "qwen2_5_vl_text")  # one family, two model_types
    # the newer file names its class around text_config (ModelSpec.wrapper); the older one's family serves as the same
    assert older.model_copy(update={"family": newer.family, "source": newer.source, "wrapper": newer.wrapper}) == newer
    from mha_cli.core.engine.architectures_served import served_as

    assert served_as(older) == served_as(newer) == ("Qwen2_5_VLForConditionalGeneration",)
    assert older.attention.qkv_bias


def test_a_qwen2_5_vl_window_needs_use_sliding_window_as_in_transformers():
    """Qwen2_5_VLTextConfig drops sliding_window unless use_sliding_window is true (its default is false)."""
    text = _text_config(QWEN2_5_VL_7B)
    text.pop("use_sliding_window")
    text.pop("layer_types")
    text.update(sliding_window=4096, max_window_layers=14)
    assert import_hf_config(copy.deepcopy(text)).model.layers.sliding_window is None
    windowed = import_hf_config({**text, "use_sliding_window": True}).model
    assert windowed.layers.sliding_window == 4096  # layers 14 to 27 slide, as Qwen2's max_window_layers
