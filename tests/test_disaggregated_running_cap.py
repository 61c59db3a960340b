"""The disaggregated plan's launch lines start the decode workers its simulated loop runs (trial 289 #1): the lines
capped a decode worker's running requests at its goodput batch (``--max-num-seqs 53``, SGLang's
``--max-running-requests 53``) where the loop ran what the pool admits (70 at most of 221). That cap was the mean
batch at the very load priced, so the server it started queued without end there (review 290 #1), and under vLLM's
default max_num_seqs it sized another pool than the one priced. The lines now leave the running requests to the pool,
as priced and simulated; the rows over capacity and their limit column say what they serve."""

from __future__ import annotations

import re


def test_the_decode_lines_start_the_worker_the_loop_runs(cli):
    found = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--isl", "4096", "--osl", "256",
                     "--itl-ms", "12")  # fmt: skip
    assert not re.search(r"--max-num-seqs|--max-running-requests", found["launch"]["vllm"] + found["launch"]["sglang"])
    admitted = next(d["admitted"] for d in found["decode"] if d["tp"] == 2)
    # 70 running on the default constants, which priced a plan without --engine before 2026-12-08
    assert found["simulated"]["max_running"] == 28 <= admitted == 221
    # a cap given is priced and written on every worker's line (vLLM's each rank's, SGLang's all its ranks')
    capped = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--isl", "4096", "--osl",
                      "256", "--itl-ms", "12", "--max-num-seqs", "64")  # fmt: skip
    assert set(re.findall(r"--max-num-seqs (\d+)", capped["launch"]["vllm"])) == {"64"}
    assert all(d["admitted"] <= 64 for d in capped["decode"])


def test_an_aggregated_row_over_its_capacity_says_what_it_serves(cli):
    """Trial 289 #2: at --rate 100 the aggregated tp4 replica printed 100 req/s, a 381 ms TTFT and 0 tokens/s per GPU;
    planned alone (`--tp 4 --rate 100`) it serves 15.0 req/s, 959 tokens/s per GPU, its TTFT growing (18.8 and 1,204
    on the default constants, which priced a plan without --engine before 2026-12-08). The row says that now, as the
    splits' rows do."""
    found = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--isl", "4096", "--osl", "256",
                     "--itl-ms", "12", "--ttft-ms", "1000", "--rate", "100")  # fmt: skip
    tp4 = next(row for row in found["aggregated"] if row["tp"] == 4)
    assert tp4["rate_rps"] == 100 and tp4["saturated"] and not tp4["meets_targets"]
    assert tp4["served_rps"] == tp4["capacity_rps"] and round(tp4["served_rps"], 1) == 15.0
    assert tp4["output_tokens_per_s_per_gpu"] == tp4["served_rps"] * 256 / 4
    alone = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--tp", "4", "--isl", "4096", "--osl", "256",
                     "--rate", "100", "--closed-form")  # fmt: skip
    assert round(alone["output_tokens_per_s_per_gpu"]) == round(tp4["output_tokens_per_s_per_gpu"]) == 959


def test_a_saturated_splits_limit_is_the_pool_that_sets_what_it_serves(cli):
    """Trial 289 #7: at --rate 100, 2 x tp1 prefill + 1 x tp1 decode serves 13.29 req/s, its two prefill workers'
    2 x 6.64, and the limit column read "decode", its goodput's bottleneck (the decode worker's 9.16 req/s within
    --itl-ms 12). On the default constants, which priced a plan without --engine before 2026-12-08, the split was
    2 x tp1 + 1 x tp2 at 2 x 10.24 = 20.48 req/s."""
    found = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--isl", "4096", "--osl", "256",
                     "--itl-ms", "12", "--ttft-ms", "1000", "--rate", "100", "--closed-form")  # fmt: skip
    split = next(s for s in found["splits"] if (s["prefill_workers"], s["prefill_tp"], s["decode_workers"],
                                                 s["decode_tp"]) == (2, 1, 1, 1))  # fmt: skip
    assert split["saturated"] and round(split["served_rps"], 2) == 13.29
    assert split["served_by"] == "prefill" and split["bottleneck"] == "decode"
    assert all(s["served_by"] is None for s in cli.json("plan", "llama-3.1-8b", "--target", "4xh100",
               "--disaggregated", "--isl", "4096", "--osl", "256", "--itl-ms", "12", "--closed-form")["splits"])  # fmt: skip
