"""A 2025 row whose source prints the run's median TTFT (``measured.ttft_median_ms``) is judged on it, not on the
mean (``benchmarks/fit_priors.py``, ``GenerationRow.judged``): the SGLang cookbook's 10-prompt means hold first-use
compiles (DeepSeek-R1.md's same 10 prompt lengths on one server: mean 153.00 then 125.76 ms, median 140.76 then
126.19; priors_2025.md, sglttft).

- Every median recorded is the one its row's quote prints, beside the mean the row keeps; every usable cookbook row
  with a TTFT has one, and no row of another source (Vultr's table, InferenceX's issues and the SGLang docs' Qwen3.6
  cells print one TTFT each).
- By hand: the prefill launch time's loss and the report pair a median row's predicted TTFT with its median.
"""

from __future__ import annotations

import math

import pytest

from mha_cli.core.safe_yaml import load_yaml_file

COOKBOOK = "github.com/sgl-project/sgl-cookbook/blob/"
GPUSTACK = "github.com/gpustack/gpustack/blob/"


@pytest.fixture(scope="module")
def raw(fit_priors):
    return load_yaml_file(fit_priors.ROWS_2025_FILE)


def test_each_median_is_the_one_its_quote_prints_beside_the_mean(fit_priors, raw):
    with_median = [
        (i, row) for i, row in enumerate(raw) if fit_priors.TTFT_MEDIAN in row.get("mha", {}).get("measured", {})
    ]
    # 60 before rows7: 34 fit, 26 held out, the cookbook's; rows7 added GPUStack's 19 usable vLLM rows (12 fit, 7 held out)
    # 79 until gpusampler made GPUStack's 32K Qwen3-32B H100 row usable (held out), on FlashInfer's sampler peak
    assert len(with_median) == 80
    for index, row in with_median:
        measured = row["mha"]["measured"]
        quote = " ".join(row["quote"].split())
        printed = f"Mean TTFT (ms): {measured['ttft_ms']:.2f} | Median TTFT (ms): {measured['ttft_median_ms']:.2f} |"
        assert printed in quote, index
        assert COOKBOOK in row["url"] or GPUSTACK in row["url"], index
    by_index = dict(with_median)
    # the double run on one server (DeepSeek-R1.md, lines 371 and 532) and Llama-4-Scout's ~42 s request (Llama4.md)
    assert [(by_index[i]["mha"]["measured"]["ttft_ms"], by_index[i]["mha"]["measured"]["ttft_median_ms"]) for i in (6, 9, 82)] == [
        (153.0, 140.76), (125.76, 126.19), (4246.98, 68.57)
    ]  # fmt: skip


def test_every_usable_cookbook_row_with_a_ttft_has_its_median_and_no_other_source_does(fit_priors, raw):
    """The sources whose quotes print a median TTFT beside the mean: the SGLang cookbook's bench_serving blocks and
    (rows7) GPUStack's vllm bench serve blocks."""
    timed = [row for row in raw if row.get("mha", {}).get("use") and "ttft_ms" in row["mha"]["measured"]]
    for row in timed:
        prints_median = COOKBOOK in row["url"] or GPUSTACK in row["url"]
        assert (fit_priors.TTFT_MEDIAN in row["mha"]["measured"]) == prints_median, row["url"]


def lone_row(fit_priors, measured: dict[str, float]):
    """A one-user sglang-0.5 row by hand (llama-3-8b bf16 on one H100, 1,000 + 100 tokens), stating no client."""
    mha = {
        "use": True, "split": "fit", "generation": "sglang-0.5", "source_id": "by-hand", "engine": "sglang",
        "target": "h100-sxm", "weight_dtype": "bf16", "kv_dtype": "bf16", "preset": "llama-3-8b", "isl": 1000,
        "osl": 100, "tp": 1, "concurrency": 1, "batching": "continuous", "measured": measured,
    }  # fmt: skip
    return fit_priors.GenerationRow(0, {"url": "https://example.org", "engine_version": "0.5.9", "mha": mha})


def test_the_launch_times_loss_and_the_report_take_the_median_where_printed(fit_priors):
    figures = {"ttft_ms": 300.0, "itl_ms": 10.0}
    mean_only, with_median = lone_row(fit_priors, figures), lone_row(fit_priors, figures | {"ttft_median_ms": 100.0})
    assert (mean_only.ttft_statistic, with_median.ttft_statistic) == ("mean", "median")
    assert with_median.judged == {"ttft_ms": 100.0, "itl_ms": 10.0}  # the mean kept in measured, not judged
    constants = dict(fit_priors.START)
    closed = mean_only.predict(constants, ("ttft_ms",), simulated=False)["ttft_ms"]
    assert with_median.predict(constants, ("ttft_ms",), simulated=False)["ttft_ms"] == closed
    assert fit_priors.ttft_loss([mean_only], constants) == pytest.approx(abs(math.log(closed / 300.0)))
    assert fit_priors.ttft_loss([with_median], constants) == pytest.approx(abs(math.log(closed / 100.0)))
    found = {key: measured for _, key, _, measured in fit_priors.generation_errors([with_median], None, constants)}
    assert found == {"ttft_ms": 100.0, "itl_ms": 10.0}
    assert "median where the source prints one: 1 rows; else its mean: 1 rows" in fit_priors.ttft_legend(
        [with_median, mean_only]
    )
