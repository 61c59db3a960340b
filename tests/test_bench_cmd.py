"""``mha bench`` at a tiny size: the byte accounting is exact; timings are only checked to exist."""

from __future__ import annotations

import json

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
