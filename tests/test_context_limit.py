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
    """Qwen3-8B's config: 40,960 positions, no scaling. With Qwen's YaRN recipe (factor 4 over 32,768) vLLM derives
    32,768 x 4 = 131,072 and SGLang keeps 40,960 (a scaling that names its original length is not multiplied).
    Llama-3.1's llama3 scaling extends neither; DeepSeek-V3's YaRN gives vLLM 4,096 x 40 = 163,840."""
    qwen = _model("qwen3-8b")
    assert (vllm_max_model_len(qwen), sglang_context_length(qwen)) == (40_960, 40_960)
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}
    extended = _model("qwen3-8b", rope_scaling=yarn)
    assert (vllm_max_model_len(extended), sglang_context_length(extended)) == (131_072, 40_960)
    llama = _model("llama-3.1-8b")
    assert (vllm_max_model_len(llama), sglang_context_length(llama)) == (131_072, 131_072)
    assert vllm_max_model_len(_model("deepseek-v3")) == 163_840


def test_the_note_names_only_the_engines_that_refuse():
    extended = _model("qwen3-8b", rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                 "original_max_position_embeddings": 32_768})  # fmt: skip
    assert past_derived_length(extended, 100_000, ("vllm",)) is None  # within vLLM's 131,072
    note = past_derived_length(extended, 100_000)
    assert (
        note is not None and "SGLang derives 40,960" in note and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in note
    )
    assert "vLLM" not in note
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
