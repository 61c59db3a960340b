"""The engine memory plan's rules, each against a hand count: vLLM's groups, blocks and concurrency, its defaults,
the activation peak, SGLang's and TensorRT-LLM's budgets, and the CLI's ``engine`` object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.core.byte_units import GIB
from mha_cli.core.engine.activation import sampler_peak_bytes
from mha_cli.core.engine.non_torch import NON_TORCH_ONE_RANK, NON_TORCH_TENSOR_PARALLEL
from mha_cli.core.engine.pages import paged_pool
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import (
    engine_name,
    resolve_settings,
    sglang_default_fraction,
)  # fmt: skip
from mha_cli.core.engine.sglang_reserve import Reserve
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import load_targets, resolve_target

H100 = resolve_target("h100").target
ENGINE_KEYS = {
    "name", "total_memory_bytes", "gpu_memory_utilization", "weights_bytes_per_rank", "activation_peak_bytes",
    "non_torch_bytes", "cuda_graph_bytes", "available_kv_bytes", "kv_bytes_per_token_per_rank", "block_size",
    "kv_blocks", "kv_tokens", "max_concurrency", "fits",
}  # fmt: skip


def pool(name: str, available: int, *, seq: int = 8192, step: int = 8192, tp: int = 1):
    model = get_preset(name)
    kv = kv_footprint(model, seq_len=seq, tp=tp)
    per_layer = kv.bytes_per_token_per_rank // kv.n_token_layers
    return paged_pool(
        model, available_bytes=available, bytes_per_token_per_layer=per_layer, block_size=16, max_model_len=seq,
        max_num_batched_tokens=step,
    )  # fmt: skip


def test_device_memory_is_what_torch_reports():
    """Published torch/vLLM totals (OOM messages, device properties, start-up logs), each with its source."""
    assert H100.device_memory_bytes == round(79.19 * GIB) and H100.memory_bytes == 80 * 2**30
    published = {"h100-sxm": 79.19, "a100-40gb": 39.39, "rtx-4090": 23.65, "h200": 139.80, "t4": 14.75, "b200": 178.35}
    targets = load_targets()
    assert {name: targets[name].torch_memory_gib for name in published} == published
    measured = [t for t in targets.values() if t.device_memory_measured]
    assert len(measured) >= 20
    for target in targets.values():
        assert 0.9 < target.torch_memory_gib / target.memory_gb <= 1.0, target.id  # GDDR with ECC: 0.92
        if target.device_memory_measured:
            assert "http" in target.torch_memory_source or "device" in target.torch_memory_source, target.id
        else:
            assert target.torch_memory_source.startswith("estimate (no public"), target.id


def test_one_full_attention_group():
    """Llama-3-8B: 32 layers, 4 KiB per token per layer, pages of 16 tokens = 64 KiB."""
    result = pool("llama-3-8b", 10 * GIB)
    assert (len(result.groups), result.layers_per_group, result.padding_layers) == (1, 32, 0)
    assert result.page_bytes == 16 * 4096
    assert result.kv_blocks == 10 * GIB // (16 * 4096 * 32) == 5120
    assert result.kv_tokens == 5120 * 16
    assert result.max_concurrency == 5120 / (8192 // 16)


def test_gemma_3_groups_pad_the_sliding_layers():
    """Gemma-3-27B: 62 layers, 10 full and 52 sliding (window 1024): group size 10, 6 sliding groups (8 empty
    slots) and 1 full; tokens are blocks // 7 x 16; a request needs 512 blocks per full group and
    ceil(min(1023 + 8192, 8192) / 16) + 1 = 513 per sliding group."""
    model = get_preset("gemma-3-27b")
    assert (model.n_global_layers, model.n_local_layers, model.layers.sliding_window) == (10, 52, 1024)
    result = pool("gemma-3-27b", 20 * GIB)
    assert (len(result.groups), result.layers_per_group, result.padding_layers) == (7, 10, 8)
    per_layer = 2 * 16 * 128 * 2  # K and V, 16 KV heads of 128, bf16
    assert result.kv_blocks == 20 * GIB // (16 * per_layer * 10)
    assert result.kv_tokens == result.kv_blocks // 7 * 16
    assert result.blocks_per_request == 512 + 6 * 513
    short_steps = pool("gemma-3-27b", 20 * GIB, step=512)  # a window smaller than a step's tokens saves little;
    assert short_steps.blocks_per_request == 512 + 6 * (-(-(1023 + 512) // 16) + 1)  # a smaller step saves more


def test_gpt_oss_alternates_two_groups_and_llama_4_turns_the_allocator_off():
    gpt_oss = pool("gpt-oss-20b", 10 * GIB, tp=2)
    assert (len(gpt_oss.groups), gpt_oss.layers_per_group) == (2, 12) and gpt_oss.hybrid_allocator
    scout = pool("llama-4-scout", 10 * GIB, tp=4)
    assert (len(scout.groups), scout.layers_per_group, scout.hybrid_allocator) == (1, 48, False)


def test_vllm_step_defaults_follow_the_device():
    """vllm serve: 8192 tokens and 1024 sequences on >= 70 GiB GPUs that are not A100s, else 2048 and 256."""
    for spec, expected in (
        ("h100", (8192, 1024)),
        ("h200", (8192, 1024)),
        ("a100", (2048, 256)),
        ("4090", (2048, 256)),
    ):
        target = resolve_target(spec).target
        settings = resolve_settings(DeploymentSpec(), target, 1)
        assert (settings.max_num_batched_tokens, settings.max_num_seqs, settings.utilisation) == (*expected, 0.9)
    capped = resolve_settings(DeploymentSpec(max_num_batched_tokens=512), H100, 1)
    assert capped.max_num_seqs == 512  # never more sequences than tokens


def test_sampler_peak_by_hand():
    """The Triton path (0.17-0.20): bf16 logits 2 + fp32 copy 4 + probabilities 4 + exponential draws 4 (16 B before
    it was read in the source)."""
    assert sampler_peak_bytes(get_preset("llama-3-8b"), max_num_batched_tokens=8192, max_num_seqs=1024) == (
        1024 * 128_256 * 14
    )


def _plan(engine: str, **deployment):
    model = get_preset("llama-3-8b")
    kv = kv_footprint(model, seq_len=8192)
    settings = resolve_settings(DeploymentSpec(engine=engine, **deployment), H100, 1)
    return plan_engine(model, kv, H100, settings, weights_bytes_per_rank=16 * 10**9, sequences_per_replica=1)


def test_vllm_budget_by_hand():
    """vLLM V1 (0.8-0.20): total x 0.9 - weights - RoPE cos/sin cache (Llama 3's 8,192 positions x 128 x 2 B) -
    activation peak - non-torch; the latest (0.21 and later) takes the CUDA-graph estimate from the same budget, and
    its Model Runner V2 samples the dummy rows greedily (1,024 x 128,256 x 2 B, under the forward's 8,192 x 2 B x
    (2 x 4,096 + 3 x 14,336)), then, from 0.33 (the latest read), again with warmup parameters through FlashInfer
    (1,024 x 128,256 x 14 B), so its activation line is that pass's."""
    plan = _plan("vllm", engine_generation="vllm-v1")
    activation = 1024 * 128_256 * 14  # the Triton path (16 B before it was read in vLLM's source)
    assert plan.activation_peak_bytes == activation and plan.non_torch_bytes == NON_TORCH_ONE_RANK
    rope = 8_192 * 128 * 2
    expected = int(H100.device_memory_bytes * 0.9) - 16 * 10**9 - rope - activation - NON_TORCH_ONE_RANK
    assert plan.available_kv_bytes == expected == sum(line.bytes for line in plan.budget[:-1])
    assert plan.kv_blocks == expected // (16 * 4096 * 32) and plan.kv_tokens == plan.kv_blocks * 16
    assert plan.log_lines[1] == f"GPU KV cache size: {plan.kv_tokens:,} tokens"
    assert not plan.cuda_graph_in_budget and plan.fits and plan.generation == "vllm-v1"
    latest = _plan("vllm")
    assert latest.generation == "vllm-0.21" and latest.cuda_graph_in_budget
    # the estimate (core.engine.cuda_graphs): 51 piecewise + 51 full graphs up to 512 tokens at 1,024 sequences; the
    # forward at 512 tokens, 512 x 2 B x (2 x 4,096 + 3 x 14,336), then 100 graphs x 32 layers x 191,267 B
    graphs = 512 * 2 * (2 * 4096 + 3 * 14336) + 100 * 32 * 191_267
    assert latest.cuda_graph_bytes == graphs == 664_483_200
    forward = 8192 * 2 * (2 * 4096 + 3 * 14336)
    warmup_pass = 1024 * 128_256 * (2 + 4 + 4 + 4)  # bf16 logits, fp32 copy, masked logits, probabilities
    assert latest.activation_peak_bytes == warmup_pass == 1_838_678_016 > forward == 838_860_800
    # and V2's persistent sampler tables, counted from 0.27 (core.engine.v2_sampler_state): 1,024 x (128,256
    # penalty counts + 4,008 mask words + 4,009 grammar-bitmask words + 4,481 logit-bias, bad-word, logprob ids) x 4 B
    sampler = 1024 * (128_256 + 4008 + 4009 + 4481) * 4
    assert sampler == 576_528_384
    assert (
        latest.available_kv_bytes
        == expected + activation - warmup_pass - graphs - sampler
        == sum(line.bytes for line in latest.budget[:-1])
    )
    assert latest.budget[-2].label == "CUDA graphs (estimated before the pool)"


def test_sglang_budget_by_hand():
    """mem_fraction_static on an H100 (79.19 GiB = 81,090 MiB): reserve 512 + 1.5 x 8192 + 2 x 256 + 1024 / 8
    = 13,440 MiB; tokens = (free x fraction - weights - the fp32 RoPE table, 8,192 x 128 x 4 B) // bytes per token,
    pages of one token."""
    mib = H100.device_memory_bytes / 2**20
    assert sglang_default_fraction(H100, 1, 8192, 256) == round((mib - 13_440) / mib, 3)
    plan = _plan("sglang")
    free = H100.device_memory_bytes - NON_TORCH_ONE_RANK
    assert plan.available_kv_bytes == int(free * plan.gpu_memory_utilization) - 16 * 10**9 - 8_192 * 128 * 4
    assert plan.kv_tokens == plan.available_kv_bytes // 131_072 and plan.block_size == 1


def test_sglang_dp_attention_gives_each_rank_its_share_of_the_chunk():
    """SGLang's ``_handle_data_parallelism`` (server_args.py, 0.5.x; sgl-project/sglang#4390): under DP attention
    chunked_prefill_size // dp_size, after ``_handle_gpu_memory_settings`` sized the fraction on the whole 8192.
    H200 (139.8 GiB, under 160): default 8192 at tp 1; over 8 ranks 8192 // 8 = 1024; --chunked-prefill-size 1000
    over 3 ranks: 1000 // 3 = 333."""
    h200 = resolve_target("h200").target
    sglang = DeploymentSpec(engine="sglang")
    alone = resolve_settings(sglang, h200, 1)
    ranks = resolve_settings(sglang, h200, 1, dp_attention_ranks=8)
    assert (alone.max_num_batched_tokens, ranks.max_num_batched_tokens) == (8192, 1024)
    # SGLang's --tp-size is every GPU, 8: its tp >= 4 graph batch, 512, and DP attention's own reserve, graph batch
    # x dp x 4.5 MiB above a batch of 300, under the floor (core.engine.sglang_reserve): 512 + 1.5 x 8192 + 2 x 512
    # + 8 / 8 x 1024 + 512 x 8 x 4.5 = 33,280 MiB
    dp_reserve = Reserve(under_floor_mib=512 * 8 * 4.5)
    assert ranks.utilisation == sglang_default_fraction(h200, 8, 8192, 512, reserve=dp_reserve) < alone.utilisation
    assert ranks.utilisation == round(
        (h200.device_memory_bytes / 2**20 - 33_280) / (h200.device_memory_bytes / 2**20), 3
    )
    assert "--tp-size 8" in ranks.defaults_note and ranks.cuda_graph_bs == 512
    assert alone.utilisation == sglang_default_fraction(h200, 1, 8192, 256)
    assert "8192 // 8 = 1024" in ranks.defaults_note
    given = DeploymentSpec(engine="sglang", max_num_batched_tokens=1000)
    assert resolve_settings(given, h200, 1, dp_attention_ranks=3).max_num_batched_tokens == 333
    # the control: vLLM's --max-num-batched-tokens is each data-parallel rank's already, never divided
    assert resolve_settings(DeploymentSpec(), h200, 1, dp_attention_ranks=8).max_num_batched_tokens == 8192
    with pytest.raises(BadInputError, match="leaves none"):
        resolve_settings(DeploymentSpec(engine="sglang", max_num_batched_tokens=4), h200, 1, dp_attention_ranks=8)


def test_trtllm_budget_by_hand():
    """free_gpu_memory_fraction 0.9 of what is left after weights, activations and non-torch; blocks of 32. The
    activations are the dummy requests' run (KvCacheCreator): 8,191 + 1 prompt tokens, a forward over 8192 tokens
    (8192 x 2 B x (2 x 4096 + 3 x 14336)), above their 2 rows of logits (2 x 128,256 x 6 B)."""
    plan = _plan("trtllm")
    activation = 8192 * 2 * (2 * 4096 + 3 * 14_336)
    assert plan.activation_peak_bytes == activation
    left = H100.device_memory_bytes - 16 * 10**9 - activation - NON_TORCH_ONE_RANK
    assert plan.available_kv_bytes == int(left * 0.9)
    assert plan.kv_tokens == plan.available_kv_bytes // 131_072 // 32 * 32
    # the control: vLLM's sampler over max_batch_size rows (2048 x 128,256 x 16 B), charged before, is not
    assert plan.activation_peak_bytes < 2048 * 128_256 * 16


def test_trtllm_cpp_budget_by_hand():
    """The C++ runtime (trtllm-cpp): before the pool, the execution context (forward over max_num_tokens 8192:
    8192 x 2 B x (2 x 4096 + 3 x 14336)), runtime buffers (2048 x 128,256 x 4 B logits + 2 x 2048 x 8192 x 4 B cache
    indirection) and decoder (2048 x 128,256 x 20 B) at trtllm-build's max_batch_size 2048; then 0.9 of what is left."""
    plan = _plan("trtllm", engine_generation="trtllm-cpp")
    activation = 8192 * 2 * (2 * 4096 + 3 * 14_336)
    runtime, decoder = 2048 * 128_256 * 4 + 2 * 2048 * 8192 * 4, 2048 * 128_256 * 20
    assert plan.activation_peak_bytes == activation
    lines = {line.label: line.bytes for line in plan.budget}
    assert lines["runtime buffers (C++ runtime)"] == -runtime and lines["decoder (C++ runtime)"] == -decoder
    left = H100.device_memory_bytes - 16 * 10**9 - activation - NON_TORCH_ONE_RANK - runtime - decoder
    assert plan.available_kv_bytes == int(left * 0.9)
    assert plan.log_lines[:2] == [
        f"[MemUsageChange] Allocated {runtime / 2**30:.2f} GB GPU memory for runtime buffers.",
        f"[MemUsageChange] Allocated {decoder / 2**30:.2f} GB GPU memory for decoder.",
    ]
    # the control: a smaller engine batch leaves the pool more; the PyTorch backend has no such lines
    small = _plan("trtllm", engine_generation="trtllm-cpp", max_num_seqs=64)
    assert small.available_kv_bytes > plan.available_kv_bytes
    assert "decoder (C++ runtime)" not in {line.label for line in _plan("trtllm").budget}


def test_utilisation_changes_the_budget_and_a_full_one_is_flagged():
    v1 = {"engine_generation": "vllm-v1"}  # up to 0.20 the graphs come out of the (1 - utilisation) headroom
    half, full = _plan("vllm", gpu_memory_utilization=0.5, **v1), _plan("vllm", gpu_memory_utilization=0.99, **v1)
    assert full.available_kv_bytes - half.available_kv_bytes == int(H100.device_memory_bytes * 0.99) - int(
        H100.device_memory_bytes * 0.5
    )
    assert any("--enforce-eager" in note for note in full.notes)
    assert not any("--enforce-eager" in note for note in half.notes)


def test_tensor_parallel_pays_the_nccl_constant():
    model = get_preset("llama-3-8b")
    kv = kv_footprint(model, seq_len=8192, tp=2)
    settings = resolve_settings(DeploymentSpec(), H100, 2)
    plan = plan_engine(model, kv, H100, settings, weights_bytes_per_rank=8 * 10**9, sequences_per_replica=1)
    assert plan.non_torch_bytes == NON_TORCH_TENSOR_PARALLEL and plan.kv_bytes_per_token_per_rank == 65_536


def test_engine_names():
    assert engine_name("TensorRT-LLM") == "trtllm" and engine_name(None) == "vllm"
    with pytest.raises(BadInputError, match="unknown engine 'vlm'"):
        engine_name("vlm")


@pytest.mark.parametrize("command", ["kv", "check"])
def test_json_engine_object(cli, command):
    data = cli.json(command, "llama-3-8b", "--target", "h100", "--seq", "8k")
    assert set(data["engine"]) >= ENGINE_KEYS and data["engine"]["name"] == "vllm"
    assert data["engine"]["kv_bytes_per_token_per_rank"] == 131_072
    sglang = cli.json(command, "llama-3-8b", "--target", "h100", "--engine", "sglang", "--mem-fraction-static", "0.8")
    assert (sglang["engine"]["name"], sglang["engine"]["gpu_memory_utilization"]) == ("sglang", 0.8)


def test_recommend_json_engine_object(cli):
    data = cli.json("recommend", "--params", "8B", "--target", "h100", "--gpu-memory-utilization", "0.95")
    assert set(data["engine"]) >= ENGINE_KEYS and data["engine"]["gpu_memory_utilization"] == 0.95


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "vlm"], "unknown engine 'vlm'"),
        (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        (["--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
        (["--max-num-batched-tokens", "0"], "--max-num-batched-tokens"),
    ],
)
def test_bad_engine_options_are_one_line_exit_2(cli, args, message):
    result = cli.run("kv", "llama-3-8b", "--target", "h100", *args)
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_a_pool_without_room_for_one_request_is_vllms_refusal(cli):
    """Llama-3-70B on 2 x H100 at 32K: 1.75 GiB left per rank (1.50 with the 16 B Triton sampler rule), one request
    needs 80 layers x 2,048 blocks x 16 x 2 KiB = 5.00 GiB; vLLM stops and names the longest length that fits (its
    pool's tokens), its GiB rounded as 0.14+ print them (``format_gib``: "5.0", not "5.00")."""
    data = cli.json("kv", "llama-3-70b", "--target", "2xh100", "--seq", "32k", "--engine", "vllm@0.19")
    engine = data["engine"]
    assert not engine["starts"] and not engine["fits"] and engine["admitted_per_replica"] == 0
    assert "(5.0 GiB KV cache is needed, which" in engine["refusal"] and "the models's max seq len" in engine["refusal"]
    assert f"the estimated maximum model length is {engine['kv_tokens']}." in engine["refusal"]
    assert engine["log_lines"] == ["Available KV cache memory: 1.75 GiB", engine["refusal"]]
    starved = cli.json("kv", "mistral-7b-v0.1", "--target", "t4", "--seq", "8k")["engine"]
    assert starved["available_kv_bytes"] == 0 < starved["deficit_bytes"]
    assert "No available memory for the cache blocks" in starved["refusal"]


def test_max_num_seqs_caps_what_runs_at_once(cli):
    free = cli.json("kv", "llama-3-8b", "--target", "h100", "--seq", "8k")
    capped = cli.json("kv", "llama-3-8b", "--target", "h100", "--seq", "8k", "--max-num-seqs", "16")
    assert free["memory"]["max_sequences"] == int(free["engine"]["max_concurrency"]) > 16
    assert capped["memory"]["max_sequences"] == 16
    assert any("max_num_seqs 16 caps" in note for note in capped["engine"]["notes"])


@pytest.mark.parametrize(("engine", "kv_dtype", "offered"), [("vllm", "int8", False), ("trtllm-cpp", "int8", True),
                                                              ("trtllm", "int8", False), ("sglang", "int4", False),
                                                              ("vllm", "fp8", True)])  # fmt: skip
def test_kv_formats_the_engine_lacks_are_named(cli, engine, kv_dtype, offered):
    data = cli.json("kv", "llama-3-8b", "--target", "h100", "--engine", engine, "--kv-dtype", kv_dtype)
    named = any(f"no {kv_dtype} KV cache" in note or "int8_per_token_head" in note for note in data["engine"]["notes"])
    assert named is not offered


def test_sglang_and_trtllm_log_their_own_lines(cli):
    sglang = cli.json("kv", "llama-3-8b", "--target", "h100", "--engine", "sglang")["engine"]
    tokens = sglang["kv_tokens"]
    half = (tokens + 1) * 131_072 // 2 / 2**30  # K (or V) of every layer, with SGLang's padding slot
    assert sglang["log_lines"] == [
        f"KV Cache is allocated. #tokens: {tokens}, K size: {half:.2f} GB, V size: {half:.2f} GB"
    ]
    trtllm = cli.json("kv", "llama-3-8b", "--target", "h100", "--engine", "trtllm")["engine"]
    assert (
        trtllm["log_lines"][0].startswith("[MemUsageChange] Allocated ")
        and f"({trtllm['kv_tokens']})" in trtllm["log_lines"][0]
    )


def test_a_device_count_that_does_not_split_the_heads_offers_replicas(cli):
    result = cli.run("kv", "qwen2.5-7b", "--target", "8xh100")
    assert result.exit_code == 2 and "n_heads (28) must be divisible by tp (8)" in result.stderr
    assert "--tp 4" in result.stderr


def test_a_model_of_state_layers_only_is_counted_by_its_state(cli, tmp_path):
    """No layer caches tokens: every engine that serves it admits as many requests as the fixed states fit (the
    control: the attention-only count would be 0). SGLang never registered Jamba's class, so it refuses it."""
    model = get_preset("jamba-mini-1.5").model_dump(mode="json", exclude={"attention": {"variant"}})
    model["layers"]["pattern"], model["block"]["moe"] = ["linear"], None
    path = tmp_path / "mamba.json"
    path.write_text(json.dumps({"model": model}))
    refused = cli.run("kv", str(path), "--target", "h100", "--engine", "sglang", "--seq", "8k")
    assert refused.exit_code == 2 and "has no JambaForCausalLM" in refused.stderr
    for engine in ("vllm", "trtllm"):
        data = cli.json("kv", str(path), "--target", "h100", "--engine", engine, "--seq", "8k")
        state = data["kv"]["state_bytes_per_seq_per_rank"]
        assert data["kv"]["n_token_layers"] == 0 and state > 0
        assert data["engine"]["max_concurrency"] == pytest.approx(data["engine"]["available_kv_bytes"] / state), engine


def test_naive_mla_is_a_torch_build_the_engines_price_the_latent(cli):
    absorbed = cli.json("kv", "deepseek-v2-lite", "--target", "h100")["engine"]
    naive = cli.json("kv", "deepseek-v2-lite", "--target", "h100", "--mla-cache", "naive")["engine"]
    assert naive["kv_tokens"] == absorbed["kv_tokens"] and naive["kv_bytes_per_token_per_rank"] == 27 * 576 * 2
    assert any("--mla-cache naive prices only the torch build" in note for note in naive["notes"])


def test_overheads_not_weights_are_named_and_the_engine_knob_offered(cli):
    """Llama-3-8B on a 4090 at utilisation 0.66: 15.0 GiB of weights fit 15.6 GiB, vLLM's profiling peak and
    non-torch memory do not; raising the utilisation is the way out, not a second GPU alone."""
    data = cli.json(
        "kv",
        "llama-3-8b",
        "--target",
        "4090",
        "--gpu-memory-utilization",
        "0.66",
        "--seq",
        "4k",
        "--engine",
        "vllm@0.19",
    )
    assert data["memory"]["weights_fit"] and not data["engine"]["starts"]
    knob = next(way for way in data["ways_out"] if way["change"] == "--gpu-memory-utilization 0.95")
    assert knob["fits"] and knob["text"].startswith("--gpu-memory-utilization 0.95 (")


def test_headroom_and_verdict_agree_on_a_hybrid_model(cli):
    """Gemma-3-27B at 32K: vLLM allocates a request's blocks in all 7 groups, more than the per-layer bytes: four
    decoding on their windows' blocks and the fifth admitted on its ask (``core.engine.window_blocks``)."""
    data = cli.json("kv", "gemma-3-27b", "--target", "h100", "--seq", "32k", "--batch", "5")
    memory, engine = data["memory"], data["engine"]
    held, ask = engine["running_kv_bytes"]
    assert ask == engine["kv_bytes_per_request"] > held  # the sizer's blocks are the newcomer's ask on vLLM 0.21+
    assert memory["allocated_kv_bytes_per_device"] == 4 * held + ask > memory["kv_bytes_per_device"]
    assert (memory["headroom_bytes"] >= 0) == memory["fits"] == (engine["admitted_per_replica"] >= 5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--block-size", "7"], "--block-size 7 is not one vLLM offers"),
        (["--max-num-seqs", "9000"], "--max-num-seqs (9000) must not exceed --max-num-batched-tokens (8192)"),
        (["--engine", "sglang", "--chunked-prefill-size", "100000000"], "leaves nothing of 79.19 GiB"),
    ],
)
def test_settings_an_engine_refuses_are_refused(cli, args, message):
    result = cli.run("kv", "llama-3-8b", "--target", "h100", *args)
    assert result.exit_code == 2 and message in result.stderr


