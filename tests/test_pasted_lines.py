"""The launch lines mha prints, pasted back, plan what they ran (trial 390): ``--data-parallel-size 1`` (every line
writes it) is one server, not DP attention over one rank; SGLang 0.5.22+'s ``--dp-size 1 --attn-dp-size N`` is N
attention ranks, not one option given twice; an engine's own name for its memory share prices that engine."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app

MOE = ("plan", "qwen3-30b-a3b", "--target", "8xh100", "--closed-form", "--json")


def test_data_parallel_size_1_is_the_same_plan_as_left_out(cli):
    """Trial 390 #1: tp 8 with --data-parallel-size 1 was refused, "--dp 1: DP attention needs 2 or more ranks"."""
    pasted = cli.json(*MOE, "--tensor-parallel-size", "8", "--data-parallel-size", "1")
    native = cli.json(*MOE, "--tp", "8")
    assert pasted["launch"] == native["launch"] and pasted["memory"] == native["memory"]
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 1 --data-parallel-size 1" in pasted["launch"]["vllm"]
    kv = ("kv", "qwen3-30b-a3b", "--target", "8xh100", "--json")
    assert cli.json(*kv, "--tp", "8", "--dp", "1")["memory"] == cli.json(*kv, "--tp", "8")["memory"]  # kv too
    one = cli.json(*kv, "--tp", "2", "--dp", "1")["memory"]  # review 391 #5: tp 2 of 8 GPUs is no DP attention,
    attention = cli.json(*kv, "--tp", "2")["memory"]  # each server its own experts; the control, kv's default for
    assert (one["expert_ranks"], attention["expert_ranks"]) == (2, 8)  # an MoE model, spreads them over all 8


def test_a_separate_servers_line_pasted_back_is_separate_servers(cli):
    """Trial 390 #4: the separate-servers pick writes tp 1 x pp 2 with --data-parallel-size 1 (run once a replica);
    pasted on 8 GPUs it was answered "must equal the 8 GPU(s)". It is that plan again; without --data-parallel-size 1
    the same tp and pp on 8 GPUs is DP attention over 4 ranks (the control: another plan)."""
    layout = ("--tp", "1", "--pp", "2")
    separate = cli.json(*MOE, *layout, "--separate-servers")
    pasted = cli.json(*MOE, "--tensor-parallel-size", "1", "--pipeline-parallel-size", "2",
                      "--data-parallel-size", "1")  # fmt: skip
    assert pasted["launch"] == separate["launch"] and pasted["memory"] == separate["memory"]
    assert "--data-parallel-size 1" in separate["launch"]["vllm"]
    attention = cli.json(*MOE, *layout)
    assert "--data-parallel-size 4" in attention["launch"]["vllm"] and attention["memory"] != separate["memory"]


@pytest.mark.parametrize("order", [
    ("--dp-size", "1", "--attn-dp-size", "8"), ("--attn-dp-size", "8", "--dp-size", "1"),
    ("--dp", "8", "--dp-size", "1", "--attn-dp-size", "8"),  # review 391 #9: was refused, "8, then 1"
])  # fmt: skip
def test_sglang_s_dp_size_1_beside_attn_dp_size_is_its_attention_ranks(cli, order):
    """Trial 390 #2: SGLang 0.5.22+ writes --dp-size 1 (its router's replicas) beside --attn-dp-size 8; mha read
    both as one option given twice. Either order is --dp 8; --dp-size 2 beside it stays refused (two servers' worth
    of ranks is another layout: tests/test_app.py)."""
    args = ("plan", "deepseek-v3", "--target", "8xh200", "--engine", "vllm", "--closed-form", "--json")
    assert cli.json(*args, *order)["launch"] == cli.json(*args, "--dp", "8")["launch"]
    assert cli.run(*args, "--dp-size", "2", "--attn-dp-size", "8").exit_code == 2


def test_an_engine_s_own_name_for_its_share_prices_that_engine(cli):
    """Trial 390 #3: --mem-fraction-static 0.85 was priced as vLLM's gpu_memory_utilization 0.85 (another pool:
    vLLM's budget holds the activations and graphs SGLang keeps outside). SGLang's name prices SGLang and
    TensorRT-LLM's TensorRT-LLM; beside another --engine each is refused; vLLM's (mha's own) serves every engine."""
    kv = ("kv", "llama-3.1-8b", "--target", "h100", "--seq", "8k", "--json")
    sglang = cli.json(*kv, "--mem-fraction-static", "0.85")["engine"]
    assert (sglang["name"], sglang["gpu_memory_utilization"]) == ("sglang", 0.85)
    assert sglang == cli.json(*kv, "--engine", "sglang", "--gpu-memory-utilization", "0.85")["engine"]
    trtllm = cli.json(*kv, "--free-gpu-memory-fraction", "0.8")["engine"]
    assert (trtllm["name"], trtllm["gpu_memory_utilization"]) == ("trtllm", 0.8)
    refused = cli.run(*kv, "--engine", "vllm", "--mem-fraction-static", "0.85")
    assert refused.exit_code == 2 and refused.stderr.strip().endswith(
        "--mem-fraction-static is sglang's share of memory, which vllm reads otherwise: give"
        " --gpu-memory-utilization for vllm, or --engine sglang"
    )
    assert cli.json(*kv, "--gpu-memory-utilization", "0.85")["engine"]["name"] == "vllm"


