"""Families as engines resolve them: a config.json whose ``model_type`` no family carries is read as the family of
its ``architectures`` (as vLLM's registry does), and a layout field at the plain decoder's value is read, not refused.

The references are independent of the importer: each real config's weights against the checkpoint's own tensor
listing (SOURCES.md: the total the safetensors headers give, less the fp8 scales and the correction-bias buffers,
which are not parameters) and against transformers' model built on the meta device; the KV bytes by hand.
"""

from __future__ import annotations

import json
import warnings

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import family, known_model_types
from mha_cli.core.families.architectures import ARCHITECTURES, family_of_architectures
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from tests.conftest import reference_hf_config


def _config(name: str) -> dict:
    return json.loads(reference_hf_config(name).read_text())


def _transformers_count(model_type: str, config: dict) -> int:
    """Parameters of transformers' causal LM built from ``config`` under ``model_type``'s class, on the meta device."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    fields = {k: v for k, v in config.items() if k not in ("auto_map", "architectures", "model_type")}
    fields.pop("quantization_config", None)  # the weights' format, not their count
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(model_type, **fields))
    return sum(p.numel() for p in model.parameters())


def test_every_architecture_names_a_registered_family():
    assert set(ARCHITECTURES.values()) <= known_model_types()
    assert all(family(model_type) is not None for model_type in ARCHITECTURES.values())


def test_each_family_s_transformers_class_resolves_to_a_family_that_uses_it():
    """transformers' causal-LM class of every registered model_type is in the table, mapped to one of the model
    types whose class it is (LlamaForCausalLM: llama, though EXAONE and InternLM3 use it too)."""
    auto = pytest.importorskip("transformers.models.auto.modeling_auto")
    names = auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    known = known_model_types()
    for model_type in sorted(known):
        architecture = names.get(model_type)
        if architecture is None:
            continue
        users = {m for m, name in names.items() if name == architecture and m in known}
        assert ARCHITECTURES.get(architecture) in users, (model_type, architecture)


def test_an_unknown_name_is_not_a_family():
    assert family_of_architectures(["NoSuchForCausalLM"]) is None
    assert family_of_architectures("DeepseekV3ForCausalLM") is None  # not a list: not read as one
    found = family_of_architectures(["NoSuchForCausalLM", "DeepseekV3ForCausalLM"])  # the first that names one
    assert found is not None and found.model_type == "deepseek_v3"


def test_kimi_k2_is_read_as_deepseek_v3_by_its_architecture():
    """moonshotai/Kimi-K2-Instruct: model_type kimi_k2, DeepseekV3ForCausalLM. Its checkpoint lists 1,026,470,731,056
    values: less 62,498,608 fp8 block scales and rotary inv_freq copies, less 60 x 384 correction-bias buffers."""
    config = _config("kimi-k2-instruct")
    imported = import_hf_config(config)
    assert imported.model_type == "deepseek_v3" and imported.model.family == "deepseek_v3"
    assert any("'kimi_k2'" in a and "DeepseekV3ForCausalLM" in a for a in imported.assumptions)
    weights = count_params(imported.model).total
    assert weights == 1_026_470_731_056 - 62_498_608 - 60 * 384 == 1_026_408_209_408
    assert weights == _transformers_count("deepseek_v3", config)
    kv = kv_footprint(imported.model, seq_len=1, batch=1, kv_dtype="bf16")
    assert kv.total_bytes == 61 * (512 + 64) * 2  # MLA latent + RoPE key, one token, every layer: 70,272 B


def test_without_an_architecture_kimi_k2_is_refused_naming_its_deepseek_fields():
    """The control: the same file without ``architectures`` is an unknown family with fields no reader reads."""
    config = {k: v for k, v in _config("kimi-k2-instruct").items() if k != "architectures"}
    with pytest.raises(BadInputError, match="aux_loss_alpha, moe_layer_freq, num_nextn_predict_layers, seq_aux"):
        import_hf_config(config)


def test_a_wrapper_s_text_config_is_read_by_its_own_architecture():
    """Kimi-K2.5 wraps Kimi-K2 (text_config: model_type kimi_k2, DeepseekV3ForCausalLM) in a vision model
    (KimiK25ForConditionalGeneration): the text decoder is read as DeepSeek-V3, its MoonViT tower counted beside it
    (trial 375 #2; tests/test_vision_tower.py), and the wrapper kept as the class the engines load
    (``ModelSpec.wrapper``)."""
    text = _config("kimi-k2-instruct")
    wrapped = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", "text_config": text,
               "vision_config": {"vt_hidden_size": 1152, "vt_num_hidden_layers": 27}}  # fmt: skip
    imported = import_hf_config(wrapped)
    assert imported.model.wrapper == "KimiK25ForConditionalGeneration"
    assert imported.model.vision is not None and imported.model.vision.kind == "moonvit"
    text_only = imported.model.model_copy(update={"wrapper": None, "vision": None})
    assert text_only == import_hf_config(text).model


def test_a_fine_tune_that_renames_model_type_is_read_as_its_architecture():
    """zai-org/GLM-4.7-Flash under another model_type: the same model, and transformers' count of it."""
    config = _config("glm-4.7-flash")
    renamed = import_hf_config({**config, "model_type": "glm4_moe_lite_finetune"})
    assert renamed.model == import_hf_config(config).model
    assert count_params(renamed.model).total == _transformers_count("glm4_moe_lite", config) == 29_943_390_976


@pytest.mark.parametrize("name", ["minimax-m2", "minimax-m2.7"])
def test_minimax_m2_s_attention_list_of_ones_is_read_as_softmax_on_every_layer(name):
    """MiniMax-M2's attn_type_list is 1 (full softmax attention) on all 62 layers: a plain decoder. The M2.7
    checkpoint lists 228,703,644,928 values: less 13,880,064 fp8 block scales, less 62 x 256 correction biases."""
    config = _config(name)
    model = import_hf_config(config).model
    assert model.layers.pattern is None and model.recurrent is None
    weights = count_params(model).total
    assert weights == 228_703_644_928 - 13_880_064 - 62 * 256 == 228_689_748_992
    assert weights == _transformers_count("minimax_m2", config)
    kv = kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16")
    assert kv.total_bytes == 62 * 2 * 8 * 128 * 2  # K and V, 8 KV heads of 128, every layer: 253,952 B


def test_an_attention_list_with_a_lightning_layer_is_still_refused_where_it_is_not_read():
    """The control: one 0 (a lightning-attention layer with a fixed state) changes the cache; MiniMax-M2 does not
    read the list, so the config is refused naming it."""
    config = _config("minimax-m2.7")
    config["attn_type_list"] = [0, *config["attn_type_list"][1:]]
    with pytest.raises(BadInputError, match="'attn_type_list' sets which layers are lightning attention"):
        import_hf_config(config)


def test_an_attention_list_of_ones_of_the_wrong_length_is_refused():
    """Ten 1s for 62 layers was read as a plain decoder, exit 0 (found by newuser trial 235); ``layer_types`` of the
    wrong length was already refused in these words."""
    config = _config("minimax-m2")
    config["attn_type_list"] = [1] * 10
    with pytest.raises(BadInputError, match="attn_type_list has 10 entries but num_hidden_layers is 62: give one"):
        import_hf_config(config)
    gemma = _config("gemma-3-27b-it")  # the way out said too (trial 340 #10)
    gemma["text_config"]["layer_types"] = ["sliding_attention"] * 10
    with pytest.raises(BadInputError, match="layer_types has 10 entries but num_hidden_layers is 62: give one entry"):
        import_hf_config(gemma)
