"""vLLM V0's KV-cache log lines as each release words them (``core.engine.vllm_v0_log``, read in the wheels of
0.6.2, 0.6.3, 0.6.4.post1, 0.6.6.post1, 0.7.0-0.7.3), against four V0 start-up logs users posted
(tests/fixtures/engine_logs.yaml 2422, 2717, 2718, 2722): their wording and CPU blocks by hand (a fifth, 2723, is
0.10.2's V0 engine, whose ``# cuda blocks`` is 0.7.3's wording; mha prices 0.10 as V1). Trial 316 found
``--engine vllm@0.1`` promising a "Maximum concurrency" line vLLM printed only from 0.6.3."""

from __future__ import annotations

import pytest

from mha_cli.core.engine.vllm_v0_log import v0_cache_lines


@pytest.mark.parametrize(
    ("release", "per_token", "cpu_blocks", "logged"),
    [
        ("0.5.5", 131_072, 2048, "# GPU blocks: 10786, # CPU blocks: 2048"),  # 2718, Mistral-7B: 32 x 8 x 128 x 2 x 2
        ("0.6.3.post1", 65_536, 4096, "# GPU blocks: 2987, # CPU blocks: 4096"),  # 2717, Qwen2.5-32B at tp 4
        ("0.6.4.post1", 57_344, 4681, "# GPU blocks: 4102, # CPU blocks: 4681"),  # 2422, Qwen2.5-7B
        ("0.7.2", 98_304, 2730, "# CUDA blocks: 11770, # CPU blocks: 2730"),  # 2722, Qwen2.5-14B at tp 2
    ],
)
def test_the_blocks_line_is_the_one_the_release_logged(release, per_token, cpu_blocks, logged):
    """The CPU blocks are the 4 GiB swap space over a block's bytes: 4 x 2^30 // (16 x the rank's bytes a token)."""
    assert 4 * 2**30 // (16 * per_token) == cpu_blocks
    gpu_blocks = int(logged.split(": ")[1].split(",")[0])
    lines = v0_cache_lines(release, "NVIDIA", gpu_blocks, 16 * per_token, 32_768, 1.0)
    assert lines[0] == logged


def test_the_concurrency_line_starts_at_0_6_3_and_the_device_is_named_from_0_7():
    assert len(v0_cache_lines("0.6.2", "NVIDIA", 100, 2**21, 8192, 0.2)) == 1
    assert v0_cache_lines("0.6.3", "NVIDIA", 100, 2**21, 8192, 0.195)[1] == (
        "Maximum concurrency for 8192 tokens per request: 0.20x"  # written with %s: no thousands separator
    )
    assert v0_cache_lines("0.7.0", "AMD", 100, 2**21, 8192, 0.2)[0].startswith("# CUDA blocks: 100")  # dispatch key
    assert v0_cache_lines("0.7.3", "AMD", 100, 2**21, 8192, 0.2)[0].startswith("# rocm blocks: 100")  # device name
    assert v0_cache_lines(None, "NVIDIA", 100, 2**21, 8192, 0.2)[0].startswith("# cuda blocks: 100")  # 0.7.3


@pytest.mark.parametrize(("engine", "lines"), [("vllm@0.1", 1), ("vllm@0.6.3", 2), ("vllm@0.7", 2)])
def test_kv_prints_the_release_s_lines(cli, engine, lines):
    """Llama-3-8B's 131,072 B a token in blocks of 16: 2,048 CPU blocks in every V0 release."""
    logged = cli.json("kv", "llama-3-8b", "--target", "h100", "--engine", engine)["engine"]["log_lines"]
    assert len(logged) == lines and logged[0].endswith(", # CPU blocks: 2048")