@pytest.mark.parametrize(
    ("share", "engine"), [("--mem-fraction-static", "sglang"), ("--free-gpu-memory-fraction", "trtllm")]
)
def test_plan_prices_the_steps_of_the_engine_its_share_names_too(cli, share, engine):
    """Trial 399 #1: plan priced --mem-fraction-static's memory as SGLang's but its steps with the default constants
    (TTFT 35.6 against 46.3 ms with --engine sglang; kv used SGLang's): the name typed picks the step costs too, so
    the JSON is --engine's; the control, no engine named, prices vLLM's latest generation."""
    args = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--concurrency", "16", "--closed-form")
    named = cli.json(*args, share, "0.8")
    assert named == cli.json(*args, "--engine", engine, share, "0.8")
    assert named["profile"]["name"].endswith(f"@{named['memory']['engine']['generation']}")
    kv = cli.json("kv", "llama-3.1-8b", "--target", "h100", "--seq", "8k", share, "0.8")
    assert kv["latency"]["profile"] == named["profile"]["name"]
    assert cli.json(*args)["profile"]["name"] == "h100-sxm-prior@vllm-0.21"


def test_recommend_and_calibrate_read_sglang_s_name_as_sglang_too(cli, tmp_path):
    """Review 391 #6, #7: recommend (no merge of a file's deployment) priced --mem-fraction-static as vLLM's and wrote
    no engine; calibrate --from fitted SGLang but its "use it" line planned vLLM. Both name SGLang now."""
    out = tmp_path / "a.yaml"
    design = cli.json("recommend", "--params", "8b", "--seq", "8k", "--target", "h100", "--mem-fraction-static",
                      "0.85", "--out", str(out))  # fmt: skip
    assert (design["engine"]["name"], design["engine"]["gpu_memory_utilization"]) == ("sglang", 0.85)
    assert "  engine: sglang\n" in out.read_text()
    refused = cli.run("recommend", "--params", "8b", "--target", "h100", "--mem-fraction-static", "0.85", "--engine",
                      "vllm")  # fmt: skip
    assert refused.exit_code == 2
    repo = Path(__file__).resolve().parent.parent
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    fitted = runner.invoke(app, [
        "calibrate", "--from", str(repo / "benchmarks/vllm_cpu/results/tiny-llama_c1_i128_o64.json"), "--model",
        str(repo / "benchmarks/vllm_cpu/models/tiny-llama/config.json"), "--target", "l4", "--mem-fraction-static",
        "0.5", "--name", "r391", "--json",
    ])  # fmt: skip
    assert fitted.exit_code == 0, fitted.output
    assert " --engine sglang --gpu-memory-utilization 0.5 " in json.loads(fitted.stdout)["use"]


def test_data_parallel_size_1_overrides_a_config_file_s_dp(cli, tmp_path):
    """Review 393 #1: a config file's dp 4 stayed beside a typed --dp 1 (kv printed DP attention and separate servers
    at once; plan priced the file's 4). --dp 1 overrides it and the expert parallelism it implied: tp 2 servers, each
    with every expert over its 2 ranks; without --dp 1 the file's dp is read (the control: its tp 1 x dp 4 is refused
    on 8 GPUs)."""
    design = tmp_path / "moe.yaml"
    made = cli.run("recommend", "--params", "30b", "--active-params", "3b", "--experts", "128", "--top-k", "8",
                   "--out", str(design))  # fmt: skip
    assert made.exit_code == 0, made.output
    design.write_text(design.read_text().replace("\ndeployment:\n", "\ndeployment:\n  dp: 4\n"))
    args = (str(design), "--target", "8xh100-sxm")
    kv = cli.json("kv", *args, "--tp", "2", "--dp", "1")
    assert (kv["deployment"].get("dp"), kv["deployment"].get("expert_parallel"), kv["memory"]["expert_ranks"]) == (
        None,
        None,
        2,
    )
    plan = cli.json("plan", *args, "--tp", "2", "--dp", "1", "--closed-form")["deployment"]
    assert (plan["dp_attention"], plan["expert_parallel"], plan["separate_servers"], plan["replicas"]) == (
        False,
        False,
        True,
        4,
    )
    assert cli.run("kv", *args).exit_code == 2
