"""vLLM's ``--async-scheduling`` / ``--no-async-scheduling`` on ``mha kv`` and ``mha plan``: off, a sliding window
reserves blocks for one step in flight, not two (``VllmConfig.max_in_flight_tokens`` = ``max_concurrent_batches`` x
``max_num_batched_tokens``, ``max_concurrent_batches`` the pipeline size when async scheduling is off: config/vllm.py,
0.29.0); the launch line writes the flag where the release has it (0.10.0 on); other engines refuse it in one line."""

from __future__ import annotations

import pytest

GEMMA3 = ("kv", "gemma-3-27b", "--target", "h100-sxm", "--seq", "32768", "--max-num-batched-tokens", "8192")


def engine_of(cli, *args: str) -> dict:
    return cli.json(*GEMMA3, *args)["engine"]


def test_off_reserves_one_step_for_the_sliding_groups_by_hand(cli):
    """Gemma-3-27B on vLLM 0.29.0: 62 layers, 52 sliding (window 1,024) in groups of 10 (6 groups, 8 empty slots), 10
    full. A token of a layer is 2 x 16 KV heads x 128 x 2 B = 8,192 B. Async scheduling on (0.29.0's default) reserves
    2 x 8,192 tokens of window blocks per sliding slot, off 1 x 8,192: the request is 8,192 tokens x 60 slots x
    8,192 B = 4,026,531,840 B smaller."""
    on = engine_of(cli, "--engine", "vllm@0.29.0")
    off = engine_of(cli, "--engine", "vllm@0.29.0", "--no-async-scheduling")
    assert 8192 * 60 * 8192 == 4_026_531_840
    assert on["kv_bytes_per_request"] - off["kv_bytes_per_request"] == 4_026_531_840
    assert (on["async_scheduling"], off["async_scheduling"]) == (None, False)
    assert off["kv_blocks"] == on["kv_blocks"] and off["max_concurrency"] > on["max_concurrency"]
    assert any("plus the steps in flight (2 x 8192 tokens: async scheduling)" in note for note in on["notes"])
    assert any("plus a whole step (8192 tokens)" in note for note in off["notes"])
    assert (
        engine_of(cli, "--engine", "vllm@0.29.0", "--async-scheduling")["kv_bytes_per_request"]
        == (on["kv_bytes_per_request"])
    )


def test_before_0_26_one_step_either_way(cli):
    """vLLM 0.25.1 reserves one step of max_num_batched_tokens alone: the option changes no figure."""
    on = engine_of(cli, "--engine", "vllm@0.25.1")
    off = engine_of(cli, "--engine", "vllm@0.25.1", "--no-async-scheduling")
    assert off["kv_bytes_per_request"] == on["kv_bytes_per_request"]


def plan_launch(cli, engine: str, flag: str) -> str:
    result = cli.json("plan", "llama-3-8b", "--target", "h100-sxm", "--engine", engine, flag)
    return result["launch"]["vllm"]


def test_the_launch_line_writes_the_flag_where_the_release_has_it(cli):
    """0.29.0's line ends with the flag asked; 0.9.2 has no async scheduling (first in 0.10.0): its line leaves
    --no-async-scheduling out, and --async-scheduling is refused there in one line, exit 2."""
    assert plan_launch(cli, "vllm@0.29.0", "--no-async-scheduling").endswith(" --no-async-scheduling")
    assert plan_launch(cli, "vllm@0.10.0", "--async-scheduling").endswith(" --async-scheduling")
    assert "async" not in plan_launch(cli, "vllm@0.9.2", "--no-async-scheduling")
    refused = cli.run("plan", "llama-3-8b", "--target", "h100-sxm", "--engine", "vllm@0.9.2", "--async-scheduling")
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines()[-1] == (
        "error: --async-scheduling sets vLLM's --async-scheduling (first in 0.10.0), which vLLM 0.9.2 lacks: drop it"
        " or use --engine vllm@0.10.0 or later"
    )


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_other_engines_refuse_it_in_one_line(cli, engine):
    result = cli.run("kv", "llama-3-8b", "--target", "h100-sxm", "--engine", engine, "--no-async-scheduling")
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: --async-scheduling/--no-async-scheduling are vLLM's: {engine} is priced with its own scheduler;"
        " leave them out, or use --engine vllm"
    )
