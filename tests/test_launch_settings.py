"""The pool and block size a plan priced are on its launch lines (``core.cost.launch_settings``), or a note says why not.

Bytes by hand: 20 GiB = 20 x 2**30 = 21,474,836,480 B (vLLM's --kv-cache-memory-bytes is per GPU, in bytes)."""

from __future__ import annotations

import shlex

import pytest

from tests.conftest import reference_hf_config

SEARCH = ("plan", "llama-3-8b", "--target", "h100", "--closed-form")
CPU = ("plan", "llama-3.2-1b", "--target", "cpu", "--profile", "h100-sxm-prior", "--closed-form")

VLLM_LINE_NOT_PRICED = (
    "the vllm line is not priced: it starts this layout with the requests TensorRT-LLM was priced at (and its step"
    " budget), in a pool vLLM sizes by its own rules (--engine vllm prices it)"
)
"""The one note beside a TensorRT-LLM plan's lines (trial 339 #5)."""


def value(line: str, flag: str) -> str | None:
    words = shlex.split(line)
    return words[words.index(flag) + 1] if flag in words else None


def test_the_pool_and_block_size_priced_are_on_the_lines(cli):
    found = cli.json(*SEARCH, "--kv-cache-gib", "20", "--block-size", "32")
    pick = found["candidates"][found["chosen"]]["memory"]["engine"]
    assert pick["available_kv_bytes"] == 21_474_836_480 and pick["block_size"] == 32  # what was priced
    assert value(found["launch"]["vllm"], "--kv-cache-memory-bytes") == "21474836480"
    assert value(found["launch"]["vllm"], "--block-size") == "32"
    assert value(found["launch"]["sglang"], "--page-size") == "32"
    assert "--kv-cache-memory-bytes" not in found["launch"]["sglang"]
    assert "the sglang line does not set the pool priced" in found["launch_note"]


def test_without_them_the_lines_keep_the_engines_defaults(cli):
    found = cli.json(*SEARCH)
    for flag in ("--kv-cache-memory-bytes", "--block-size", "--page-size"):
        assert all(flag not in line for line in found["launch"].values())
    assert "pool priced" not in (found["launch_note"] or "")


def test_vllms_cpu_backend_takes_the_pool_in_whole_gib(cli):
    whole = cli.json(*CPU, "--kv-cache-gib", "4")
    assert shlex.split(whole["launch"]["vllm"])[0] == "VLLM_CPU_KVCACHE_SPACE=4"
    assert "--kv-cache-memory-bytes" not in whole["launch"]["vllm"]
    part = cli.json(*CPU, "--kv-cache-gib", "2.5")
    assert "VLLM_CPU_KVCACHE_SPACE" not in part["launch"]["vllm"]
    assert "takes its pool in whole GiB" in part["launch_note"]


def test_trtllm_serve_has_no_block_flag_and_a_note_says_where_it_goes(cli):
    found = cli.json(*SEARCH, "--engine", "trtllm", "--block-size", "64")
    assert "64" not in shlex.split(found["launch"]["trtllm"])
    assert "kv_cache_config.tokens_per_block: 64" in found["launch_note"]


def test_a_release_without_the_flag_is_refused_and_its_first_gets_the_line(cli):
    """--kv-cache-memory-bytes is first in vLLM 0.10.2 (read in the wheels: 0.10.1.1 lacks it,
    outputs/engine_flags/first_reads.json): --kv-cache-gib is refused for 0.10.1 (the pool priced could not be
    launched), and 0.10.2's line sets it."""
    refused = cli.run(*SEARCH, "--engine", "vllm@0.10.1", "--kv-cache-gib", "20")
    assert refused.exit_code == 2 and len(refused.output.strip().splitlines()) == 1
    assert "--kv-cache-memory-bytes (first in 0.10.2), which vLLM 0.10.1 lacks" in refused.output
    found = cli.json(*SEARCH, "--engine", "vllm@0.10.2", "--kv-cache-gib", "20")
    assert value(found["launch"]["vllm"], "--kv-cache-memory-bytes") == "21474836480"
    typed = cli.run(*SEARCH, "--engine", "vllm@0.10.1.1", "--kv-cache-gib", "20")  # shown as typed, not .post1
    assert typed.exit_code == 2 and "which vLLM 0.10.1.1 lacks" in typed.output
    old_cpu = ("plan", "llama-2-7b", *CPU[2:])  # a model 0.4 loads (Llama 3.2's llama3 RoPE scaling is from 0.5.3)
    cpu = cli.run(*old_cpu, "--engine", "vllm@0.4.0", "--kv-cache-gib", "4")  # its CPU backend came in 0.4.1
    assert cpu.exit_code == 2 and "VLLM_CPU_KVCACHE_SPACE (first in 0.4.1), which vLLM 0.4.0 lacks" in cpu.output


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_disaggregated_workers_carry_the_block_size(cli, engine):
    found = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--closed-form",
                     "--block-size", "32")  # fmt: skip
    flag = "--block-size" if engine == "vllm" else "--page-size"
    servers = found["launch"][engine].splitlines()[:-1]  # the last line: the proxy or router
    assert servers and all(value(line, flag) == "32" for line in servers)


