"""SGLang's hybrid SWA pool for gpt-oss by release (``core.engine.sglang_swa_pool``): off to 0.5.7, on from 0.5.8 on
Hopper, from 0.5.10 on SM100 (``trtllm_mha``), and the split ``set_num_tokens_hybrid_swa`` /
``_resolve_hybrid_swa_tokens`` make of the profiled tokens."""

from __future__ import annotations

from mha_cli.core.engine.sglang_swa_pool import split_tokens, swa_pool_on


def test_the_pool_is_on_by_release_gpu_and_speculation():
    """0.5.7 disables it for GptOssForCausalLM; 0.5.8-0.5.9 disable it under trtllm_mha (SM100's default), 0.5.8 under
    speculative decoding too; 0.5.10 and later keep it."""
    assert not swa_pool_on("gpt_oss", (0, 5, 7), 9.0, False)
    assert swa_pool_on("gpt_oss", (0, 5, 8), 9.0, False) and not swa_pool_on("gpt_oss", (0, 5, 8), 9.0, True)
    assert swa_pool_on("gpt_oss", (0, 5, 9), 9.0, True)
    assert not swa_pool_on("gpt_oss", (0, 5, 9), 10.0, False) and swa_pool_on("gpt_oss", (0, 5, 10), 10.0, False)
    assert swa_pool_on("gpt_oss", (0, 5, 23), 10.3, True)


def test_llama_4_is_on_from_0_5_8_and_the_unlisted_sliding_models_never():
    """Llama4ForConditionalGeneration: only with --hybrid-kvcache-ratio (default None) to 0.5.7 (``is_hybrid_model``),
    in ``is_hybrid_swa_model`` from 0.5.8 with no override that disables it, SM100 and speculative decoding alike;
    Gemma 2/3 and Gemma-3n are disabled (``disable_hybrid_swa_memory``), Mistral, Phi-3 and Cohere2 not listed."""
    for family in ("llama4", "llama4_text"):
        assert not swa_pool_on(family, (0, 5, 7), 9.0, False)
        assert swa_pool_on(family, (0, 5, 8), 10.0, True) and swa_pool_on(family, (0, 5, 23), 9.0, False)
    for family in ("gemma2", "gemma3", "gemma3n", "mistral", "phi3", "cohere2", None):
        assert not swa_pool_on(family, (0, 5, 23), 9.0, False), family


def test_the_split_is_sglangs():
    """gpt-oss-120b at tp 1 on an H200 (SGLang 0.5.8): 955,855 tokens in all 36 layers (2,048 B a layer a token);
    full = int(955,855 x 36 / (18 + 0.8 x 18)) = 1,062,061, swa = int(1,062,061 x 0.8) = 849,648."""
    split = split_tokens(955_855, 18 * 2048, 18 * 2048, 1)
    assert (split.full, split.swa) == (1_062_061, 849_648)
    assert split_tokens(955_855, 18 * 2048, 18 * 2048, 64) == (1_062_016, 849_600)


def test_gpt_oss_plans_on_the_hybrid_pool_from_0_5_8():
    """``mha kv`` of gpt-oss-120b on an H200: the whole-layer pool of 955,855 tokens (7 requests of 131,072) at 0.5.7,
    1,062,061 full-layer tokens (8 requests) at 0.5.8, whose request estimate still reads 955,855 (3,733)."""
    from typer.testing import CliRunner

    from mha_cli.cli.app import app

    config = "tests/fixtures/hf_configs/gpt-oss-120b.json"
    old = CliRunner().invoke(app, ["kv", config, "--target", "h200", "--engine", "sglang@0.5.7"])
    new = CliRunner().invoke(app, ["kv", config, "--target", "h200", "--engine", "sglang@0.5.8"])
    assert "#tokens: 955855" in old.output and "SWAKVPool" not in old.output
    assert "full_layer_tokens=1062061" in new.output.replace("\n", "")
    assert "3,733" in new.output


def test_llama_4_scout_plans_on_the_hybrid_pool_from_0_5_8():
    """``mha kv llama-4-scout`` at tp 4 on four H100s, 131,072 tokens: 180,325 tokens in all 48 layers at 0.5.7 (and
    at 0.5.8 before the split); at 0.5.8 full = int(180,325 x 48 / (12 + 0.8 x 36)) = 212,147 in the 12 global
    layers, swa = int(212,147 x 0.8) = 169,717 in the 36 chunked ones; a request holds 131,072 full tokens and one
    8,192-token chunk, so 212,147 / 131,072 = 1.62 requests fit (1.38 before)."""
    from typer.testing import CliRunner

    from mha_cli.cli.app import app

    line = ["kv", "llama-4-scout", "--target", "4xh100-sxm", "--tp", "4", "--seq", "131072", "--engine"]
    old = CliRunner().invoke(app, [*line, "sglang@0.5.7"])
    new = CliRunner().invoke(app, [*line, "sglang@0.5.8"]).output.replace("\n", "")
    assert "#tokens: 180325" in old.output and "SWAKVPool" not in old.output
    assert "full_layer_tokens=212147, swa_layer_tokens=169717" in new
    assert "SWAKVPool mem usage: 8.25 GB" in new  # (212,148 x 12 + 169,718 x 36) x 1,024 B a layer a rank
    assert split_tokens(180_325, 12 * 1024, 36 * 1024, 1) == (212_147, 169_717)