def _negative_figures(value, path=""):
    """Every number below zero in a JSON document, by its path (the budget's lines and headroom_bytes are signed)."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _negative_figures(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _negative_figures(item, f"{path}[{index}]")]
    signed = ".budget[" in path or path.endswith(".headroom_bytes")
    return [path] if isinstance(value, int | float) and not isinstance(value, bool) and value < 0 and not signed else []


def test_a_deficit_is_named_never_a_negative_figure(cli):
    """GPT-2 on a T4 at utilisation 0.01, by hand: vLLM's share int(15,837,691,904 x 0.01) = 158,376,919 B less the
    weights 248,951,808, the sampler's peak 256 x 50,257 x 14 = 180,121,088 (0.20's Triton path) and non-torch
    2^28 = 268,435,456 is -539,131,433: the engine lacks 539,131,433 B (its deficit), and 290,179,625 B before any
    weight (564,863,017 and 315,911,209 with the 16 B Triton rule)."""
    v1 = ("--engine", "vllm@0.19")  # the hand count is V1's budget (no CUDA-graph line; 0.20 profiles them)
    data = cli.json("kv", "gpt2", "--target", "t4", "--gpu-memory-utilization", "0.01", *v1)
    memory, engine = data["memory"], data["engine"]
    assert (engine["available_kv_bytes"], engine["deficit_bytes"]) == (0, 539_131_433)
    assert (memory["usable_bytes"], memory["deficit_bytes"]) == (0, 539_131_433 - 248_951_808)
    assert sum(line["bytes"] for line in engine["budget"][:-1]) == -539_131_433  # the lines stay signed
    assert engine["budget"][-1] == {
        "label": "= deficit (no KV cache)", "bytes": 539_131_433,
        "how": "what the lines above take beyond the total (deficit_bytes)",
    }  # fmt: skip
    assert not engine["starts"] and "No available memory for the cache blocks" in engine["refusal"]
    assert engine["log_lines"][0] == "Available KV cache memory: -0.5 GiB"  # vLLM's own words keep its sign
    assert memory["headroom_bytes"] == -539_131_433 - memory["allocated_kv_bytes_per_device"]
    assert _negative_figures(data) == []
    table = cli.run("kv", "gpt2", "--target", "t4", "--gpu-memory-utilization", "0.01", *v1).stdout
    assert "= deficit (no KV" in table and "539,131,433 │  514.2 MiB" in table and "short by" in table
    assert "= available for" not in table and "headroom" not in table and "-514.2" not in table
    recommend = cli.json("recommend", "--params", "7B", "--target", "t4", "--gpu-memory-utilization", "0.02")
    assert recommend["memory"]["usable_bytes"] == 0 < recommend["memory"]["deficit_bytes"]
    assert _negative_figures(recommend) == []
    finding = next(f for f in recommend["trace"] if f["id"] == "MHA025")
    assert "usable 0 B (the engine's own reserves exceed its share of the device by" in finding["message"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_weights_beyond_the_device_are_the_engines_deficit_usable_stays_the_share(cli, engine):
    """Llama-3.1-70B (141.1 GB of bf16 weights) on one T4: every engine lacks the weights less what it gives; the
    budget's signed lines add up to minus the deficit (TensorRT-LLM's fraction keeps nothing of a deficit)."""
    data = cli.json("kv", "llama-3.1-70b", "--target", "t4", "--engine", engine)
    memory, plan = data["memory"], data["engine"]
    assert plan["available_kv_bytes"] == 0 < plan["deficit_bytes"] and not plan["starts"] and plan["refusal"]
    assert sum(line["bytes"] for line in plan["budget"][:-1]) == -plan["deficit_bytes"] == -plan["budget"][-1]["bytes"]
    assert memory["deficit_bytes"] == 0 < memory["usable_bytes"] < plan["weights_bytes_per_rank"]
    assert plan["deficit_bytes"] == plan["weights_bytes_per_rank"] - memory["usable_bytes"]
    assert _negative_figures(data) == []


def test_the_models_say_pool_and_usable_are_never_negative():
    from mha_cli.core.engine.plan import EnginePlan
    from mha_cli.core.memory import MemoryPlan

    for model, fields in ((EnginePlan, ("available_kv_bytes", "deficit_bytes")),
                          (MemoryPlan, ("usable_bytes", "deficit_bytes"))):  # fmt: skip
        properties = model.model_json_schema()["properties"]
        assert all(properties[name]["minimum"] == 0 for name in fields)


def test_vllm_note_says_which_step_settings_were_given():
    """The note names the values priced: a setting given is not called vllm serve's default (log 801's 8,192)."""
    h100 = resolve_target("h100").target
    default = resolve_settings(DeploymentSpec(engine="vllm"), h100, 1)
    assert default.defaults_note.startswith("max_num_batched_tokens 8192, max_num_seqs 1024: vllm serve's defaults")
    given = resolve_settings(DeploymentSpec(engine="vllm", max_num_batched_tokens=4096), h100, 1)
    assert given.defaults_note == (
        "max_num_batched_tokens 4096, max_num_seqs 1024 (default); (default) = vllm serve's defaults on a GPU of"
        " >= 70 GiB"
    )


def test_a_set_pool_larger_than_the_gpu_less_the_weights_does_not_start():
    """``--kv-cache-gib`` bypasses utilisation, so vLLM allocates it whole beside the weights (16 GB here), the RoPE
    cache (8,192 x 128 x 2 B) and non-torch memory, then captures its CUDA graphs after it and takes the profiling
    run's activation peak (1,024 x 128,256 x 14 B, the sampler's) again on every full step: a byte more than the
    device's remainder is out of memory. The graphs and the activations were left out, so the largest pool offered
    left no room for them and "fits" (found by newuser trial 251)."""
    probe = _plan("vllm", kv_cache_memory_bytes=10**9)
    activation = 1024 * 128_256 * 14
    assert probe.activation_peak_bytes == activation and probe.cuda_graph_bytes > 0
    held = 16 * 10**9 + 8_192 * 128 * 2 + NON_TORCH_ONE_RANK
    # trial 385 #2: Model Runner V2's sampler tables (1,024 slots, at 0.33) are allocated whatever the pool, so a pool
    # set to the room without them was called "fits" by 0.54 GiB
    sampler = 1024 * (128_256 + 4008 + 4009 + 4481) * 4  # by hand, as in test_vllm_budget_by_hand
    room = H100.device_memory_bytes - held - sampler - activation - probe.cuda_graph_bytes
    fits = _plan("vllm", kv_cache_memory_bytes=room)
    assert fits.starts and fits.available_kv_bytes == room
    over = _plan("vllm", kv_cache_memory_bytes=room + 1)
    assert not over.starts
    assert over.refusal.startswith("out of memory: the KV cache set") and "give --kv-cache-gib" in over.refusal
    assert "non-torch memory, Model Runner V2's sampler tables, the activation peak and the CUDA graphs" in over.refusal


def test_sglang_caps_its_decode_graph_batch_at_max_running_requests_from_0_5_22():
    """SGLang 0.5.22 and 0.5.23 cap the default cuda_graph_max_bs at --max-running-requests before sizing the
    fraction's reserve (``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings``); 0.5.21 reserves 2 x 256 MiB on
    an H100 whatever the cap. H100 at tp 1: 8192 chunk, graph batch 256, or 8 under --max-num-seqs 8."""
    capped = resolve_settings(DeploymentSpec(engine="sglang", engine_version="0.5.22", max_num_seqs=8), H100, 1)
    newest = resolve_settings(DeploymentSpec(engine="sglang", max_num_seqs=8), H100, 1)
    older = resolve_settings(DeploymentSpec(engine="sglang", engine_version="0.5.21", max_num_seqs=8), H100, 1)
    unset = resolve_settings(DeploymentSpec(engine="sglang", engine_version="0.5.22"), H100, 1)
    assert "CUDA-graph batch 8" in capped.defaults_note and "CUDA-graph batch 256" in older.defaults_note
    assert "CUDA-graph batch 256" in unset.defaults_note and newest.utilisation == capped.utilisation
    # the reserve is 2 x 248 MiB smaller: the fraction rises by 496 MiB of the GPU's, within the rounding
    mib = H100.device_memory_bytes / 2**20
    assert capped.utilisation - older.utilisation == pytest.approx(496 / mib, abs=0.0011) and capped.max_num_seqs == 8
    # a cap above the default batch changes nothing
    wide = resolve_settings(DeploymentSpec(engine="sglang", engine_version="0.5.23", max_num_seqs=1000), H100, 1)
    assert "CUDA-graph batch 256" in wide.defaults_note
    # under DP attention the server's --max-running-requests is every rank's: 64 x 8 = 512 caps nothing on an H200
    h200 = resolve_target("h200").target
    ranks = resolve_settings(DeploymentSpec(engine="sglang", max_num_seqs=64), h200, 1, dp_attention_ranks=8)
    assert "CUDA-graph batch 512" in ranks.defaults_note
    few = resolve_settings(DeploymentSpec(engine="sglang", max_num_seqs=16), h200, 1, dp_attention_ranks=8)
    assert "CUDA-graph batch 128" in few.defaults_note and "DP attention 128 x 8 x 3" in few.defaults_note


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_weights_over_the_device_fail_at_load_not_at_the_pool(cli, engine):
    """DeepSeek-V3's fp8 checkpoint at tp 1 on an H200: 626.9 GiB of weights on a 139.80 GiB device. The engine
    fails allocating the parameters (torch's out-of-memory error) before it sizes a KV pool, so it logs no pool
    figure and the fix is more GPUs, not a shorter max_seq_len; weights that fit keep the engine's own message."""
    config = "tests/fixtures/hf_configs/deepseek-v3.json"
    args = ("kv", config, "--target", "h200", "--seq", "8k", "--engine", engine)
    engine_plan = cli.json(*args)["engine"]
    assert not engine_plan["starts"] and not engine_plan["fits"]
    assert engine_plan["refusal"].startswith("torch.OutOfMemoryError: CUDA out of memory while loading the weights")
    assert "(this rank's 626.92 GiB exceed the device's 139.80 GiB)" in engine_plan["refusal"]
    assert engine_plan["log_lines"] == [engine_plan["refusal"]]
    if engine == "trtllm":  # NVIDIA only: refused on an AMD target
        return
    amd = cli.json("kv", config, "--target", "mi300x", "--seq", "8k", "--engine", engine)["engine"]
    assert amd["refusal"].startswith("torch.OutOfMemoryError: HIP out of memory")


def test_from_0_29_vllm_checks_one_request_against_the_pool_less_the_null_block(cli):
    """Trial 385 #3: Gemma-3-4B on an L4 at 454,320 tokens, exactly the pool of the latest vLLM (30,321 blocks of
    16 in each group less none), was said to start yet admit none. vLLM 0.29+ plans the start-up check against the
    pool less the null block its BlockPool keeps (check_enough_kv_cache_memory), so it refuses, naming 454,304, a
    block less, which starts and admits one."""
    args = ("kv", "tests/fixtures/hf_configs/gemma-3-4b-it.json", "--target", "l4", "--seq")
    refused = cli.json(*args, "454320")["memory"]["engine"]
    assert not refused["starts"] and refused["kv_tokens"] == 454_320
    assert refused["refusal"].endswith("the estimated maximum model length is 454304.")
    fitted = cli.json(*args, "454304")["memory"]["engine"]
    assert fitted["starts"] and fitted["admitted_per_replica"] == 1


def test_a_pool_of_states_alone_keeps_its_null_block_and_needs_one_state(cli):
    """Review 386 #5, #11: Mamba-2.8B holds 12,451,840 B of state a request (64 layers x 194,560) and no tokens; a
    15 MiB pool set outright was said to start. vLLM 0.29+ keeps one block (a request's state) back and needs another:
    refused, with no "estimated maximum model length" sentence (no length fits states; vLLM leaves out a 0); 25 MiB
    holds both and starts (the control)."""
    args = ("kv", "tests/fixtures/hf_configs/mamba-2.8b-hf.json", "--target", "h100", "--seq", "4096", "--kv-cache-gib")
    refused = cli.json(*args, "0.015")["memory"]["engine"]
    assert not refused["starts"] and refused["kv_bytes_per_request"] == 64 * 194_560
    assert refused["refusal"].endswith("(0.0 GiB).") and "estimated maximum" not in refused["refusal"]
    assert cli.json(*args, "0.025")["memory"]["engine"]["starts"]


def test_model_runner_v2s_sampler_tables_sit_beside_a_set_pool_in_every_release_that_has_them(cli):
    """Review 386 #12: vLLM 0.24 allocates Model Runner V2's sampler tables (549.8 MiB for Llama-3-8B's 1,024 slots)
    outside its memory budget, but beside a pool set outright all the same: the largest pool offered drops by them,
    62.58 -> 62.04 GiB."""
    kv = cli.json("kv", "llama-3-8b", "--target", "h100", "--kv-cache-gib", "1000", "--engine", "vllm@0.24")
    assert "give --kv-cache-gib 62.04 or less" in kv["memory"]["engine"]["refusal"]


def test_a_state_pool_under_its_null_block_has_no_memory_and_a_drafter_needs_its_pages(cli, tmp_path):
    """Review 388 #2: Mamba-Codestral's state (one null block) larger than a 0.02 GiB pool printed a negative pool;
    vLLM 0.29 tests the pool less that block and says there is no memory. #1: a drafter's speculative pages count in
    one request's need as they do in the concurrency."""
    args = ("kv", "tests/fixtures/hf_configs/mamba-codestral-7b.json", "--target", "h100", "--seq", "4096",
            "--kv-cache-gib", "0.02")  # fmt: skip
    engine = cli.json(*args)["memory"]["engine"]
    assert not engine["starts"] and engine["refusal"].startswith("ValueError: No available memory for the cache")
    # Mamba-2.8B (12,451,840 B of state) with a 3-token drafter: 4 pages a request, 49.8 MB, against 0.05 GiB less
    # the null block (41.2 MB): refused, where one page was counted and the plan started; 0.08 GiB starts
    draft = tmp_path / "tiny-mamba.json"
    config = json.loads(Path("tests/fixtures/hf_configs/mamba-2.8b-hf.json").read_text())
    draft.write_text(json.dumps(config | {"num_hidden_layers": 2, "hidden_size": 256, "intermediate_size": 512}))
    plan = ("plan", "tests/fixtures/hf_configs/mamba-2.8b-hf.json", "--target", "h100", "--tp", "1", "--isl", "1000",
            "--osl", "100", "--draft", str(draft), "--num-speculative-tokens", "3", "--acceptance-length", "2",
            "--closed-form", "--kv-cache-gib")  # fmt: skip
    refused = cli.run(*plan, "0.05")
    assert refused.exit_code == 2 and "(0.05 GiB KV cache is needed, which" in refused.stderr
    assert cli.run(*plan, "0.08").exit_code == 0