def test_disaggregated_workers_ask_for_the_e5m2_cache_priced(cli):
    found = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--closed-form",
                     "--kv-cache-dtype", "fp8_e5m2")  # fmt: skip
    for engine in ("vllm", "sglang"):
        servers = found["launch"][engine].splitlines()[:-1]  # the last line: the proxy or router
        assert servers and all(value(line, "--kv-cache-dtype") == "fp8_e5m2" for line in servers)


def test_trtllm_takes_the_step_budget_on_its_line_and_the_cache_format_in_a_note(cli):
    found = cli.json(*SEARCH, "--engine", "trtllm", "--max-num-batched-tokens", "4096", "--kv-dtype", "fp8")
    assert value(found["launch"]["trtllm"], "--max_num_tokens") == "4096"
    assert "kv_cache_config.dtype: fp8" in found["launch_note"]
    plain = cli.json(*SEARCH, "--engine", "trtllm")  # trtllm-serve's own default (8,192) priced: nothing to add
    assert "--max_num_tokens" not in plain["launch"]["trtllm"] and plain["launch_note"] == VLLM_LINE_NOT_PRICED
    no_reuse = cli.json(*SEARCH, "--engine", "trtllm", "--no-enable-prefix-caching")  # priced off: said how (trial 285)
    assert "kv_cache_config.enable_block_reuse: false" in no_reuse["launch_note"]


def test_a_format_a_line_cannot_write_is_a_note(cli):
    int8 = cli.json(*SEARCH, "--engine", "trtllm-cpp", "--kv-dtype", "int8")  # its C++ engine's; vLLM, SGLang lack it
    assert "vLLM has no int8 cache" in int8["launch_note"] and "SGLang has no int8 cache" in int8["launch_note"]
    # trtllm-serve's kv_cache_config.dtype takes auto or fp8: int8 is only warned about (launch_settings.TRTLLM_INT8_KV)
    assert "kv_cache_config.dtype: int8" not in int8["launch_note"]
    assert (
        "the trtllm line runs its default KV cache, not the int8 one priced: trtllm-serve's kv_cache_config.dtype"
        " takes auto or fp8 (int8 is only warned about, not applied)"
    ) in int8["launch_note"]
    int4 = cli.json(*SEARCH, "--weight-dtype", "int4")  # no flag turns a bf16 checkpoint into int4 weights
    assert "need a checkpoint stored in int4" in int4["launch_note"]
    assert all("int4" not in line for line in int4["launch"].values())
    fp8 = cli.json(*SEARCH, "--weight-dtype", "fp8")  # --quantization fp8 does (fp8_per_tensor from 0.31): the note
    assert value(fp8["launch"]["vllm"], "--quantization") == "fp8_per_tensor"  # says only that it reads full width
    assert fp8["launch_note"].startswith("the vLLM and SGLang lines quantise the checkpoint to fp8 as they load it")


@pytest.mark.parametrize(("model", "stored"), [("gpt-oss-20b", "mxfp4"), ("deepseek-v3", "fp8-block")])
def test_a_checkpoint_stored_in_the_format_priced_needs_no_note(cli, model, stored):
    """The format came from the checkpoint's own quantization_config: the lines load it as priced; another format
    asked of the same checkpoint still gets the note."""
    config = str(reference_hf_config(model))
    own = cli.json("plan", config, "--target", "8xh200", "--closed-form")
    assert "need a checkpoint stored in" not in (own["launch_note"] or "")
    assert cli.json("kv", config)["deployment"]["checkpoint_format"] == stored  # from its quantization_config
    other = cli.json("plan", config, "--target", "8xh200", "--closed-form", "--weight-dtype", "nvfp4")
    assert "the nvfp4 weights priced need a checkpoint stored in nvfp4" in other["launch_note"]


