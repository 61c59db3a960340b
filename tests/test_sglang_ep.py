"""SGLang's expert-parallel size must divide its experts (``core.engine.sglang_ep``, its fused MoE layer's assert,
read in the 0.5.13 wheel): a plan wrote ``--ep-size 6`` for Qwen3-235B-A22B's 128 experts, a line SGLang refuses at
start-up (trial 268 #2). The experts counted include the redundant copies ``--ep-num-redundant-experts`` adds (from
0.4.6.post5), as LMSYS ran DeepSeek-V3's 256 over EP72 with 32: the line adds them; before it the layout is refused."""

from __future__ import annotations

from mha_cli.core.engine.sglang_ep import redundant_experts, sglang_experts_uneven
from mha_cli.core.sources import load_source
from tests.conftest import reference_hf_config

QWEN = str(reference_hf_config("qwen3-235b-a22b-instruct-2507"))


def test_the_ranks_must_divide_the_experts_and_their_copies():
    model = load_source(QWEN).model  # 128 routed experts
    assert redundant_experts(model, 6) == 4 and redundant_experts(model, 8) == 0  # 132 / 6 = 22
    assert sglang_experts_uneven(model, 6) is None  # the latest adds the copies
    assert sglang_experts_uneven(model, 6, (0, 4, 6, 1)).startswith(  # 0.4.6.post1
        "SGLang before 0.4.6.post5 needs --ep-size to divide the 128 experts (here 6; from it"
    )
    deepseek = load_source("deepseek-v3").model
    assert redundant_experts(deepseek, 72) == 32  # LMSYS's EP72: 288 / 72 = 4 a GPU


def test_the_sglang_line_adds_the_copies_and_an_older_release_is_refused(cli):
    pinned = ["plan", QWEN, "--target", "6xh200", "--dp", "6", "--closed-form", "--concurrency", "32"]
    line = cli.json(*pinned, "--engine", "sglang")
    assert "--ep-size 6" in line["launch"]["sglang"] and "--ep-num-redundant-experts 4" in line["launch"]["sglang"]
    assert "the sglang line adds --ep-num-redundant-experts 4" in line["launch_note"]
    refused = cli.run(*pinned, "--engine", "sglang@0.4.6.post1")
    assert (
        refused.exit_code == 2
        and "SGLang before 0.4.6.post5 needs --ep-size to divide the 128 experts" in refused.output
    )
    companion = cli.json(*pinned, "--max-num-batched-tokens", "1024")  # a chunk SGLang's reserve starts (6 x 1,024)
    assert "--ep-num-redundant-experts 4" in companion["launch"]["sglang"]  # a vLLM plan's SGLang line too


def test_shared_experts_without_expert_parallelism_keep_their_sglang_line(cli):
    """6 DP ranks sharing Qwen3-235B's experts split by width (no --ep-size: SGLang's ep size is 1) load in SGLang
    (1,536 % 6 == 0); the check dropped their line as if --ep-size 6 had been written (review 269 #1)."""
    found = cli.json("plan", QWEN, "--target", "6xh200", "--tp", "1", "--engine", "sglang", "--closed-form",
                     "--concurrency", "32")  # fmt: skip
    assert "sglang" in found["launch"] and "--ep-size" not in found["launch"]["sglang"]


def test_dp_attention_over_an_uneven_last_node_has_no_sglang_line(cli):
    """12 x H200 read as 8 + 4: vLLM wrote no line (its --data-parallel-size-local is one figure for every node) while
    SGLang's --nnodes 2 put 6 GPUs on each node, one of which has 4 (trial 268 #1)."""
    found = cli.json("plan", "kimi-k2", "--target", "12xh200", "--dp", "12", "--concurrency", "64", "--closed-form")
    assert not found.get("launch")  # neither engine's line
    assert (
        "sglang: no launch line: the last node is not full, and SGLang places --tp-size / --nnodes"
        in (found["launch_note"])
    )


def test_deepep_is_nvidias_alone(cli):
    """DeepEP's all-to-all runs over NVSHMEM on NVIDIA GPUs: a plan on 8 x MI300X priced it and wrote
    --all2all-backend deepep_low_latency, and the disaggregated search picked it unasked (trial 268 #5). Asked for,
    it is refused; the search's DP-attention workers are priced and launched with the default dispatch off NVIDIA."""
    refused = cli.run("plan", "deepseek-v3", "--target", "8xmi300x", "--dp", "8", "--moe-a2a-backend", "deepep",
                      "--closed-form", "--concurrency", "64")  # fmt: skip
    assert refused.exit_code == 2 and "vLLM runs DeepEP on NVIDIA GPUs alone (NVSHMEM" in refused.output
    found = cli.json(
        "plan",
        "deepseek-v3",
        "--target",
        "2x8xmi300x",
        "--disaggregated",
        "--isl",
        "2048",
        "--osl",
        "512",
        "--ttft-ms",
        "3000",
        "--itl-ms",
        "200",
    )  # fmt: skip  (80 ms: tp 8 on vLLM V1's constants)
    assert found["splits"][found["chosen"]]["decode_dp"] > 1  # a DP worker, priced and launched without DeepEP
    assert found["launch"] and not any("deepep" in line for line in found["launch"].values())
    nvidia = cli.json("plan", "deepseek-v3", "--target", "2x8xh200", "--disaggregated", "--isl", "2048", "--osl",
                      "512", "--ttft-ms", "3000", "--itl-ms", "80")  # fmt: skip
    split = nvidia["splits"][nvidia["chosen"]]
    assert split["decode_dp"] > 1 and "deepep" in nvidia["launch"]["vllm"]  # DeepEP kept where it runs


def test_a_disaggregated_sglang_worker_adds_the_copies_too(cli):
    """The disaggregated DP workers wrote --ep-size N with no copies where the experts do not divide N (the aggregated
    line adds them): Qwen3-235B-A22B's 128 experts over a 6-GPU worker need 4."""
    from mha_cli.core.cost.disaggregated_launch import _parallel_flags
    from mha_cli.core.cost.disaggregated_layouts import WorkerLayout

    words = _parallel_flags(WorkerLayout(tp=1, dp=6), "decode", sglang=True, redundant=4)
    assert words[-2:] == ["--ep-num-redundant-experts", "4"] and "--ep-size" in words
    assert "--ep-num-redundant-experts" not in _parallel_flags(WorkerLayout(tp=1, dp=8), "decode", sglang=True)
