"""The disaggregated simulation runs the decode worker its launch line starts (trial 289 #1): the line caps its
running requests at the goodput batch (``--max-num-seqs``, SGLang's ``--max-running-requests``), and the simulated
loop admitted up to the pool instead (70 where the line says 53)."""

from __future__ import annotations

import re


def test_the_simulated_decode_worker_runs_no_more_than_its_line_admits(cli):
    found = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--isl", "4096", "--osl", "256",
                     "--itl-ms", "12", "--ttft-ms", "1000")  # fmt: skip
    caps = {int(n) for n in re.findall(r"--max-num-seqs (\d+)", found["launch"]["vllm"])}
    assert caps == {int(n) for n in re.findall(r"--max-running-requests (\d+)", found["launch"]["sglang"])} == {53}
    assert found["simulated"]["max_running"] == 53


def test_an_aggregated_row_over_its_capacity_says_what_it_serves(cli):
    """Trial 289 #2: at --rate 100 the aggregated tp4 replica printed 100 req/s, a 381 ms TTFT and 0 tokens/s per GPU;
    planned alone (`--tp 4 --rate 100`) it serves 18.8 req/s, 1,204 tokens/s per GPU, its TTFT growing. The row says
    that now, as the splits' rows do."""
    found = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--isl", "4096", "--osl", "256",
                     "--itl-ms", "12", "--ttft-ms", "1000", "--rate", "100")  # fmt: skip
    tp4 = next(row for row in found["aggregated"] if row["tp"] == 4)
    assert tp4["rate_rps"] == 100 and tp4["saturated"] and not tp4["meets_targets"]
    assert tp4["served_rps"] == tp4["capacity_rps"] and round(tp4["served_rps"], 1) == 18.8
    assert tp4["output_tokens_per_s_per_gpu"] == tp4["served_rps"] * 256 / 4
    alone = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--tp", "4", "--isl", "4096", "--osl", "256",
                     "--rate", "100", "--closed-form")  # fmt: skip
    assert round(alone["output_tokens_per_s_per_gpu"]) == round(tp4["output_tokens_per_s_per_gpu"]) == 1204


def test_a_saturated_splits_limit_is_the_pool_that_sets_what_it_serves(cli):
    """Trial 289 #7: at --rate 100, 2 x tp1 prefill + 1 x tp2 decode serves 20.48 req/s, its two prefill workers'
    2 x 10.24 (a tp2 decode worker takes 30.1), and the limit column read "decode", its goodput's bottleneck."""
    found = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--isl", "4096", "--osl", "256",
                     "--itl-ms", "12", "--ttft-ms", "1000", "--rate", "100", "--closed-form")  # fmt: skip
    split = next(s for s in found["splits"] if (s["prefill_workers"], s["prefill_tp"], s["decode_workers"],
                                                 s["decode_tp"]) == (2, 1, 1, 2))  # fmt: skip
    assert split["saturated"] and round(split["served_rps"], 2) == 20.48
    assert split["served_by"] == "prefill" and split["bottleneck"] == "decode"
    assert all(s["served_by"] is None for s in cli.json("plan", "llama-3.1-8b", "--target", "4xh100",
               "--disaggregated", "--isl", "4096", "--osl", "256", "--itl-ms", "12", "--closed-form")["splits"])  # fmt: skip