def test_a_kv_format_the_engine_lacks_is_refused_by_plan(cli):
    """int4: no engine here offers an int4 KV cache (``core.engine.plan.KV_FORMATS``); trtllm-serve's options file
    takes ``kv_cache_config.dtype`` auto, fp8 or nvfp4 (TensorRT-LLM PR #16240's KvCacheConfig.dtype docstring).
    plan priced the format with a note that its line runs the default cache, so a search picked layouts on capacity
    the engine cannot reach (newuser trial 248): it is refused, and `mha kv` prices the format's bytes."""
    refused = cli.run(*SEARCH, "--engine", "trtllm", "--kv-dtype", "int4")
    assert refused.exit_code == 2 and "TensorRT-LLM has no int4 KV cache" in refused.output
    int8 = cli.run(*SEARCH, "--kv-dtype", "int8")  # vLLM's lines run no int8 cache either
    assert int8.exit_code == 2 and "mha does not price" in int8.output  # vLLM's int8_per_token_head (trial 359 #6)
    assert cli.run("kv", "llama-3-8b", "--target", "h100", "--kv-dtype", "int4").exit_code == 0


def test_an_fp32_cache_needs_the_model_run_in_float32(cli):
    """vLLM's and SGLang's caches follow the model's dtype: the lines asked for nothing while the plan priced a pool
    of half the tokens (found by newuser trial 232); then a note said to add --dtype float32, which doubles the
    weights the plan had priced in bf16 (trial 359 #2). An fp32 cache is refused beside other weights; with fp32
    weights the search's lines write --dtype float32 and need no note."""
    refused = cli.run(*SEARCH, "--engine", "sglang", "--kv-dtype", "fp32")
    assert refused.exit_code == 2 and "SGLang keeps its KV cache in the model's dtype" in refused.output
    found = cli.json(*SEARCH, "--engine", "sglang", "--kv-dtype", "fp32", "--weight-dtype", "fp32")
    assert value(found["launch"]["vllm"], "--kv-cache-dtype") is None
    assert value(found["launch"]["vllm"], "--dtype") == value(found["launch"]["sglang"], "--dtype") == "float32"
    assert "add --dtype float32" not in (found["launch_note"] or "")
    assert "float32" not in (cli.json(*SEARCH, "--engine", "sglang")["launch_note"] or "")


def test_sparse_mlas_fp8_ds_mla_cache_is_asked_of_vllm_as_fp8(cli):
    """vLLM turns any fp8 cache of a sparse-MLA model into fp8_ds_mla (``DeepseekV32ForCausalLM.
    verify_and_update_config``, ``launch_settings.VLLM_FP8_KV``): its line asks ``--kv-cache-dtype fp8``, not the
    bf16 cache it would run without the flag; SGLang stores its fp8 in that layout too (``NSATokenToKVPool``'s
    ``kv_cache_dim``), so its line asks ``--kv-cache-dtype fp8_e4m3`` (it had said SGLang has no such cache)."""
    config = str(reference_hf_config("deepseek-v3.2-exp"))
    # 1,024 tokens a rank: a chunk SGLang's reserve starts under DP attention (8 x 1,024)
    found = cli.json("plan", config, "--target", "8xh200", "--closed-form", "--kv-cache-dtype", "fp8_ds_mla",
                     "--weight-dtype", "fp8", "--max-num-batched-tokens", "1024")  # fmt: skip
    assert value(found["launch"]["vllm"], "--kv-cache-dtype") == "fp8"
    assert "vLLM has no fp8_ds_mla cache" not in found["launch_note"]
    assert value(found["launch"]["sglang"], "--kv-cache-dtype") == "fp8_e4m3"
    assert "SGLang has no fp8_ds_mla cache" not in found["launch_note"]


def test_fp8_weights_asked_of_a_bf16_checkpoint_need_an_fp8_checkpoint_for_trtllm_serve(cli):
    # vLLM and SGLang quantise on loading (--quantization fp8); TensorRT-LLM runs pre-quantised checkpoints only
    found = cli.json(*SEARCH, "--engine", "trtllm", "--weight-dtype", "fp8")
    assert value(found["launch"]["vllm"], "--quantization") == "fp8_per_tensor"  # the latest vLLM's name
    assert "fp8" not in shlex.split(found["launch"]["trtllm"])
    assert "the trtllm line loads the checkpoint as stored" in found["launch_note"]
    assert "vllm line loads" not in found["launch_note"] and "sglang line loads" not in found["launch_note"]
    plain = cli.json(*SEARCH, "--engine", "trtllm")  # bf16 priced, bf16 stored: nothing to say
    assert plain["launch_note"] == VLLM_LINE_NOT_PRICED


