"""The search's launch notes: those gathered before the multi-node lines are kept, and a release past the newest one
read says whose flags its line was checked against (``core.cost.search.launch_commands``, ``release_lines``)."""

from __future__ import annotations

import json
from pathlib import Path

V3 = "deepseek-v3"
DEEPEP_NOTE = "vLLM before 0.11.1 takes DeepEP from the environment"


def test_a_multi_node_pick_keeps_the_deepep_note(cli):
    """DP attention with DeepEP over 2 x 8 H200 priced by vLLM V1: the note on its variable (before 0.11.1) stays
    beside the node notes; the control, one node, has it too."""
    args = ("plan", V3, "--isl", "1024", "--osl", "1024", "--closed-form", "--moe-a2a-backend", "deepep",
            "--engine", "vllm@0.12")  # fmt: skip
    found = cli.json(*args, "--target", "2x8xh200", "--concurrency", "2048")
    pick = found["candidates"][found["chosen"]]
    assert pick["nodes"]["nodes"] == 2 and pick["deployment"]["moe_a2a_backend"] == "deepep"
    assert "vllm_workers on node 1" in found["launch_note"]  # the node notes
    assert DEEPEP_NOTE in found["launch_note"]
    one_node = cli.json(*args, "--target", "8xh200", "--concurrency", "1024")
    assert one_node["candidates"][one_node["chosen"]]["nodes"] is None and DEEPEP_NOTE in one_node["launch_note"]


def test_a_release_without_deepep_is_refused_it(cli):
    """Trial 381 #3, review 384 #6: vLLM 0.9.0 has VLLM_ALL2ALL_BACKEND but no deepep value (from 0.9.1,
    core.engine.flags): it was priced with DeepEP and told to set a value it lacks; the control, 0.10.0, keeps the
    variable's note."""
    args = ("plan", V3, "--target", "8xh200", "--dp", "8", "--moe-a2a-backend", "deepep", "--closed-form", "--engine")
    refused = cli.run(*args, "vllm@0.9.0")
    assert refused.exit_code == 2 and "vLLM 0.9.0 has no DeepEP backend" in refused.stderr
    assert "Traceback" not in refused.output
    assert DEEPEP_NOTE in cli.json(*args, "vllm@0.10.0")["launch_note"]


def test_a_release_past_the_newest_read_says_its_flags_are_the_newest_reads(cli):
    args = ("plan", "llama-3.1-8b", "--target", "h100", "--closed-form", "--engine")
    for typed in ("vllm@0.99", "vllm@0.99.1"):
        note = cli.json(*args, typed)["launch_note"]
        assert "with the flags of 0.34.0, the newest release read" in note
        assert "give the exact release" not in note  # no release past 0.34.0 was read: an exact one checks no more
    read = cli.json(*args, "vllm@0.12")["launch_note"]  # the control: a release read, its patch not given
    assert "give the exact release, as vllm@0.12.N, to check its flags" in read and "newest release read" not in read


def test_an_engine_that_never_registered_the_model_gets_no_line(cli):
    """SGLang registered no Falcon class in any release read (0.1.10 to 0.5.23): a vLLM plan of falcon-7b writes no
    SGLang line that would not start, and says why; the control, llama-3.1-8b, keeps it."""
    args = ("--target", "h100", "--isl", "1024", "--osl", "256", "--closed-form")
    falcon = cli.json("plan", "tests/fixtures/hf_configs/falcon-7b.json", *args)
    assert set(falcon["launch"]) == {"vllm"}
    assert (
        "sglang: no line: no SGLang release read (0.1.10 to 0.5.23) registers FalconForCausalLM"
        in (falcon["launch_note"])
    )
    llama = cli.json("plan", "llama-3.1-8b", *args)
    assert set(llama["launch"]) == {"vllm", "sglang"} and "no line" not in (llama["launch_note"] or "")


def test_a_vllm_line_beside_another_engines_plan_says_it_is_not_priced(cli):
    """Trial 339 #5: priced on SGLang, the vllm line carries SGLang's cap and its chunk plus the cap as its budget,
    and nothing said it was not the deployment priced. The control: priced on vLLM, no such note."""
    args = ("plan", "llama-3.1-8b", "--target", "h100", "--isl", "2000", "--osl", "500", "--closed-form", "--engine")
    for engine, name in (("sglang", "SGLang"), ("trtllm", "TensorRT-LLM")):
        found = cli.json(*args, engine)
        assert "vllm" in found["launch"]
        assert (
            f"the vllm line is not priced: it starts this layout with the requests {name} was priced at"
            in (found["launch_note"])
        )
        said = (
            "the prefill chunk plus one decode token a request, as vLLM's one budget takes both" in found["launch_note"]
        )
        assert said == (engine == "sglang")  # trial 344 #5: the budget SGLang's line gives vLLM's, said how
    assert "the vllm line is not priced" not in (cli.json(*args, "vllm")["launch_note"] or "")


