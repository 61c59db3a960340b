"""MoE replicas as separate servers, each holding every routed expert (``DeploymentSpec.separate_servers``, ``plan
--separate-servers``), beside vLLM's and SGLang's default of one server whose data-parallel ranks share the experts.
The search never priced them (trial 275 #1): eight copies of gpt-oss-120b on eight PCIe GPUs, each what one GPU
alone serves, lost to one pipeline of eight stages."""

from __future__ import annotations

import shlex

from mha_cli.core.errors import EXIT_BAD_INPUT
from tests.conftest import reference_hf_config

GPT_OSS = str(reference_hf_config("gpt-oss-120b"))
LOAD = ("--isl", "2048", "--osl", "512", "--ttft-ms", "2000", "--itl-ms", "40")


def _pick(found: dict) -> dict:
    return found["candidates"][found["chosen"]]


def test_the_search_prices_eight_copies_as_eight_single_gpu_servers(cli):
    one = _pick(cli.json("plan", GPT_OSS, "--target", "1xrtx-pro-6000-srv", *LOAD))
    found = cli.json("plan", GPT_OSS, "--target", "8xrtx-pro-6000-srv", *LOAD)
    eight = _pick(found)
    assert eight["deployment"] == {**one["deployment"], "replicas": 8, "gpus": 8, "separate_servers": True}
    assert eight["concurrency"] == 8 * one["concurrency"]
    assert round(eight["output_tokens_per_s_per_gpu"]) == round(one["output_tokens_per_s_per_gpu"])  # 785
    assert "8 separate servers, each with every expert (--separate-servers)" in found["layouts"][1]
    vllm, sglang = shlex.split(found["launch"]["vllm"]), shlex.split(found["launch"]["sglang"])
    assert vllm[vllm.index("--data-parallel-size") + 1] == "1" and "per replica (8 servers)" in found["launch_note"]
    assert sglang[sglang.index("--dp-size") + 1] == "8" and "--enable-dp-attention" not in sglang  # its copies


def test_pinned_the_flag_keeps_every_expert_on_each_replica(cli):
    args = ("plan", GPT_OSS, "--target", "8xrtx-pro-6000-srv", "--tp", "1", "--concurrency", "192", "--closed-form")
    shared, separate = cli.json(*args), cli.json(*args, "--separate-servers")
    assert shared["deployment"]["expert_ranks"] == 8 and "separate_servers" not in shared["deployment"]
    assert separate["deployment"]["expert_ranks"] == 1 and separate["deployment"]["separate_servers"]
    single = cli.json("plan", GPT_OSS, "--target", "rtx-pro-6000-srv", "--tp", "1", "--concurrency", "24",
                      "--closed-form")  # fmt: skip
    assert separate["memory"]["weight_bytes_per_device"] == single["memory"]["weight_bytes_per_device"]
    assert separate["memory"]["weight_bytes_per_device"] > shared["memory"]["weight_bytes_per_device"]
    assert separate["itl_ms"] == single["itl_ms"]  # 24 users on each of 8 copies: one GPU's step


def test_the_flag_is_refused_where_it_means_nothing(cli):
    dense = cli.run("plan", "llama-3-8b", "--target", "8xh100", "--tp", "1", "--separate-servers")
    assert dense.exit_code == EXIT_BAD_INPUT and "has none: leave it out" in dense.stderr
    one = cli.run("plan", GPT_OSS, "--target", "8xh100", "--tp", "8", "--separate-servers")  # review 277 #10
    assert one.exit_code == EXIT_BAD_INPUT and "takes all 8 GPUs of one server" in one.stderr
    dp = cli.run("plan", GPT_OSS, "--target", "8xh100", "--dp", "8", "--separate-servers")
    assert dp.exit_code == EXIT_BAD_INPUT and "--dp is one server whose ranks share the experts" in dp.stderr


def _config(tmp_path) -> str:
    """gpt-oss-120b in a config file whose deployment asks for separate servers."""
    import yaml

    from mha_cli.core.sources import load_source

    model = load_source(GPT_OSS).model.model_dump(mode="json", exclude_none=True)
    path = tmp_path / "separate.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 2, "model": model, "deployment": {"separate_servers": True}}))
    return str(path)


def test_searches_with_either_flag_keep_their_meaning(cli):
    """--expert-parallel still meets the 8 copies (they were dropped as "the same as asked" at tp 1, review 277 #1);
    --separate-servers never comes back as one server whose ranks share the experts (DP attention was still searched
    beside it, review 277 #2)."""
    ep = _pick(cli.json("plan", GPT_OSS, "--target", "8xrtx-pro-6000-srv", *LOAD, "--expert-parallel"))
    assert ep["deployment"]["separate_servers"] and ep["deployment"]["replicas"] == 8
    found = cli.json("plan", str(reference_hf_config("deepseek-v3")), "--target", "8xh200", "--isl", "2048", "--osl",
                     "512", "--closed-form", "--separate-servers")  # fmt: skip
    assert all(not c["deployment"]["dp_attention"] for c in found["candidates"])
    assert all(c["deployment"]["expert_ranks"] == c["deployment"]["tp"] for c in found["candidates"])


def test_an_engine_whose_replicas_cannot_share_lists_each_layout_once(cli):
    """Qwen3-Next's experts do not split over 6 ranks: its plain replicas are copies already, so the separate
    servers' variant is not priced a second time (review 277 #7)."""
    found = cli.json("plan", str(reference_hf_config("qwen3-next-80b-a3b")), "--target", "6xh100", "--isl", "2048",
                     "--osl", "512", "--closed-form")  # fmt: skip
    assert not any(line.startswith("tp 1 x pp 1 x 6 separate servers") for line in found["layouts"])
    assert any(line.startswith("tp 1 x pp 1 x 6 replica(s)") for line in found["layouts"])


def test_a_config_files_separate_servers_is_kept_everywhere(cli, tmp_path):
    """A config file's separate_servers with --dp is refused as the flag is (review 277 #3); kv's note says they were
    asked, not that the engine lacks data parallelism (#4), and offers no --dp way out (#5)."""
    path = _config(tmp_path)
    dp = cli.run("plan", path, "--target", "8xrtx-pro-6000-srv", "--tp", "1", "--dp", "8", "--closed-form")
    assert dp.exit_code == EXIT_BAD_INPUT and "the config file's separate_servers" in dp.stderr
    kv = cli.json("kv", path, "--target", "8xrtx-pro-6000-srv", "--tp", "1", "--batch", "4000", "--seq", "8192")
    notes = kv["memory"]["engine"]["notes"]
    assert any("8 replicas asked as separate servers (separate_servers)" in note for note in notes)
    assert not any("--dp" in way["change"] for way in kv["ways_out"])