def test_trtllm_serve_has_no_data_parallel_flag_so_a_note_says_to_run_one_server_per_replica(cli):
    # 8 x H100: tp 1 x pp 4 x 2 since the 2026-12-03 refit (on 4 x H100 it picked tp 1 x pp 2 x 2 before, pp 4 x 1 now)
    found = cli.json("plan", "llama-3.1-8b", "--target", "8xh100", "--engine", "trtllm", "--closed-form")
    pick = found["candidates"][found["chosen"]]["deployment"]
    assert (pick["tp"], pick["pp"], pick["replicas"]) == (1, 4, 2)
    assert "run the trtllm line once per replica (2 servers)" in found["launch_note"]
    assert "server 1: CUDA_VISIBLE_DEVICES=0,1,2,3; server 2: CUDA_VISIBLE_DEVICES=4,5,6,7" in found["launch_note"]
    one = cli.json("plan", "llama-3.1-8b", "--target", "h100", "--engine", "trtllm", "--closed-form")
    assert one["launch_note"] == VLLM_LINE_NOT_PRICED  # one replica: the line is the whole deployment


def test_the_cpu_gets_no_sglang_line(cli):
    """SGLang is not modelled on the CPU (``--engine sglang --target cpu`` is refused), so no line of it is printed
    there, nor a note about what such a line lacks; a GPU plan keeps it (the control)."""
    found = cli.json(*CPU, "--kv-cache-gib", "4")
    assert list(found["launch"]) == ["vllm"] and "sglang" not in (found["launch_note"] or "")
    assert "sglang" in cli.json(*SEARCH)["launch"]


def test_an_e5m2_cache_keeps_its_encoding_on_every_line(cli):
    """``--kv-cache-dtype fp8_e5m2`` is priced as fp8 (a byte a value) but its lines ask for e5m2: vLLM's ``fp8`` is
    e4m3 (``CacheDType``: fp8 (=fp8_e4m3)) and SGLang's ``fp8_e4m3`` too; both take ``fp8_e5m2``. TensorRT-LLM's fp8
    cache is e4m3 only, and its note says so. Plain fp8 keeps the engines' e4m3 words (the control)."""
    e5m2 = cli.json(*SEARCH, "--kv-cache-dtype", "fp8_e5m2")
    assert value(e5m2["launch"]["vllm"], "--kv-cache-dtype") == "fp8_e5m2"
    assert value(e5m2["launch"]["sglang"], "--kv-cache-dtype") == "fp8_e5m2"
    fp8 = cli.json(*SEARCH, "--kv-cache-dtype", "fp8")
    assert value(fp8["launch"]["vllm"], "--kv-cache-dtype") == "fp8"
    assert value(fp8["launch"]["sglang"], "--kv-cache-dtype") == "fp8_e4m3"
    assert e5m2["candidates"] == fp8["candidates"]  # priced alike
    trtllm = cli.json(*SEARCH, "--engine", "trtllm", "--kv-cache-dtype", "fp8_e5m2")
    note = "TensorRT-LLM's fp8 cache is e4m3 (kv_cache_config.dtype takes auto or fp8): it has no e5m2"
    assert note in trtllm["launch_note"]


def test_a_kv_format_given_later_drops_the_e5m2_encoding_of_the_config_file(tmp_path):
    """The config file's e5m2 cache (``kv_fp8_variant``) goes with its format: ``--kv-dtype bf16`` over it is a bf16
    cache, ``--kv-dtype fp8`` plain fp8 (e4m3); kept, it round-trips through the file as written."""
    from mha_cli.core.deployment import merge_deployment

    base = merge_deployment(None, kv_dtype="fp8_e5m2")
    assert (base.kv_dtype, base.kv_fp8_variant) == ("fp8", "e5m2")
    assert base.model_dump(exclude_unset=True)["kv_fp8_variant"] == "e5m2"
    assert merge_deployment(base, kv_dtype="bf16").kv_dtype == "bf16"
    assert merge_deployment(base, kv_dtype="fp8").kv_fp8_variant == "e4m3"
    assert merge_deployment(base, batch=4).kv_fp8_variant == "e5m2"


def test_a_pinned_plan_carries_launch_note_as_a_search_does(cli):
    """plan.md lists ``launch_note`` among a pinned plan's keys, but ``--tp 1 --json`` left it out where there was
    nothing to say, so ``d["launch_note"]`` raised KeyError (found by newuser trial 251): null now, as a search's."""
    pinned = cli.json("plan", "llama-3.1-8b", "--target", "b200", "--tp", "1", "--closed-form")
    assert "launch_note" in pinned and pinned["launch_note"] is None and pinned["launch"]
    searched = cli.json("plan", "llama-3.1-8b", "--target", "b200", "--closed-form")
    assert searched["launch_note"] is None and all("launch_note" not in row for row in searched["layouts"])


