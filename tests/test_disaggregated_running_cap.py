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
