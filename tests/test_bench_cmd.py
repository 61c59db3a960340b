"""``mha bench`` at a tiny size: the byte accounting is exact; timings are only checked to exist."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app

runner = CliRunner()


def test_tiny_bench_reports_exact_bytes_and_a_backend_per_variant() -> None:
    args = ["bench", "--device", "cpu", "--seq", "64", "--batch", "2", "--d-model", "64", "--heads", "4"]
    args += ["--head-dim", "16", "--kv-heads", "2", "--warmup", "1", "--reps", "2", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = {row["label"]: row for row in data["rows"]}
    assert list(rows) == ["MHA", "GQA-2", "MQA", "MLA absorbed", "MLA naive"]
    fp32 = 4
    assert rows["MHA"]["cache_bytes_per_token"] == 2 * 4 * 16 * fp32
    assert rows["GQA-2"]["cache_bytes_per_token"] == 2 * 2 * 16 * fp32
    assert rows["MQA"]["cache_bytes_per_token"] == 2 * 16 * fp32
    assert rows["MLA absorbed"]["cache_bytes_per_token"] == (64 + 8) * fp32  # latent 4 x 16, rope 16 / 2
    assert rows["MLA naive"]["cache_bytes_per_token"] == 4 * (16 + 8 + 16) * fp32
    for row in rows.values():
        assert row["kv_bytes_read"] == row["cache_bytes_per_token"] * 64 * 2
        assert row["bytes_read"] == row["weight_bytes"] + row["kv_bytes_read"]
        assert row["median_ms"] > 0 and row["sdpa_backend"].split()[0] in {"math", "flash", "efficient", "cudnn"}
    assert rows["MHA"]["speedup_vs_mha"] == 1.0 and rows["MHA"]["bytes_vs_mha"] == 1.0


def test_an_unknown_device_is_a_one_line_error() -> None:
    result = runner.invoke(app, ["bench", "--device", "tpu"])
    assert result.exit_code == 2 and "unknown device 'tpu'" in result.output


TINY = ["bench", "--device", "cpu", "--seq", "16", "--d-model", "32", "--heads", "4", "--head-dim", "8"]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("--batch", "0", "--batch must be at least 1 (got 0)"),
     ("--head-dim", "0", "--head-dim must be at least 1 (got 0)"),
     ("--kv-lora-rank", "0", "--kv-lora-rank must be at least 1 (got 0)"),
     ("--d-model", "-1", "--d-model must be at least 1 (got -1)"),
     ("--heads", "0", "--heads must be at least 1 (got 0)"),
     ("--kv-heads", "0", "--kv-heads must be at least 1 (got 0)"),
     ("--seq", "1", "--seq must be at least 2 (got 1)"),
     ("--reps", "0", "--reps must be at least 1 (got 0)"),
     ("--warmup", "-1", "--warmup must be at least 0 (got -1)")],
)  # fmt: skip
def test_every_number_is_checked_before_running(option: str, value: str, message: str) -> None:
    result = runner.invoke(app, [*TINY, "--kv-heads", "2", option, value])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {message}"


def test_unset_means_the_default_and_zero_is_never_unset() -> None:
    data = json.loads(runner.invoke(app, [*TINY, "--kv-heads", "2", "--reps", "1", "--warmup", "0", "--json"]).stdout)
    assert data["batch"] == 4 and data["seq_len"] == 16 and data["mla_kv_lora_rank"] == 32  # 4 x head-dim


def test_help_states_the_seq_and_batch_defaults() -> None:
    words = runner.invoke(app, ["bench", "--help"], terminal_width=100).stdout.split()
    text = " ".join(word for word in words if word != "│")  # a help line may wrap inside the options box
    assert "Default: 8192." in text and "Default: 4." in text


def test_the_table_fits_80_columns_without_cutting_headers_or_cells() -> None:
    result = runner.invoke(app, [*TINY, "--kv-heads", "2", "--reps", "1", "--warmup", "0"], terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    lines = result.stdout.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines)
    assert any(line.split()[:3] == ["variant", "heads", "B/token"] for line in lines)
    assert any(line.startswith("MLA absorbed") for line in lines)


def test_a_failed_cpu_allocation_counts_as_out_of_memory():
    import torch

    from mha_cli.nn.device import is_out_of_memory

    with pytest.raises(RuntimeError) as info:
        torch.empty(2**62, dtype=torch.uint8)  # far beyond any machine: the allocator refuses at once
    assert is_out_of_memory(info.value)
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