def test_moe_replicas_holding_their_own_experts_run_every_line_once_each(cli):
    """Qwen3-30B-A3B under --engine trtllm at tp 2 on 8 GPUs is 4 replicas each holding its own experts: the vllm line
    says --data-parallel-size 1 (vLLM's data parallelism would spread the experts over all 8 GPUs, its MoE layers
    taking dp x tp as one group, not the layout priced), so as printed it served 2 of the 8 GPUs with no word (found
    by newuser trial 254); SGLang's --dp-size starts independent copies, as priced (the review of this change). Over
    two nodes each node runs 4 vllm and 4 trtllm servers. A dense model's replicas keep vLLM's
    --data-parallel-size."""
    config = str(reference_hf_config("qwen3-30b-a3b"))
    moe = cli.json("plan", config, "--target", "8xh100", "--tp", "2", "--concurrency", "64", "--engine", "trtllm",
                   "--closed-form")  # fmt: skip
    assert value(moe["launch"]["vllm"], "--data-parallel-size") == "1"
    assert value(moe["launch"]["sglang"], "--dp-size") == "4"
    assert (
        "run the vllm and trtllm lines once per replica (4 servers), each on its own GPUs (server 1:"
        " CUDA_VISIBLE_DEVICES=0,1;"
    ) in moe["launch_note"]
    nodes = cli.json("plan", config, "--target", "2x8xh100", "--tp", "2", "--concurrency", "64", "--engine", "trtllm",
                     "--closed-form")  # fmt: skip
    assert value(nodes["launch"]["vllm"], "--data-parallel-size") == "1"
    for engine in ("vllm", "trtllm"):
        assert f"{engine}: the line once per replica, 4 servers on each of the 2 nodes" in nodes["launch_note"]
    dense = cli.json("plan", "llama-3.1-70b", "--target", "8xh100", "--tp", "4", "--engine", "trtllm", "--closed-form")
    assert value(dense["launch"]["vllm"], "--data-parallel-size") == "2"
    assert "run the trtllm line once per replica (2 servers)" in dense["launch_note"]


@pytest.mark.parametrize(("target", "tokens"), [("tpu-v6e", 1024), ("tpu-v5e", 512), ("tpu-v5p", 256)])
def test_a_tpu_takes_vllms_chip_step_budget(cli, target, tokens):
    """vLLM's get_batch_defaults gives a TPU its chip's max_num_batched_tokens (V6E 1,024, V5E 512, V5P 256 for vllm
    serve; read in the 0.13.0, 0.21.0 and 0.32.0 wheels), where plan wrote a GPU's 2,048 (found by newuser trial
    254); a TPU v4 keeps the GPU tiers."""
    found = cli.json("plan", "llama-3.2-1b", "--target", target, "--tp", "1", "--closed-form")  # a v5e holds 16 GB
    assert value(found["launch"]["vllm"], "--max-num-batched-tokens") == str(tokens)
    assert value(found["launch"]["vllm"], "--max-num-seqs") == "256"  # vLLM reads no memory total on a TPU
    v4 = cli.json("plan", "llama-3.1-8b", "--target", "tpu-v4", "--tp", "1", "--closed-form")
    assert value(v4["launch"]["vllm"], "--max-num-batched-tokens") == "2048"
    older = cli.json("plan", "llama-3.2-1b", "--target", target, "--tp", "1", "--closed-form", "--engine", "vllm@0.8.5")
    assert value(older["launch"]["vllm"], "--max-num-batched-tokens") != str(tokens)  # the TPU branch came in 0.9.0


def test_a_tpu_has_no_sglang_line_and_refuses_sglang(cli):
    """Mainline SGLang has no TPU backend (its TPU page points to SGLang-JAX, a separate engine): a TPU plan printed a
    `sglang.launch_server` line (noted last session) and priced --engine sglang with mainline SGLang's rules."""
    found = cli.json("plan", "llama-3.2-1b", "--target", "tpu-v6e", "--tp", "1", "--closed-form")
    assert list(found["launch"]) == ["vllm"]
    split = cli.json("plan", "llama-3.1-8b", "--target", "8xtpu-v6e", "--isl", "1000", "--osl", "100",
                     "--disaggregated", "--rate", "2")  # fmt: skip
    assert split["launch"] == {}  # no SGLang line (review 263 #2), nor CUDA's vLLM lines (review 265 #9)
    assert split["launch_note"].startswith("no launch line on a TPU: the lines written are CUDA's")
    assert "sglang" in cli.json("plan", "llama-3.2-1b", "--target", "l4", "--tp", "1", "--closed-form")["launch"]
    for command in ("plan", "kv"):
        refused = cli.run(command, "llama-3.2-1b", "--target", "tpu-v6e", "--engine", "sglang")
        assert refused.exit_code == 2, refused.output
        assert refused.output == (
            "error: SGLang runs on TPUs through SGLang-JAX, a separate JAX engine (sgl-project/sglang-jax,"
            " https://docs.sglang.io/platforms/tpu.html) whose memory and launch mha does not model: use --engine vllm"
            " on tpu-v6e\n"
        )


