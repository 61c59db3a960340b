"""The context vLLM and SGLang derive from config.json, and the note a plan past it gives (found by newuser trial
242: a search's launch lines set --max-model-len 200,100 for Llama-3.1-8B, whose 131,072 both engines enforce)."""

from __future__ import annotations

import json
from pathlib import Path

from mha_cli.core.engine.context_limit import past_derived_length, sglang_context_length, vllm_max_model_len
from mha_cli.core.hf_import import import_hf_config

CONFIGS = Path(__file__).parent / "fixtures" / "hf_configs"


def _model(name: str, **fields: object):
    return import_hf_config(json.loads((CONFIGS / f"{name}.json").read_text()) | fields).model


def test_each_engine_derives_its_length_as_its_source_reads_the_scaling():
    """Qwen3-8B's config: 40,960 positions, no scaling. With Qwen's YaRN recipe (factor 4 over 32,768) vLLM up to 0.29
    derives 32,768 x 4 = 131,072; from 0.30 (the wheels read) and in SGLang it stays 40,960 (a YaRN scaling, or one
    that names its original length, is not multiplied). Llama-3.1's llama3 scaling extends neither; DeepSeek-V3's
    YaRN gives 4,096 x 40 = 163,840 in 0.29 and its own 163,840 positions after."""
    qwen = _model("qwen3-8b")
    assert (vllm_max_model_len(qwen), sglang_context_length(qwen)) == (40_960, 40_960)
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}
    extended = _model("qwen3-8b", rope_scaling=yarn)
    assert (vllm_max_model_len(extended, (0, 29, 0)), sglang_context_length(extended)) == (131_072, 40_960)
    assert vllm_max_model_len(extended) == vllm_max_model_len(extended, (0, 30, 0)) == 40_960
    llama = _model("llama-3.1-8b")
    assert (vllm_max_model_len(llama), sglang_context_length(llama)) == (131_072, 131_072)
    assert vllm_max_model_len(_model("deepseek-v3")) == vllm_max_model_len(_model("deepseek-v3"), (0, 29)) == 163_840


def test_a_dynamic_scaling_extends_both_engines_length():
    """A dynamic (NTK) rope_scaling was dropped at import ("not modelled"), so check warned that a 65,536-token context
    past Llama's 32,768 positions needs VLLM_ALLOW_LONG_MAX_MODEL_LEN, where both engines multiply by its factor 2
    (vLLM: any type but su, longrope, llama3 and YaRN; SGLang: no original length named)."""
    dynamic = _model("llama-3.1-8b", rope_scaling={"type": "dynamic", "factor": 2.0}, max_position_embeddings=32_768)
    assert dynamic.rotary.scaling.type == "dynamic"
    assert (vllm_max_model_len(dynamic), sglang_context_length(dynamic)) == (65_536, 65_536)
    assert past_derived_length(dynamic, 65_536) is None and past_derived_length(dynamic, 65_537) is not None


def test_the_note_names_only_the_engines_that_refuse():
    extended = _model("qwen3-8b", rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                 "original_max_position_embeddings": 32_768})  # fmt: skip
    assert past_derived_length(extended, 100_000, ("vllm",), (0, 29)) is None  # within vLLM 0.29's 131,072
    note = past_derived_length(extended, 100_000, ("vllm", "sglang"), (0, 29))
    assert (
        note is not None and "SGLang derives 40,960" in note and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in note
    )
    assert "vLLM" not in note
    assert "vLLM derives 40,960" in str(past_derived_length(extended, 100_000))  # the latest leaves YaRN's factor out
    assert past_derived_length(extended, 40_960) is None


def test_a_search_past_the_length_says_so_beside_its_launch_lines(cli):
    result = cli.json("plan", "llama-3.1-8b", "--target", "2xh100", "--isl", "200000", "--osl", "100", "--closed-form")
    assert "--max-model-len 200100" in result["launch"]["vllm"]
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in result["launch_note"]
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in result["launch_note"]
    within = cli.json("plan", "llama-3.1-8b", "--target", "2xh100", "--isl", "2000", "--osl", "100", "--closed-form")
    assert "ALLOW" not in (within["launch_note"] or "")


