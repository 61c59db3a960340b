"""vLLM caches an MLA model's latent from 0.7.1 (``core.engine.mla_latent_release``, read in the 0.6.2, 0.6.6.post1,
0.7.0 and 0.7.1 wheels' ``vllm/config.py``); before it DeepSeek-V2 and V3 were cached as plain attention at a padded
head size, which mha priced as the latent: DeepSeek-V2-Lite's 1,152 B a layer where 0.6.3 holds 2 x 16 heads x 256 x
2 B = 16,384 (review 317 #4). Such a release is refused for them; designs with MLA and other models are priced."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("engine", "size"), [("vllm@0.6.3", "256"), ("vllm@0.7.0", "qk_nope_head_dim + qk_rope")])
def test_a_deepseek_before_0_7_1_is_refused_saying_how_vllm_cached_it(cli, engine, size):
    result = cli.run("kv", "deepseek-v2-lite", "--target", "h100", "--engine", engine)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"caches deepseek-v2-lite's MLA as plain attention, K and V for every KV head at head size {size}" in (
        result.stderr
    )
    assert "use --engine vllm@0.7.1 or later" in result.stderr


def test_0_7_1_and_other_models_and_designs_are_priced(cli):
    latent = cli.json("kv", "deepseek-v2-lite", "--target", "h100", "--engine", "vllm@0.7.1")
    assert latent["kv"]["bytes_per_token"] == 27 * 1_152  # (512 + 64) x 2 B a layer, 27 layers
    assert cli.run("kv", "llama-3-8b", "--target", "h100", "--engine", "vllm@0.6.3").exit_code == 0  # its MLA row too
    design = cli.run("recommend", "--params", "7B", "--seq", "8192", "--target", "a100", "--engine", "vllm@0.6.3")
    assert design.exit_code == 0