def quantised_llama(tmp_path, quantization_config: dict) -> str:
    """Llama-3-8B's published config.json with ``quantization_config``, written to ``tmp_path``."""
    import json

    config = json.loads(reference_hf_config("llama-3-8b").read_text()) | {"quantization_config": quantization_config}
    path = tmp_path / f"{quantization_config['quant_method']}.json"
    path.write_text(json.dumps(config))
    return str(path)


CT_FP8 = {
    "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"],
                                  "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
                                  "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                                        "dynamic": True, "symmetric": True}}},
}  # fmt: skip
CT_W4A16 = {
    "quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                                     "group_size": 128, "symmetric": True}}},
}  # fmt: skip


@pytest.mark.parametrize(
    "quantization_config",
    [CT_FP8, {"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head"]},
     {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}],
)  # fmt: skip
def test_an_fp8_checkpoint_of_another_method_gets_no_quantization_flag(cli, tmp_path, quantization_config):
    """Trial 352 #1: vLLM reads the method from the checkpoint and refuses ``--quantization fp8`` on a
    compressed-tensors or fbgemm one (ModelOpt's override ignores it): the lines leave the flag out, as kv refuses it."""
    config = quantised_llama(tmp_path, quantization_config)
    deployment = cli.json("kv", config)["deployment"]
    assert deployment["weight_dtype"] == "fp8" and deployment["checkpoint_format"] == "fp8"
    found = cli.json("plan", config, "--target", "h100", "--closed-form")
    assert all("--quantization" not in line for line in found["launch"].values())
    assert "need a checkpoint stored in" not in (found["launch_note"] or "")


def test_fp8_asked_of_an_int4_checkpoint_gets_no_flag_and_a_note(cli, tmp_path):
    """Trial 352 #2: ``--quantization fp8`` on a W4A16 checkpoint is refused by vLLM; the lines load it as stored."""
    found = cli.json("plan", quantised_llama(tmp_path, CT_W4A16), "--target", "h100", "--closed-form",
                     "--weight-dtype", "fp8")  # fmt: skip
    assert all("--quantization" not in line for line in found["launch"].values())
    assert (
        "the lines load the checkpoint as stored (int4): the fp8 weights priced need a checkpoint stored in fp8"
        " (point the lines at one)"
    ) in found["launch_note"]


def test_an_fbgemm_checkpoint_takes_its_own_method_and_refuses_fp8(cli, tmp_path):
    """Trial 352 #3: ``FBGEMMFp8Config.get_name`` is ``fbgemm_fp8`` and it has no ``override_quantization_method``
    (vLLM 0.33.0), so ``_verify_quantization`` takes ``fbgemm_fp8`` and refuses ``fp8``."""
    config = quantised_llama(tmp_path, {"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head"]})
    assert cli.json("kv", config, "--quantization", "fbgemm_fp8")["deployment"]["checkpoint_format"] == "fp8"
    refused = cli.run("kv", config, "--quantization", "fp8")
    assert refused.exit_code == 2
    assert "--quantization fp8: the checkpoint's quantization_config says fbgemm_fp8" in refused.output


@pytest.mark.parametrize(
    ("quantization_config", "method"),
    [({"quant_method": "gptq", "bits": 3, "group_size": 128, "desc_act": False, "sym": True}, "gptq"),
     ({"quant_method": "hqq", "nbits": 4}, "hqq")],
)  # fmt: skip
def test_a_quantisation_mha_cannot_read_gets_no_flag_either(cli, tmp_path, quantization_config, method):
    """Review 353 #2: --weight-dtype prices a quantization_config mha cannot read, but vLLM still reads the method
    from the checkpoint and refuses --quantization fp8 on it; the lines carry none, and the note says why."""
    found = cli.json("plan", quantised_llama(tmp_path, quantization_config), "--target", "h100", "--closed-form",
                     "--weight-dtype", "fp8")  # fmt: skip
    assert all("--quantization" not in line for line in found["launch"].values())
    assert f"the lines load the checkpoint as stored ({method}): the fp8 weights priced need" in found["launch_note"]


def test_vllm_s_int8_cache_is_named_from_0_20_and_absent_before():
    """vLLM's CacheDType has int8_per_token_head from 0.20.0 (absent in the 0.15-0.19 wheels): the refusal said
    'vLLM has no int8 KV cache' on 0.32 too (trial 359 #6); it names the format it does not price there, and still
    says the release lacks one before 0.20."""
    from mha_cli.core.engine.plan import kv_format_note

    newer = kv_format_note("vllm", "int8", release=(0, 32))
    assert newer is not None and newer.startswith("vLLM's int8 KV cache (--kv-cache-dtype int8_per_token_head")
    older = kv_format_note("vllm", "int8", release=(0, 19))
    assert older is not None and older.startswith("vLLM has no int8 KV cache")


