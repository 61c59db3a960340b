"""SGLang's hybrid SWA pool for gpt-oss by release (``core.engine.sglang_swa_pool``): off to 0.5.7, on from 0.5.8 on
Hopper, from 0.5.10 on SM100 (``trtllm_mha``), and the split ``set_num_tokens_hybrid_swa`` /
``_resolve_hybrid_swa_tokens`` make of the profiled tokens."""

from __future__ import annotations

from mha_cli.core.engine.sglang_swa_pool import split_tokens, swa_pool_on


def test_the_pool_is_on_by_release_gpu_and_speculation():
    """0.5.7 disables it for GptOssForCausalLM; 0.5.8-0.5.9 disable it under trtllm_mha (SM100's default), 0.5.8 under
    speculative decoding too; 0.5.10 and later keep it."""
    assert not swa_pool_on((0, 5, 7), 9.0, False)
    assert swa_pool_on((0, 5, 8), 9.0, False) and not swa_pool_on((0, 5, 8), 9.0, True)
    assert swa_pool_on((0, 5, 9), 9.0, True)
    assert not swa_pool_on((0, 5, 9), 10.0, False) and swa_pool_on((0, 5, 10), 10.0, False)
    assert swa_pool_on((0, 5, 23), 10.3, True)


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
