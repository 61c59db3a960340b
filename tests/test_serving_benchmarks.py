"""The published serving measurements kept for the latency model (``tests/fixtures/serving_benchmarks.yaml``) are
sourced and usable: each row has its URL and quote, a model, a GPU, its load, and at least one latency figure."""

from __future__ import annotations

from pathlib import Path

from mha_cli.core.safe_yaml import load_yaml_file

ROWS = load_yaml_file(Path(__file__).parent / "fixtures" / "serving_benchmarks.yaml")


def test_every_row_is_sourced_and_has_a_latency_or_a_throughput():
    assert len(ROWS) >= 30
    for row in ROWS:
        assert row["url"].startswith("https://") and row["quote"], row
        assert row["model"] and row["gpu"] and row["concurrency"], row
        figures = [row.get(key) for key in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "output_tokens_per_s")]
        assert any(isinstance(value, (int, float)) and value > 0 for value in figures), row


def test_the_set_holds_single_request_rows_from_several_sources():
    single = [row for row in ROWS if str(row["concurrency"]).split()[-1] == "1" or row["concurrency"] == 1]
    assert len(single) >= 10
    assert len({row["url"].split("/blob/")[0] for row in ROWS}) >= 5