def test_an_fp32_cache_needs_fp32_weights_and_the_lines_then_write_float32(cli):
    """One deployment (--tp): refused with bf16 weights; with fp32 weights priced at 4 B a parameter and both lines
    writing --dtype float32 (vLLM's ModelDType and SGLang's --dtype choices, 0.2.0 and 0.4.0 on)."""
    one = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--kv-dtype", "fp32", "--closed-form")
    refused = cli.run(*one)
    assert (
        refused.exit_code == 2 and "an fp32 cache needs the model run in float32 (--weight-dtype fp32" in refused.output
    )
    both = cli.json(*one, "--weight-dtype", "fp32")
    assert both["launch"]["vllm"].endswith("--dtype float32") and both["launch"]["sglang"].endswith("--dtype float32")
    assert not any("add --dtype float32" in note for note in both["notes"])
    assert "where SGLang picks FlashAttention 3 (Hopper" in both["launch_note"]  # review 363 #6
    assert both["memory"]["weight_bytes_per_device"] == 32_121_044_992 == 8_030_261_248 * 4


def test_fp32_weights_price_the_fp32_cache_their_lines_run(cli):
    """--dtype float32 makes vLLM's and SGLang's auto cache fp32 too: fp32 weights priced a bf16 cache, twice the
    tokens the server holds (review 360 #1). Left out, the cache follows the weights (262,144 B a token for
    Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 x 4 B); bf16 asked beside fp32 weights is refused; kv and check
    say an fp32 cache beside bf16 weights does not start (review 360 #2); trtllm-serve, with no dtype flag, is told
    it needs a float32 checkpoint (review 360 #5)."""
    one = ("llama-3.1-8b", "--target", "h100", "--tp", "1", "--closed-form")
    fp32 = cli.json("plan", *one, "--weight-dtype", "fp32")
    priced = cli.json("kv", "llama-3.1-8b", "--target", "h100", "--weight-dtype", "fp32")
    assert priced["kv"]["bytes_per_token"] == 32 * 8 * 128 * 2 * 4 == 262_144
    assert fp32["memory"]["engine"]["kv_tokens"] == priced["memory"]["engine"]["kv_tokens"]
    assert cli.run("plan", *one, "--weight-dtype", "fp32", "--kv-dtype", "bf16").exit_code == 2
    kv = cli.json("kv", "llama-3.1-8b", "--target", "h100", "--kv-dtype", "fp32")["memory"]["engine"]
    assert not kv["starts"] and kv["refusal"].startswith("vLLM keeps its KV cache in the model's dtype")
    check = cli.json("check", "llama-3.1-8b", "--target", "h100", "--kv-dtype", "fp32")
    assert any("keeps its KV cache in the model's dtype" in line for line in check["deployment_warnings"])
    trtllm = cli.json("plan", *one, "--weight-dtype", "fp32", "--engine", "trtllm")
    assert "the trtllm line loads the checkpoint in its own dtype" in trtllm["launch_note"]


def test_recommend_and_a_file_follow_fp32_weights_with_the_cache(cli, tmp_path):
    """recommend --weight-dtype fp32 priced a bf16 cache the engine would not run and found nothing to fit on an
    H100 (review 363 #1); a file's kv_dtype bf16 beside --weight-dtype fp32 is reset by --kv-dtype auto, the engine's
    own, which the refusal names (review 363 #2)."""
    rec = cli.json("recommend", "--params", "1B", "--weight-dtype", "fp32", "--target", "h100")
    assert rec["request"]["kv_dtype"] == "fp32" and rec["memory"]["fits"]
    design = tmp_path / "d.yaml"
    assert cli.run("recommend", "--params", "1B", "--target", "h100", "--out", str(design)).exit_code == 0
    # the file's cache was its weights' dtype (bf16 both): it follows --weight-dtype fp32 (trial 366 #1)
    followed = cli.json("kv", str(design), "--weight-dtype", "fp32")
    assert followed["deployment"]["kv_dtype"] == "fp32" and followed["memory"]["engine"]["starts"]
    asked = cli.json("kv", str(design), "--weight-dtype", "fp32", "--kv-dtype", "bf16")["memory"]["engine"]
    assert not asked["starts"] and "give --kv-dtype auto" in asked["refusal"]  # asked beside them: refused
    reset = cli.json("kv", str(design), "--weight-dtype", "fp32", "--kv-dtype", "auto")["memory"]["engine"]
    assert reset["starts"]