def test_gemma_3_s_length_is_not_scaled_again_by_vllm():
    """vLLM skips the RoPE factor for a gemma3 model_type ("Gemma3's max_model_len (128K) is already scaled"): its
    131,072, not 131,072 x 8 (the review of this change found the note silent at 200K on Gemma 3)."""
    from mha_cli.core.presets import get_preset

    gemma = get_preset("gemma-3-27b-it")
    assert gemma.rotary.scaling.type == "linear" and gemma.rotary.scaling.factor == 8
    assert vllm_max_model_len(gemma) == 131_072 and sglang_context_length(gemma) == 1_048_576
    assert "vLLM derives 131,072" in past_derived_length(gemma, 200_100)


def test_check_and_kv_take_a_dynamic_scaling(cli, tmp_path):
    """The CLI end: check at 65,536 tokens on a dynamic-scaled (factor 2) 32K Llama said an engine refuses the launch
    line; kv's RoPE table is vLLM's max_position_embeddings rows (DynamicNTKScalingRotaryEmbedding, 0.22+)."""
    config = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    path = tmp_path / "dynamic" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config | {"rope_scaling": {"type": "dynamic", "factor": 2.0},
                                         "max_position_embeddings": 32_768}))  # fmt: skip
    checked = cli.json("check", str(path), "--seq", "65536", "--target", "h100")
    assert not any("past the length derived" in warning for warning in checked["deployment_warnings"])
    found = cli.json("kv", str(path), "--target", "h100", "--seq", "65536")
    assert not any("rope_scaling type 'dynamic' is not modelled" in note for note in found["assumptions"])
    budget = found["memory"]["engine"]["budget"]
    assert [line["bytes"] for line in budget if line["label"] == "RoPE cos/sin cache"] == [-(32_768 * 128 * 2)]
    # vLLM derives 65,536 but its table holds 32,768 rows: said (the review of this change)
    assert any("dynamic NTK RoPE table holds 32,768 positions" in note for note in found["memory"]["engine"]["notes"])
    older = cli.json("kv", str(path), "--target", "h100", "--seq", "65536", "--engine", "vllm@0.21.0")["memory"]
    assert not any("dynamic NTK" in note for note in older["engine"]["notes"])  # 0.21 held max x factor rows
    sglang = cli.json("kv", str(path), "--target", "h100", "--seq", "65536", "--engine", "sglang")["memory"]["engine"]
    # SGLang's DynamicNTKScalingRotaryEmbedding holds max x factor rows, in fp32 (the review of this change)
    assert [line["bytes"] for line in sglang["budget"] if line["label"] == "RoPE cos/sin cache"] == [
        -(65_536 * 128 * 4)
    ]


def test_hunyuans_ntk_alpha_stays_unread_and_said():
    """Hunyuan's rope_scaling {"type": "dynamic", "alpha": 1000, "factor": 1} is vLLM's DynamicNTKAlphaRotaryEmbedding
    (base x alpha^(d/(d-2)) at every position), not the factor's NTK: read as not modelled, said (the review of this
    change found it read as plain dynamic with factor 1)."""
    from mha_cli.core.hf_import import import_hf_config

    config = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    imported = import_hf_config(config | {"rope_scaling": {"type": "dynamic", "alpha": 1000.0, "factor": 1.0}})
    assert imported.model.rotary.scaling is None
    assert "rope_scaling type 'dynamic' is not modelled: unscaled RoPE frequencies" in imported.assumptions


def test_the_note_says_outputs_past_the_trained_length_are_not_assured():
    """Trial 339 #4: the override alone was offered; it serves the length, not the model's quality there. A model
    without RoPE scaling is told where its scaling goes; one with YaRN already is not told it again."""
    plain = _model("qwen3-8b")
    note = str(past_derived_length(plain, 62_000))
    assert "outputs past the length the model was trained to are not assured" in note
    assert "config.json's rope_scaling, which mha reads" in note
    extended = _model("qwen3-8b", rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                 "original_max_position_embeddings": 32_768})  # fmt: skip
    scaled = str(past_derived_length(extended, 200_000))
    assert "are not assured" in scaled and "rope_scaling" not in scaled
