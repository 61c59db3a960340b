"""``--text-only`` under SGLang (``core.engine.sglang_text_only``): its ``--language-model-only`` (0.5.18 on) skips
``adjust_mem_fraction_for_vlm`` and the tower only for the architectures ``LANGUAGE_MODEL_ONLY_ARCHITECTURES``
lists (read in the 0.5.17-0.5.23 wheels), and refuses any other: a model mha reads with a tower is refused in one
line that says so by release, never priced with the tower's factor as if served for text."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.engine.sglang_text_only import language_model_only, text_only_refusal

GEMMA3 = str(Path(__file__).parent / "fixtures" / "hf_configs" / "gemma-3-4b-it.json")


def test_the_architectures_sglang_serves_language_model_only_by_release():
    assert language_model_only("0.5.17") == ()
    assert language_model_only("0.5.18") == language_model_only("0.5.19") == ("MuseGlimmerForConditionalGeneration",)
    assert "Cosmos3ForConditionalGeneration" in language_model_only("0.5.20")
    assert "DeepseekV4ForCausalLM" not in language_model_only("0.5.21")
    assert "DeepseekV4ForCausalLM" in language_model_only("0.5.22") == language_model_only(None)
    assert language_model_only("0.5") == language_model_only("0.5.23")  # a minor alone: its latest read
    assert language_model_only("0.0.0.dev1+g93fca0b") == ()
    assert "serves Cosmos3ForConditionalGeneration without its tower" in text_only_refusal(
        "0.5.20", ("Cosmos3ForConditionalGeneration",)
    )


@pytest.mark.parametrize(
    ("engine", "why"),
    [
        ("sglang@0.5.23", "SGLang 0.5.23's --language-model-only serves only DeepseekV4ForCausalLM,"),
        ("sglang@0.5.19", "SGLang 0.5.19's --language-model-only serves only MuseGlimmerForConditionalGeneration, not"
         " Gemma3ForConditionalGeneration"),
        ("sglang@0.5.10", "SGLang 0.5.10 has no --language-model-only (first in 0.5.18)"),
    ],
)  # fmt: skip
def test_text_only_under_sglang_says_what_the_release_does(cli, engine, why):
    result = cli.run("plan", GEMMA3, "--target", "h100", "--engine", engine, "--text-only", "--closed-form")
    line = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert why in line and "adjust_mem_fraction_for_vlm" in line and "use --engine vllm" in line, line


def test_a_limit_above_zero_under_sglang_keeps_its_own_refusal(cli):
    """--limit-mm-per-prompt image=2 is no text-only launch: the line says the option is vLLM's."""
    args = ("plan", GEMMA3, "--target", "h100", "--engine", "sglang", "--limit-mm-per-prompt", "image=2")
    result = cli.run(*args, "--closed-form")
    line = " ".join(result.output.split())
    assert result.exit_code == 2 and "--limit-mm-per-prompt and --text-only are vLLM's" in line
    assert "language-model-only" not in line
