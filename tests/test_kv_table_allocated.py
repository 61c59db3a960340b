"""The memory table's headroom / short-by line is the budget less the batch as the engine allocates it (whole blocks
in every group, state pages): where that differs from the cache's bytes, the table shows it, so its lines add up."""

import re

from typer.testing import CliRunner

from mha_cli.cli.app import app
from tests.conftest import reference_hf_config


def _table(*args: str) -> str:
    """The table at a width that keeps each cell on one line."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"}).stdout


def _row(table: str, label: str) -> int:
    return int(re.search(rf"│\s*{re.escape(label)}\s*│\s*([\d,]+) │", table).group(1).replace(",", ""))


def test_a_hybrid_model_short_by_is_the_allocated_batch_less_the_budget(cli):
    # two requests: one fits since the latest vLLM's Model Runner V2 samples its dummy rows greedily (core.engine.sampler)
    args = ("kv", str(reference_hf_config("qwen3.6-27b")), "--target", "h100", "--batch", "2")
    memory = cli.json(*args)["memory"]
    table = _table(*args)
    allocated, available = memory["allocated_kv_bytes_per_device"], memory["engine"]["available_kv_bytes"]
    assert allocated != memory["kv_bytes_per_device"]
    assert _row(table, "as allocated") == allocated
    assert _row(table, "short by") == allocated - available == -memory["headroom_bytes"]
    assert _row(table, "KV cache (this batch)") + _row(table, "short by") != available  # why the row is needed


def test_a_batch_in_whole_blocks_shows_no_second_row(cli):
    table = _table("kv", "llama-3-8b", "--target", "h100", "--seq", "8k")
    assert "as allocated" not in table and "available - this batch" in table
