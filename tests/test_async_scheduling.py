"""vLLM's ``--async-scheduling`` / ``--no-async-scheduling`` on ``mha kv``, ``mha plan`` (its disaggregated workers
too), ``mha check``, ``mha recommend`` and ``mha calibrate --from``: off, a sliding window reserves blocks for one step
in flight, not two (``VllmConfig.max_in_flight_tokens`` = ``max_concurrent_batches`` x ``max_num_batched_tokens``,
``max_concurrent_batches`` the pipeline size when async scheduling is off: config/vllm.py, 0.29.0; only the
recycling-aware specs, sliding window and chunked local, reserve it, so a model of full attention moves no figure);
every vLLM launch line writes the flag where the release has it (0.10.0 on); other engines refuse it in one line."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.conftest import REPO

GEMMA3 = ("kv", "gemma-3-27b", "--target", "h100-sxm", "--seq", "32768", "--max-num-batched-tokens", "8192")


def engine_of(cli, *args: str) -> dict:
    return cli.json(*GEMMA3, *args)["engine"]


def test_off_reserves_one_step_for_the_sliding_groups_by_hand(cli):
    """Gemma-3-27B on vLLM 0.29.0: 62 layers, 52 sliding (window 1,024) in groups of 10 (6 groups, 8 empty slots), 10
    full. A token of a layer is 2 x 16 KV heads x 128 x 2 B = 8,192 B. Async scheduling on (0.29.0's default) reserves
    2 x 8,192 tokens of window blocks per sliding slot, off 1 x 8,192: the request is 8,192 tokens x 60 slots x
    8,192 B = 4,026,531,840 B smaller."""
    on = engine_of(cli, "--engine", "vllm@0.29.0")
    off = engine_of(cli, "--engine", "vllm@0.29.0", "--no-async-scheduling")
    assert 8192 * 60 * 8192 == 4_026_531_840
    assert on["kv_bytes_per_request"] - off["kv_bytes_per_request"] == 4_026_531_840
    assert (on["async_scheduling"], off["async_scheduling"]) == (None, False)
    assert off["kv_blocks"] == on["kv_blocks"] and off["max_concurrency"] > on["max_concurrency"]
    assert any("plus the steps in flight (2 x 8192 tokens: async scheduling)" in note for note in on["notes"])
    assert any("plus a whole step (8192 tokens)" in note for note in off["notes"])
    assert (
        engine_of(cli, "--engine", "vllm@0.29.0", "--async-scheduling")["kv_bytes_per_request"]
        == (on["kv_bytes_per_request"])
    )


def test_before_0_26_one_step_either_way(cli):
    """vLLM 0.25.1 reserves one step of max_num_batched_tokens alone: the option changes no figure."""
    on = engine_of(cli, "--engine", "vllm@0.25.1")
    off = engine_of(cli, "--engine", "vllm@0.25.1", "--no-async-scheduling")
    assert off["kv_bytes_per_request"] == on["kv_bytes_per_request"]


def plan_launch(cli, engine: str, flag: str) -> str:
    result = cli.json("plan", "llama-3-8b", "--target", "h100-sxm", "--engine", engine, flag)
    return result["launch"]["vllm"]


def test_the_launch_line_writes_the_flag_where_the_release_has_it(cli):
    """0.29.0's line ends with the flag asked; 0.9.2 has no async scheduling (first in 0.10.0): its line leaves
    --no-async-scheduling out, and --async-scheduling is refused there in one line, exit 2."""
    assert plan_launch(cli, "vllm@0.29.0", "--no-async-scheduling").endswith(" --no-async-scheduling")
    assert plan_launch(cli, "vllm@0.10.0", "--async-scheduling").endswith(" --async-scheduling")
    assert "async" not in plan_launch(cli, "vllm@0.9.2", "--no-async-scheduling")
    refused = cli.run("plan", "llama-3-8b", "--target", "h100-sxm", "--engine", "vllm@0.9.2", "--async-scheduling")
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines()[-1] == (
        "error: --async-scheduling sets vLLM's --async-scheduling (first in 0.10.0), which vLLM 0.9.2 lacks: drop it"
        " or use --engine vllm@0.10.0 or later"
    )


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_other_engines_refuse_it_in_one_line(cli, engine):
    result = cli.run("kv", "llama-3-8b", "--target", "h100-sxm", "--engine", engine, "--no-async-scheduling")
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: --async-scheduling/--no-async-scheduling are vLLM's: {engine} is priced with its own scheduler;"
        " leave them out, or use --engine vllm"
    )


def without_the_flag(result: dict) -> dict:
    """``result`` with what the flag sets outright taken out: the launch lines and ``async_scheduling`` itself."""
    text = json.dumps({key: value for key, value in result.items() if key not in ("launch", "deployment")})
    return json.loads(text.replace('"async_scheduling": false', '"async_scheduling": null'))


GPT_OSS_DISAGGREGATED = ("plan", "gpt-oss-20b", "--target", "2xh100", "--disaggregated", "--closed-form", "--isl",
                         "32000", "--osl", "768")  # fmt: skip


def test_disaggregated_workers_carry_it_and_a_decode_worker_admits_by_hand(cli):
    """gpt-oss-20b at 32,768 tokens, vLLM's latest: a group of 12 full layers, 32,768 / 16 = 2,048 blocks a request,
    and one of 12 sliding ones (window 128), where a newcomer asks cdiv(127 + 2 x 8,192, 16) + 1 = 1,033 blocks (off:
    cdiv(127 + 8,192, 16) + 1 = 521) and a decoding request holds cdiv(127, 16) + 1 = 9. The decode worker of tp 1
    holds the pool `mha kv` sizes at that context (the flag leaves the pool alone) and admits while a newcomer's ask
    fits beside the decoding ones (``core.engine.window_blocks``): 1 + (blocks - ask) // 2,057, 71 either way (the
    start-up sizer's blocks, pool // ask, gave 47 and 57). Every vLLM worker's line says --no-async-scheduling;
    SGLang's none."""
    pool = cli.json("kv", "gpt-oss-20b", "--target", "h100-sxm", "--seq", "32768")["engine"]["kv_blocks"]
    on, off = cli.json(*GPT_OSS_DISAGGREGATED), cli.json(*GPT_OSS_DISAGGREGATED, "--no-async-scheduling")
    admitted = [next(d["admitted"] for d in plan["decode"] if (d["tp"], d["dp"]) == (1, 1)) for plan in (on, off)]
    held = 2048 + 9
    assert admitted == [1 + (pool - 2048 - 1033) // held, 1 + (pool - 2048 - 521) // held] == [71, 71]
    assert [pool // (2048 + 1033), pool // (2048 + 521)] == [47, 57]  # the sizer's count, the rule before
    assert "async" not in on["launch"]["vllm"]
    assert off["launch"]["vllm"].splitlines()[0] == (
        "CUDA_VISIBLE_DEVICES=0 VLLM_NIXL_SIDE_CHANNEL_PORT=5600 vllm serve openai/gpt-oss-20b --port 8100"
        " --tensor-parallel-size 1 --max-model-len 32768 --gpu-memory-utilization 0.9 --max-num-batched-tokens 8192"
        """ --no-async-scheduling --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'"""
    )
    workers = off["launch"]["vllm"].splitlines()[:-1]  # the last line: the proxy, which schedules nothing
    assert workers and all("--no-async-scheduling" in shlex.split(line) for line in workers)
    assert "async" not in off["launch"]["sglang"]


def test_check_takes_it_and_a_full_attention_model_moves_no_figure(cli):
    """Gemma-3-27B as `mha kv` prices it (test_off_reserves_one_step_for_the_sliding_groups_by_hand): 4,026,531,840 B
    a request less; Llama-3-8B has no sliding layer, so nothing it is judged by moves."""
    gemma = ("check", "gemma-3-27b", "--target", "h100-sxm", "--seq", "32768", "--max-num-batched-tokens", "8192",
             "--engine", "vllm@0.29.0")  # fmt: skip
    on, off = cli.json(*gemma)["engine"], cli.json(*gemma, "--no-async-scheduling")["engine"]
    assert on["kv_bytes_per_request"] - off["kv_bytes_per_request"] == 4_026_531_840
    assert off["async_scheduling"] is False
    llama = ("check", "llama-3-8b", "--target", "h100-sxm", "--engine", "vllm@0.29.0")
    assert without_the_flag(cli.json(*llama, "--no-async-scheduling")) == without_the_flag(cli.json(*llama))
    refused = cli.run("check", "llama-3-8b", "--target", "h100-sxm", "--engine", "sglang", "--async-scheduling")
    assert refused.exit_code == 2 and "--no-async-scheduling are vLLM's: sglang" in refused.output


RECOMMEND = ("recommend", "--params", "8B", "--seq", "64k", "--target", "h100-sxm", "--priority", "inference",
             "--batch", "8")  # fmt: skip


def test_recommend_takes_it_by_hand_and_writes_it_in_the_header(cli, tmp_path):
    """The design (32 layers, 27 sliding of window 1,024, 8 KV heads of 128: 4,096 B a token a layer) is paged in
    groups of 5 layers, 6 of them sliding; off, each sliding group holds 8,192 / 16 = 512 blocks of 16 tokens a request
    fewer: 6 x 512 x 16 x 5 x 4,096 B = 1,006,632,960 B. --out's header repeats the switch as typed."""
    on, off = cli.json(*RECOMMEND), cli.json(*RECOMMEND, "--no-async-scheduling")
    assert on["model"] == off["model"] and off["model"]["layer_types"].count("sliding_attention") == 27
    assert [g["blocks_per_request"] for g in on["memory"]["engine"]["groups"]][:2] == [1089, 1089]
    assert [g["blocks_per_request"] for g in off["memory"]["engine"]["groups"]][:2] == [577, 577]
    saved = on["memory"]["engine"]["kv_bytes_per_request"] - off["memory"]["engine"]["kv_bytes_per_request"]
    assert saved == 6 * 512 * 16 * 5 * 4096 == 1_006_632_960
    out = tmp_path / "design.yaml"
    assert cli.run(*RECOMMEND, "--no-async-scheduling", "--out", str(out)).exit_code == 0
    text = out.read_text()
    assert text.splitlines()[0].endswith("--priority inference --no-async-scheduling --out " + str(out))
    assert "  async_scheduling: false" in text.splitlines()
    refused = cli.run(*RECOMMEND, "--engine", "vllm@0.9.2", "--async-scheduling")
    assert refused.exit_code == 2 and refused.output.strip().splitlines()[-1] == (
        "error: --async-scheduling sets vLLM's --async-scheduling (first in 0.10.0), which vLLM 0.9.2 lacks: drop it"
        " or use --engine vllm@0.10.0 or later"
    )


def test_calibrate_from_takes_it_as_the_servers_setting(cli):
    """A run replayed on SGLang with vLLM's switch: refused in one line before anything is fitted."""
    runs = REPO / "benchmarks" / "vllm_cpu" / "results" / "tiny-llama_c1_i128_o64.json"
    model = REPO / "benchmarks" / "vllm_cpu" / "models" / "tiny-llama" / "config.json"
    refused = cli.run("calibrate", "--from", str(runs), "--model", str(model), "--target", "cpu", "--engine", "sglang",
                      "--no-async-scheduling")  # fmt: skip
    assert refused.exit_code == 2 and refused.output.strip() == (
        "error: --async-scheduling/--no-async-scheduling are vLLM's: sglang is priced with its own scheduler; leave"
        " them out, or use --engine vllm"
    )


@pytest.mark.parametrize(
    ("engine", "refused"),
    [("vllm@0.10.0", True), ("vllm@0.11.0", True), ("vllm@0.14", True), ("vllm@0.14.1", True),
     ("vllm@0.15.0", False), ("vllm-v1", False), ("vllm", False)],
)  # fmt: skip
def test_async_scheduling_at_pp_2_by_release(engine, refused):
    """0.10.0-0.11.0 (engine/arg_utils.py) and 0.11.1-0.14.1 (config/vllm.py VllmConfig.__post_init__) raise "Async
    scheduling is not (yet) ... pipeline(-|_)parallel(-|_)size > 1"; 0.15.0 has no such check (read in the wheels).
    Untyped, a generation means its latest: vllm-v1's 0.20, vllm's the newest."""
    from mha_cli.core.engine.async_pipeline import async_pipeline_refusal
    from mha_cli.core.engine.generations import generation_of, typed_release

    chosen = generation_of(engine)
    args = (chosen.engine, chosen.id, typed_release(engine))
    assert (async_pipeline_refusal(*args, True, 2) is not None) is refused
    assert async_pipeline_refusal(*args, True, 1) is None
    assert async_pipeline_refusal(*args, False, 2) is None and async_pipeline_refusal(*args, None, 4) is None


def test_a_pinned_pp_is_refused_and_a_search_leaves_the_layout_out(cli):
    """vLLM 0.12.0 on two H100s with --async-scheduling: --pp 2 asked is refused in one line, exit 2; the search
    prices tp 2 and tp 1 x 2 replicas and leaves tp 1 x pp 2 out, saying why."""
    plan = ("plan", "llama-3-8b", "--target", "2xh100-sxm", "--engine", "vllm@0.12.0", "--async-scheduling",
            "--concurrency", "4", "--closed-form")  # fmt: skip
    refused = cli.run(*plan, "--pp", "2")
    why = (
        "--async-scheduling at --pp 2: vLLM 0.12.0 refuses async scheduling with pipeline_parallel_size > 1"
        " (0.10.0-0.14.x): leave out --async-scheduling (or --pp), or use --engine vllm@0.15.0 or later"
    )
    assert refused.exit_code == 2 and refused.output.strip().splitlines()[-1] == f"error: {why}"
    layouts = cli.json(*plan)["layouts"]
    assert f"tp 1 x pp 2 x 1 replica(s): left out ({why})" in layouts
    assert sum("left out" in line for line in layouts) == 1


def sliding_blocks(cli, engine: str, *flags: str) -> tuple[int, int]:
    """gpt-oss-20b in two stages of 12 layers (6 sliding of window 128, 6 full) at 32,768 tokens, 8,192 a step:
    the blocks a request takes in the limiting stage's sliding and full groups."""
    plan = cli.json("plan", "gpt-oss-20b", "--target", "2xh100-sxm", "--pp", "2", "--engine", engine, "--isl", "32000",
                    "--osl", "768", "--concurrency", "1", "--closed-form", *flags)  # fmt: skip
    blocks = {g["kind"]: g["blocks_per_request"] for g in plan["memory"]["engine"]["groups"]}
    return blocks["sliding"], blocks["full"]


def test_pipeline_stages_keep_more_batches_in_flight_by_hand(cli):
    """``VllmConfig.max_concurrent_batches`` at pp 2 (config/vllm.py, 0.26.0-0.33.0): 0.29.0 runs every model on Model
    Runner V2, async scheduling on: 2 + 1 = 3 batches, cdiv(127 + 3 x 8,192, 16) + 1 = 1,545 sliding blocks (1,033
    before this rule: 2 batches); off, pp = 2 batches: cdiv(127 + 2 x 8,192, 16) + 1 = 1,033 (521 before: 1 batch).
    0.28.0 keeps an MoE it does not list (gpt-oss) on the V1 runner, whose async scheduling at pp > 1 keeps pp = 2
    batches: 1,033 either way. Full groups: 32,768 / 16 = 2,048."""
    assert -(-(127 + 3 * 8192) // 16) + 1 == 1545 and -(-(127 + 2 * 8192) // 16) + 1 == 1033
    assert sliding_blocks(cli, "vllm@0.29.0") == (1545, 2048)
    assert sliding_blocks(cli, "vllm@0.29.0", "--no-async-scheduling") == (1033, 2048)
    assert sliding_blocks(cli, "vllm@0.28.0") == (1033, 2048)