@pytest.mark.parametrize(("weights", "warned"), [("awq", True), ("gptq-int4", True), ("fp8-block", False),
                                                 ("int8", False), ("fp8", False)])  # fmt: skip
def test_kv_and_check_warn_of_weights_no_engine_makes_on_loading(cli, weights, warned):
    """plan's launch note said an AWQ or GPTQ format needs a checkpoint stored so; kv and check said nothing (trial
    357 #5). Formats vLLM makes online (fp8, 0.22's fp8_per_block and int8 weight-only) are not warned (363 #5)."""
    kv = cli.json("kv", "llama-3-8b", "--weight-dtype", weights)
    check = cli.json("check", "llama-3-8b", "--weight-dtype", weights)
    said = [w for w in kv["warnings"] if "calibrated offline" in w]
    assert bool(said) is warned
    assert bool([w for w in check["deployment_warnings"] if "calibrated offline" in w]) is warned


def test_auto_beside_fp32_weights_is_the_fp32_cache_in_recommend_and_sglang_keeps_a_bf16_one(cli):
    """recommend --weight-dtype fp32 --kv-dtype auto priced bf16 and refused it (review 364 #1); SGLang 0.5.9 takes a
    bf16 cache whatever the model's dtype, so it is priced, with a note that its line must ask it (364 #4); vLLM
    refuses it (0.34's cache.py: an explicit float16 or bfloat16 'must match the model data type')."""
    rec = cli.json("recommend", "--params", "1B", "--weight-dtype", "fp32", "--target", "h100", "--kv-dtype", "auto")
    assert rec["request"]["kv_dtype"] == "fp32" and rec["memory"]["fits"]
    one = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--weight-dtype", "fp32", "--kv-dtype", "bf16",
           "--closed-form")  # fmt: skip
    sglang = cli.json(*one, "--engine", "sglang")
    assert "needs --kv-cache-dtype bf16 added" in sglang["launch_note"]
    assert cli.run(*one, "--engine", "vllm").exit_code == 2


def test_a_float16_checkpoint_s_cache_follows_fp32_weights_and_auto_is_left_out(cli):
    """Llama-2-7B's float16 checkpoint priced its cache fp16 beside --weight-dtype fp32 and plan refused it; --kv-dtype
    auto gave bf16 where leaving it out gives fp16 (trial 366 #1-#2)."""
    fp32 = cli.json("kv", "llama-2-7b", "--target", "h100", "--seq", "2k", "--weight-dtype", "fp32")
    assert fp32["deployment"]["kv_dtype"] == "fp32" and fp32["memory"]["engine"]["starts"]
    left_out = cli.json("kv", "llama-2-7b", "--target", "t4", "--seq", "2k")["deployment"]["kv_dtype"]
    auto = cli.json("kv", "llama-2-7b", "--target", "t4", "--seq", "2k", "--kv-dtype", "auto")["deployment"]["kv_dtype"]
    assert left_out == auto == "fp16"


def test_fp32_matmuls_on_an_a100_take_its_fp32_rate():
    """fp32 prefill was priced faster than bf16 on targets stating no fp32 rate (trial 366 #4): the A100's datasheet
    FP32 19.5 TFLOP/s against 312 bf16, a 16x slower matmul; a target without one says its floor."""
    from mha_cli.core.cost.priors import peak_matmul_flops, prior_profile
    from mha_cli.core.targets import resolve_target

    a100 = resolve_target("a100").target
    assert peak_matmul_flops(a100, "fp32") == 19.5e12 and peak_matmul_flops(a100, "bf16") == 312e12
    assert "a floor on their time" in prior_profile(resolve_target("a10").target, "fp32").source
    assert "a floor" not in prior_profile(a100, "fp32").source


def test_a_trtllm_prompt_over_its_step_budget_is_launched_with_context_chunking(cli):
    """Trial 365 #3: a 10,000-token prompt over trtllm-serve's --max_num_tokens 8192 was priced chunked by the closed
    form (as with enable_chunked_prefill), while the printed line, without that option, refuses the prompt; the note
    now says to set it in the options file. The control: a prompt within the budget gets no such note."""
    common = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--engine", "trtllm", "--osl", "100",
              "--max-num-batched-tokens", "8192", "--closed-form")  # fmt: skip
    chunked = cli.json(*common, "--isl", "10000")
    assert "--max_num_tokens 8192" in chunked["launch"]["trtllm"]
    assert (
        "set enable_chunked_prefill: true (the 10,000-token prompt was priced in chunks of 8,192"
        in chunked["launch_note"]
    )
    assert any("over TensorRT-LLM's max_num_tokens (8,192): priced chunked" in n for n in chunked["notes"])
    assert "enable_chunked_prefill" not in (cli.json(*common, "--isl", "8000")["launch_note"] or "")