def test_a_vllm_line_vllm_would_not_start_is_left_out_beside_another_engines_plan(cli):
    """Trial 347 #1: priced on SGLang 0.4.6, Llama-3.1-70B in fp8 at tp 1 over 8 x H100 (72.7 GB of weights a GPU)
    got a vllm line said to start, where vLLM at its 0.9 default has 71.3 GB: `--engine vllm` refuses that layout.
    The line is left out, its note quoting vLLM's error; the control: the 8B's vllm line beside SGLang is kept."""
    args = ("plan", "--target", "8xh100", "--isl", "2048", "--osl", "256", "--ttft-ms", "1000", "--itl-ms", "40")
    big = cli.json(args[0], "llama-3.1-70b", *args[1:], "--engine", "sglang@0.4.6", "--kv-dtype", "fp8",
                   "--weight-dtype", "fp8")  # fmt: skip
    pick = big["candidates"][big["chosen"]]["deployment"]
    assert (pick["tp"], pick["replicas"]) == (1, 8)
    assert set(big["launch"]) == {"sglang"}
    assert "vllm: no line: vLLM would not start it as written (--max-model-len 2304," in big["launch_note"]
    assert "utilisation 0.9: ValueError: No available memory" in big["launch_note"]
    small = cli.json(args[0], "llama-3.1-8b", *args[1:], "--engine", "sglang")
    assert "vllm" in small["launch"] and "vLLM would not start" not in (small["launch_note"] or "")
    # review 349 #1: the line's own --max-model-len, not the requests' length, is what vLLM must serve
    longer = cli.json("plan", "llama-3.1-8b", "--target", "rtx-4090", "--isl", "2048", "--osl", "256", "--engine",
                      "sglang", "--max-model-len", "131072")  # fmt: skip
    assert set(longer["launch"]) == {"sglang"} and "(--max-model-len 131072," in longer["launch_note"]


def test_online_fp8_says_the_lines_read_the_full_width_checkpoint(cli, tmp_path):
    """Trial 390 #6: Qwen3-235B in fp8 from its bf16 checkpoint is priced as vLLM's online quantisation, its lines
    pointing at the bf16 repository, and nothing said a published FP8 checkpoint loads as stored. Said now; not for a
    checkpoint stored in fp8 and asked as fp8 (review 396 #7: Llama-3.1-8B's config with an fp8 quantization_config,
    the control), which the lines load as it is."""
    said = "quantise the checkpoint to fp8 as they load it"
    online = cli.json("plan", "qwen3-235b-a22b-2507", "--weight-dtype", "fp8", "--target", "8xh100", "--tp", "8",
                      "--closed-form")  # fmt: skip
    assert said in online["launch_note"]
    config = json.loads(Path("tests/fixtures/hf_configs/llama-3.1-8b.json").read_text())
    checkpoint = tmp_path / "fp8.json"
    checkpoint.write_text(
        json.dumps(config | {"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}})
    )
    stored = cli.json(
        "plan", str(checkpoint), "--weight-dtype", "fp8", "--target", "h100", "--tp", "1", "--closed-form"
    )
    assert "to fp8 as" not in (stored["launch_note"] or "")


def test_trtllm_with_shared_prefixes_and_no_host_pool_plans(cli):
    """Trial 394 #1: TensorRT-LLM with --shared-prefixes and no --kv-offload-gib crashed (exit 70) writing the host
    pool's note for a plan without one; it plans, and no host-pool note is written; with a host pool the note names
    its extra_llm_api_options key (the control)."""
    args = ("plan", "llama-3.1-70b", "--target", "8xh100", "--tp", "8", "--concurrency", "32", "--isl", "8192",
            "--osl", "256", "--shared-prefix", "6144", "--shared-prefixes", "100", "--engine", "trtllm",
            "--closed-form")  # fmt: skip
    plain = cli.json(*args)
    assert "takes the host pool" not in (plain["launch_note"] or "")
    hosted = cli.json(*args, "--kv-offload-gib", "100")
    assert "trtllm-serve takes the host pool in its --extra_llm_api_options file" in hosted["launch_note"]


def test_a_vllm_line_on_an_amd_gpu_says_aiter_is_off_as_written(cli):
    """Trial 402 #5: no AMD plan said that its vLLM line leaves AITER off (vLLM's default, unlike AMD's recipes),
    nor that the step costs model no AITER kernel. On an MI300X the note says both; on an H100 it is absent (the
    control)."""
    from mha_cli.core.cost.search import AITER_OFF

    args = ("plan", "llama-3.1-8b", "--tp", "1", "--closed-form", "--concurrency", "8")
    amd = cli.json(*args, "--target", "mi300x")
    assert "VLLM_ROCM_USE_AITER" not in amd["launch"]["vllm"] and AITER_OFF in amd["launch_note"]
    assert AITER_OFF not in (cli.json(*args, "--target", "h100")["launch_note"] or "")  # review 405 #8
