"""Disaggregated serving at DeepSeek scale (``core.cost.disaggregated_layouts``, the DP attention and multi-node
workers of ``core.cost.disaggregated``, their launch lines): the layouts searched, where workers sit in nodes, a
DP worker's weights and an MLA cache's transfer by hand, DeepSeek-V3 refused on 2 x 8 H100 and started on 4 x 8."""

import json
import shlex

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app
from mha_cli.core.cost.disaggregated import request_transfer, split_rates, worker_steps
from mha_cli.core.cost.disaggregated_layouts import WorkerLayout, nodes_used, placements, worker_layouts
from mha_cli.core.cost.priors import datasheet_profile, prior_profile
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.errors import EngineRefusedError
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target

runner = CliRunner()
DP16, DP32, TP16 = WorkerLayout(1, 16), WorkerLayout(1, 32), WorkerLayout(16)
# DeepSeek-V3 (its config): 61 layers, the first 3 dense; d_model 7,168; 256 routed experts of d_ff 2,048
MOE_LAYERS = 61 - 3
EXPERT_PARAMS = 3 * 7168 * 2048  # gate, up, down: 44,040,192
# fp8-block: 1 B a weight + one fp32 scale per 128 x 128 block: 3 matrices x 56 x 16 blocks x 4 B = 10,752 B
EXPERT_BYTES = EXPERT_PARAMS + 3 * (7168 // 128) * (2048 // 128) * 4  # 44,050,944


def _deepseek(target: str):
    loaded, resolved = load_source("deepseek-v3"), resolve_target(target)
    deployment = merge_deployment(loaded.deployment, model=loaded.model, seq_len=2100, target=resolved.spec)
    weights = deployment.weight_dtype
    return loaded.model, resolved, deployment, (prior_profile(resolved.target, weights),
                                                datasheet_profile(resolved.target, weights))  # fmt: skip


def test_layouts_searched_for_an_moe_model_and_a_dense_one():
    model, _, deployment, _ = _deepseek("4x8xh100")
    # sizes 1-8 inside a node, then whole nodes short of the 32 GPUs: 16, 24. tp must shard 128 heads (not 3, 5, 6,
    # 7, 24); DP attention needs 2+ ranks that divide the 256 experts (not 3, 5, 6, 7, 24)
    assert [w.label for w in worker_layouts(model, deployment, 32, 8)] == [
        "tp1", "tp2", "tp4", "tp8", "tp16", "dp2", "dp4", "dp8", "dp16",
    ]  # fmt: skip
    dense = load_source("llama-3.1-8b")  # control: no experts, so no DP attention workers
    layouts = worker_layouts(dense.model, merge_deployment(dense.deployment, model=dense.model), 32, 8)
    assert all(w.dp == 1 for w in layouts)


def test_a_worker_larger_than_a_node_takes_whole_nodes():
    # 4 GPUs on node 0; a 16-GPU worker starts on node 1 and takes nodes 1-2; the next 4 GPUs start node 3
    assert placements([4, 16, 4], 8) == [(0, 0), (1, 0), (3, 0)]
    assert nodes_used([4, 16, 4], 8) == 4
    assert nodes_used([8, 8, 8], 8) == 3
    # 32 GPUs in nodes of 8: one dp16 prefill and one dp16 decode worker, nothing more beside them
    rates = split_rates({(DP16, DP16): 10.0}, {DP16: 30.0}, 32, 8)
    assert [(s.prefill_workers, s.decode_workers, s.gpus, s.prefill_dp) for s in rates] == [(1, 1, 32, 16)]
    # a 4-GPU prefill worker beside a 16-GPU one: 4 x 4 fill two nodes, 16 takes the other two; a fifth would not fit
    mixed = split_rates({(WorkerLayout(4), DP16): 1.0}, {DP16: 1.0}, 32, 8)
    assert max(s.prefill_workers for s in mixed) == 4


def test_mla_cache_transfer_by_hand():
    model, target, deployment, _ = _deepseek("4x8xh100")
    # 2,000 tokens x 61 layers x (512 latent + 64 RoPE) x 2 B (bf16) = 140,544,000 B; one NDR port: 50 GB/s + 5 us
    latent = 2000 * 61 * 576 * 2
    assert latent == 140_544_000
    dp = request_transfer(model, deployment, target, DP16, DP16, isl=2000, link_id=None)
    assert (dp.bytes, dp.links) == (latent, 1)  # the request lives on one DP rank of tp 1: one latent, one port
    assert dp.seconds == pytest.approx(5e-6 + latent / 50e9)  # 2.816 ms
    # a tp16 decode worker holds the latent whole on each of its 16 ranks: 16 x the bytes over 16 ports
    tp = request_transfer(model, deployment, target, TP16, TP16, isl=2000, link_id=None)
    assert (tp.bytes, tp.links) == (16 * latent, 16)
    assert tp.seconds == pytest.approx(dp.seconds)
    # a dp16 prefill worker feeding a tp16 decode worker sends from one rank's port: 16 times as long
    across = request_transfer(model, deployment, target, DP16, TP16, isl=2000, link_id=None)
    assert across.seconds == pytest.approx(5e-6 + 16 * latent / 50e9)


def test_dp_worker_weights_per_gpu_by_hand():
    model, target, deployment, profiles = _deepseek("4x8xh100")
    per_gpu = {
        layout.dp: worker_steps(model, target, deployment, profiles, layout, isl=2000, osl=100).weight_bytes_per_gpu
        for layout in (DP16, DP32)
    }
    # the routed experts split over the EP ranks: 256 / 16 = 16 a GPU against 256 / 32 = 8, in each of 58 layers;
    # everything else is whole on every GPU under DP attention, so the difference is 8 experts' bytes exactly
    assert per_gpu[16] - per_gpu[32] == (16 - 8) * MOE_LAYERS * EXPERT_BYTES
    # and what every GPU holds whole, by hand (bf16 embedding and LM head, fp8-block linear weights with their scales)
    embedding = 129_280 * 7168 * 2  # each of the embedding and the LM head
    attention = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168  # q_a q_b kv_a kv_b o
    attention_scales = (12 * 56 + 192 * 12 + 5 * 56 + 256 * 4 + 56 * 128) * 4  # ceil(out / 128) x ceil(in / 128)
    dense_mlp = 3 * 7168 * 18_432 + 3 * 56 * 144 * 4  # 3 dense layers, gate/up/down with their scales
    shared = EXPERT_BYTES  # one shared expert in each MoE layer
    router = 256 * 7168 * 2  # the gate, bf16
    norms = (7168 + 7168 + 1536 + 512) * 2  # input, post-attention, q_a and kv_a norms, bf16
    whole = (
        2 * embedding
        + 61 * (attention + attention_scales + norms)
        + 3 * dense_mlp
        + MOE_LAYERS * (shared + router)
        + 7168 * 2  # the final norm
    )
    assert whole == 19_082_135_904  # 19.08 GB, then 16 experts x 58 layers on top
    # (the checkpoint's fp32 e_score_correction_bias, 256 x 4 B a MoE layer, 59 KB, is not counted by mha)
    assert per_gpu[16] == whole + 16 * MOE_LAYERS * EXPERT_BYTES


def test_deepseek_on_two_h100_nodes_is_refused_in_one_line():
    # 671 GB of fp8 weights: no 8-GPU worker leaves room for a cache, and a 16-GPU one would leave no other pool
    result = runner.invoke(app, ["plan", "deepseek-v3", "--target", "2x8xh100", "--disaggregated", "--isl", "2000",
                                 "--osl", "100", "--closed-form"])  # fmt: skip
    assert result.exit_code == 2 and "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert "no worker of deepseek-v3 starts on 2x8xh100 (workers of up to 8 GPUs" in text
    assert "tp8" in text and "dp8" in text and "would not start" in text
    # every layout the weights stop is named in one reason, with no layout's own bytes (EngineRefusedError.reason)
    assert (
        "tp1, tp2, tp4, tp8, dp2, dp4, dp8: no worker (vllm would not start: torch.OutOfMemoryError: CUDA out of memory"
        " while loading the weights (a rank's weights exceed the device's 79.19 GiB): add GPUs (tp, pp, dp) or a"
        " smaller weight format); give more nodes (NODESx8xh100-sxm)"
    ) in text


def test_weights_overflow_error_carries_the_figure_free_reason():
    model, target, deployment, profiles = _deepseek("2x8xh100")
    with pytest.raises(EngineRefusedError) as raised:
        worker_steps(model, target, deployment, profiles, WorkerLayout(8), isl=2000, osl=100)
    # the message keeps this rank's bytes (the engine's words); the reason drops them, the device's kept
    assert "while loading the weights (this rank's " in raised.value.message
    assert "GiB exceed the device's 79.19 GiB)" in raised.value.message
    assert raised.value.reason == (
        "vllm would not start: torch.OutOfMemoryError: CUDA out of memory while loading the weights (a rank's weights"
        " exceed the device's 79.19 GiB): add GPUs (tp, pp, dp) or a smaller weight format"
    )


@pytest.fixture(scope="module")
def four_nodes() -> dict:
    result = runner.invoke(app, ["plan", "deepseek-v3", "--target", "4x8xh100", "--disaggregated", "--isl", "2000",
                                 "--osl", "100", "--closed-form", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _written_sglang_lines(plan_json: dict) -> list[list[str]]:
    """The sglang lines ``disaggregated_launch`` writes for a plan's pick, before the check that leaves them out
    where SGLang would not start them (an H100's 80 GB under DeepSeek-V3's DP workers: review 373 #2)."""
    from mha_cli.core.cost.disaggregated import DisaggregatedPlan
    from mha_cli.core.cost.disaggregated_launch import disaggregated_launch

    loaded = load_source("deepseek-v3")
    plan = DisaggregatedPlan.model_validate(plan_json)
    deployment = merge_deployment(loaded.deployment, model=loaded.model, seq_len=2100, target=plan.target)
    lines = disaggregated_launch(plan, plan.splits[plan.chosen], loaded.served, deployment)
    return [shlex.split(line) for line in lines["sglang"].splitlines()]


def test_sglang_lines_that_sglang_would_not_start_are_left_out_with_the_reason(four_nodes):
    """Review 370 #3, 373 #2: priced on vLLM at 8,192 tokens a rank, the SGLang workers' --chunked-prefill-size
    131,072 (16 ranks' steps) makes SGLang's default reserve 1.5 MiB x 131,072 = 192 GiB, over an H100's 80 GB; at
    1,024 a rank (16,384) its DP-attention reserve (512 CUDA-graph requests x 16 ranks) still leaves DeepSeek-V3's
    weights no room, as the aggregated plan says of the same line. No sglang lines, SGLang's words said; the control,
    4 x 8 H200s at 1,024 a rank, keeps them."""
    assert "sglang" not in four_nodes["launch"] and "vllm" in four_nodes["launch"]
    assert "sglang: no lines: its prefill workers: SGLang would not start it as written" in four_nodes["launch_note"]
    assert "a 131072-token chunked prefill leaves nothing of 79.19 GiB" in four_nodes["launch_note"]
    common = ["plan", "deepseek-v3", "--disaggregated", "--isl", "2000", "--osl", "100", "--closed-form", "--json",
              "--max-num-batched-tokens", "1024"]  # fmt: skip
    small = json.loads(runner.invoke(app, [*common, "--target", "4x8xh100"]).stdout)
    assert "sglang" not in small["launch"] and "--chunked-prefill-size 16384" in small["launch_note"]
    h200 = json.loads(runner.invoke(app, [*common, "--target", "4x8xh200"]).stdout)
    assert "sglang" in h200["launch"] and "SGLang would not start" not in h200["launch_note"]


def test_deepseek_on_four_h100_nodes_starts_with_dp_workers_over_two_nodes(four_nodes):
    pick = four_nodes["splits"][four_nodes["chosen"]]
    assert (pick["prefill_dp"], pick["decode_dp"], pick["gpus"]) == (16, 16, 32)
    decode = {(d["tp"], d["dp"]): d for d in four_nodes["decode"]}
    dp16, tp16 = decode[1, 16], decode[16, 1]
    assert (dp16["gpus"], dp16["nodes"], tp16["nodes"]) == (16, 2, 2)
    # the MLA latent is whole on each of tp16's ranks but held once per request under DP attention: the same 16 GPUs
    # run several times the requests at once (LMSYS: "4x larger batch sizes enabled by EP")
    assert dp16["dp"] * dp16["admitted"] > 4 * tp16["admitted"]
    notes = " ".join(four_nodes["notes"])
    assert "DP attention over 16 ranks of tp 1" in notes and "experts' group spans nodes" in notes


VLLM_FLAGS = {"--port", "--tensor-parallel-size", "--data-parallel-size", "--enable-expert-parallel",
              "--all2all-backend", "--max-model-len", "--gpu-memory-utilization", "--max-num-seqs", "--max-num-batched-tokens",
              "--kv-transfer-config", "--data-parallel-size-local", "--data-parallel-address",
              "--data-parallel-rpc-port", "--data-parallel-start-rank", "--headless", "--distributed-executor-backend",
              "--nnodes", "--node-rank", "--master-addr", "--master-port"}  # fmt: skip
SGLANG_FLAGS = {"--model-path", "--host", "--disaggregation-mode", "--disaggregation-transfer-backend",
                "--disaggregation-bootstrap-port", "--max-running-requests", "--tp-size", "--dp-size",
                "--attn-dp-size", "--ep-size", "--moe-a2a-backend", "--deepep-mode", "--base-gpu-id", "--port",
                "--context-length", "--chunked-prefill-size", "--nnodes", "--dist-init-addr", "--node-rank"}  # fmt: skip


def _value(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def test_launch_lines_of_dp_workers_over_nodes(four_nodes):
    vllm = [shlex.split(line) for line in four_nodes["launch"]["vllm"].splitlines()]
    sglang = _written_sglang_lines(four_nodes)  # as written, before SGLang's own check leaves them out on H100s
    assert len(vllm) == len(sglang) == 4 + 1  # one line per node of the two 2-node workers, and the proxy / router
    for words in vllm[:-1] + sglang[:-1]:
        assert {w for w in words if w.startswith("--")} <= (VLLM_FLAGS if "vllm" in words else SGLANG_FLAGS)
    prefill_head, prefill_node1, decode_head = vllm[0], vllm[1], vllm[2]
    assert (
        _value(prefill_head, "--data-parallel-size") == "16"
        and _value(prefill_head, "--data-parallel-size-local") == "8"
    )
    assert _value(prefill_head, "--all2all-backend") == "deepep_high_throughput"
    assert _value(decode_head, "--all2all-backend") == "deepep_low_latency"
    assert _value(prefill_node1, "--data-parallel-start-rank") == "8" and "--headless" in prefill_node1
    assert _value(prefill_node1, "--data-parallel-address") == "NODE0_IP"
    assert "VLLM_NIXL_SIDE_CHANNEL_HOST=NODE1_IP" in prefill_node1
    assert _value(decode_head, "--data-parallel-address") == "NODE2_IP"  # the decode worker's own head node
    # SGLang: every GPU in --tp-size, the attention ranks in --attn-dp-size (one replica: --dp-size 1, SGLang 0.5.22
    # on), one line per node of each worker
    modes = [(_value(w, "--disaggregation-mode"), _value(w, "--node-rank"), _value(w, "--dist-init-addr"),
              _value(w, "--deepep-mode")) for w in sglang[:-1]]  # fmt: skip
    assert modes == [
        ("prefill", "0", "NODE0_IP:50000", "normal"), ("prefill", "1", "NODE0_IP:50000", "normal"),
        ("decode", "0", "NODE2_IP:50000", "low_latency"), ("decode", "1", "NODE2_IP:50000", "low_latency"),
    ]  # fmt: skip
    assert all(_value(w, "--tp-size") == _value(w, "--attn-dp-size") == "16" for w in sglang[:-1])
    assert all(_value(w, "--dp-size") == "1" for w in sglang[:-1])
    # no running cap below the pool the decode worker was priced with (trial 289 #1, review 290 #1)
    assert "--max-running-requests" not in sglang[2] and "--max-num-seqs" not in decode_head
    router = sglang[-1]
    assert router.count("--prefill") == 1 and _value(router, "--prefill") == "http://NODE0_IP:30000"
    assert _value(router, "--decode") == "http://NODE2_IP:30100"


def test_launch_lines_of_a_tp_worker_over_nodes(four_nodes):
    from mha_cli.core.cost.disaggregated import DisaggregatedPlan
    from mha_cli.core.cost.disaggregated_launch import disaggregated_launch

    loaded = load_source("deepseek-v3")
    plan = DisaggregatedPlan.model_validate(four_nodes)
    tp_split = plan.splits[plan.chosen].model_copy(update={"prefill_tp": 16, "prefill_dp": 1})
    deployment = merge_deployment(loaded.deployment, model=loaded.model, seq_len=2100, target="4x8xh100")
    lines = disaggregated_launch(plan, tp_split, loaded.served, deployment)
    vllm = [shlex.split(line) for line in lines["vllm"].splitlines()]
    assert _value(vllm[0], "--tensor-parallel-size") == "16" and "--data-parallel-size" not in vllm[0]
    assert (_value(vllm[0], "--nnodes"), _value(vllm[0], "--node-rank"), _value(vllm[0], "--master-addr")) == (
        "2", "0", "NODE0_IP")  # fmt: skip
    assert _value(vllm[1], "--node-rank") == "1" and "--headless" in vllm[1]
    sglang = [shlex.split(line) for line in lines["sglang"].splitlines()]
    assert _value(sglang[0], "--tp-size") == "16" and "--enable-dp-attention" not in sglang[0]
    assert _value(sglang[1], "--node-rank") == "1" and _value(sglang[1], "--dist-init-addr") == "NODE0_IP:50000"


def test_a_decode_line_writes_no_running_cap_below_its_pool(four_nodes):
    """The decode lines capped a worker's running requests at its goodput batch: the mean batch at the load it was
    priced at, so at that load every slot was full and the queue grew (review 290 #1), and a --max-num-seqs under
    vLLM's default sized another pool than the one priced (trial 289 #1). The lines now leave it to the pool, as the
    simulated loop runs it; a --max-num-seqs given is priced and written on every line."""
    from mha_cli.core.cost.disaggregated import DisaggregatedPlan
    from mha_cli.core.cost.disaggregated_launch import disaggregated_launch

    loaded = load_source("deepseek-v3")
    plan = DisaggregatedPlan.model_validate(four_nodes)
    split = plan.splits[plan.chosen]
    assert (split.decode_tp, split.decode_dp) == (1, 16)
    deployment = merge_deployment(loaded.deployment, model=loaded.model, seq_len=2100, target="4x8xh100")
    lines = disaggregated_launch(plan, split, loaded.served, deployment)
    assert "--max-num-seqs" not in lines["vllm"] and "--max-running-requests" not in lines["sglang"]
    capped = deployment.model_copy(update={"max_num_seqs": 64})
    lines = disaggregated_launch(plan, split, loaded.served, capped)
    assert all(_value(shlex.split(line), "--max-num-seqs") == "64" for line in lines["vllm"].splitlines()[:-1])


def test_dp_worker_lines_for_vllm_before_0_11_1_name_its_environment_variable(four_nodes):
    """vLLM 0.10 (generation vllm-v1) has no --all2all-backend: the line sets VLLM_ALL2ALL_BACKEND and the note names it, as the
    aggregated plan's does; the control, the latest vLLM (the fixture's), takes the flag and needs no such note."""
    result = runner.invoke(app, ["plan", "deepseek-v3", "--target", "4x8xh100", "--disaggregated", "--isl", "2000",
                                 "--osl", "100", "--closed-form", "--json", "--engine", "vllm@0.10"])  # fmt: skip
    assert result.exit_code == 0, result.output
    older = json.loads(result.stdout)
    pick = older["splits"][older["chosen"]]
    vllm = older["launch"]["vllm"]  # the line in 0.10's form (core.engine.launch_forms): the variable, not the flag
    assert pick["prefill_dp"] > 1 and "VLLM_ALL2ALL_BACKEND=deepep_high_throughput " in vllm
    assert "--all2all-backend" not in vllm
    assert "VLLM_ALL2ALL_BACKEND=deepep_high_throughput on the prefill lines" in older["launch_note"]
    assert "VLLM_ALL2ALL_BACKEND" not in four_nodes["launch_note"]


def test_dp_worker_lines_for_sglang_0_4_name_enable_deepep_moe(four_nodes):
    """SGLang 0.4.9's DeepEP flag is --enable-deepep-moe (no --moe-a2a-backend before 0.4.10.post2); the control, the
    fixture's lines for the latest SGLang, --moe-a2a-backend deepep."""
    result = runner.invoke(app, ["plan", "deepseek-v3", "--target", "4x8xh100", "--disaggregated", "--isl", "2000",
                                 "--osl", "100", "--closed-form", "--json", "--engine", "sglang@0.4.9"])  # fmt: skip
    assert result.exit_code == 0, result.output
    for line in json.loads(result.stdout)["launch"]["sglang"].splitlines()[:-1]:
        words = shlex.split(line)
        assert "--enable-deepep-moe" in words and "--moe-a2a-backend" not in words
    assert _value(_written_sglang_lines(four_nodes)[0], "--moe-a2a-backend") == "deepep"


def _closed_form(*args: str) -> dict:
    result = runner.invoke(app, ["plan", "deepseek-v3", *args, "--disaggregated", "--closed-form", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_deepseek_on_two_h200_nodes_one_dp_worker_a_node_wins_only_under_an_itl_target():
    # 141 GB H200s hold DeepSeek-V3 in one node: a dp8 prefill worker on node 0, a dp8 decode worker on node 1, the
    # latent crossing InfiniBand NDR (2.816 ms by hand above)
    tight = _closed_form("--target", "2x8xh200", "--isl", "2000", "--osl", "100", "--itl-ms", "50")
    pick = tight["splits"][tight["chosen"]]
    assert (pick["prefill_dp"], pick["decode_dp"], pick["gpus"]) == (8, 8, 16)
    assert pick["transfer_ms"] == pytest.approx((5e-6 + 140_544_000 / 50e9) * 1e3)
    decode_line = " ".join(_written_sglang_lines(tight)[1])  # as written: SGLang's 65,536-token chunk leaves it out
    assert "--host NODE1_IP --disaggregation-mode decode" in decode_line and "sglang" not in tight["launch"]
    # under a 50 ms ITL the aggregated replicas' decodes stall behind prefill chunks: the split wins ...
    assert tight["winner"] == "disaggregated"
    # ... and without a target (control) the aggregated replicas keep every GPU busy and win
    loose = _closed_form("--target", "2x8xh200", "--isl", "2000", "--osl", "100")
    assert loose["winner"] == "aggregated"


def test_the_simulated_loop_runs_each_dp_rank_as_a_worker():
    from mha_cli.core.cost.disaggregated import plan_disaggregated

    model, target, deployment, profiles = _deepseek("2x8xh200")
    plan = plan_disaggregated(model, target, deployment, profiles, isl=2000, osl=100, itl_ms=50, simulate=400)
    pick = plan.splits[plan.chosen]
    # 8 ranks a worker, each its own queue and batch: its decode steps are the closed form's (the batch drifts about
    # its mean); were the 8 ranks' load run through one rank's pool, its batch (and step) would not keep up
    assert plan.simulated is not None and plan.simulated.rate_rps == pytest.approx(pick.rate_rps)
    assert plan.simulated.tpot_ms.median == pytest.approx(pick.itl_ms, rel=0.15)
    decoder = next(d for d in plan.decode if (d.tp, d.dp) == (pick.decode_tp, pick.decode_dp))
    assert plan.simulated.max_running <= decoder.admitted  # one rank's pool
    # control: the same load through one rank of each worker (the ranks not counted) cannot keep up
    from mha_cli.core.cost.disaggregated import pool_times
    from mha_cli.core.serve.disaggregated import simulate_split

    prefill = worker_steps(model, target, deployment, profiles, pick.prefill, isl=2000, osl=100)
    decode = worker_steps(model, target, deployment, profiles, pick.decode, isl=2000, osl=100)
    times = pool_times(prefill, decode, pick.transfer_ms / 1e3)
    one_rank = simulate_split(times, prefill_workers=pick.prefill_workers, decode_workers=pick.decode_workers,
                              rate=pick.rate_rps, osl=100, requests=400)  # fmt: skip
    assert one_rank.ttft_ms.median > 5 * plan.simulated.ttft_ms.median


def test_the_aggregated_dp_replicas_are_priced_with_the_workers_dispatch():
    """The aggregated plan beside the split prices its DP attention replicas with DeepEP, as the DP workers are:
    otherwise the comparison credits disaggregation with DeepEP's saving (DeepSeek-V3 on 4x8xh100 without targets:
    "disaggregated wins 2.49x" with the gather over the network, aggregated 0.86x with DeepEP on both sides).
    Control: the same replica priced with the engines' default gather is slower."""
    from mha_cli.core.cost.goodput import aggregated_layout

    model, target, deployment, profiles = _deepseek("4x8xh100")
    options = {"isl": 2000, "osl": 100, "rate": None, "targets": (None, None), "dp": 16}
    priced = aggregated_layout(model, target, deployment, profiles, 1, **options)
    deepep = aggregated_layout(model, target, deployment.model_copy(update={"moe_a2a_backend": "deepep"}), profiles,
                               1, **options)  # fmt: skip
    assert priced == deepep
    gather = deployment.model_copy(update={"dp": 16, "expert_parallel": True, "moe_a2a_backend": "none"})
    from mha_cli.core.cost.plan import plan_at_rate

    one = target.model_copy(update={"n_devices": 16, "spec": "16xh100-sxm"})
    at_gather = plan_at_rate(model, one, gather, *profiles, isl=2000, osl=100, rate=priced.rate_rps, tp=1)
    assert at_gather.itl_ms > 1.2 * priced.itl_ms


def test_dp_workers_are_priced_with_the_dispatch_their_lines_run(cli):
    """The launch lines of a DP worker run DeepEP (--moe-a2a-backend deepep, --all2all-backend deepep_*): the plan
    prices that dispatch, not the engines' default gather and scatter (core.dp_attention), and says so."""
    found = cli.json("plan", "deepseek-v3", "--target", "2x8xh200", "--disaggregated", "--itl-ms", "50")
    dispatch = [note for note in found["notes"] if "DP attention over" in note]
    assert dispatch and all("all-to-all (DeepEP" in note for note in dispatch)


def test_each_worker_s_line_writes_the_fraction_its_pool_was_priced_at(cli):
    """SGLang's default memory fraction is lower for a DP-attention worker (its reserve per rank): DeepSeek-V3 over two
    8 x H200 nodes prices the tp 8 workers at one fraction and the dp 8 ones at a lower one, and each worker's line
    writes its own; every line wrote the plan's one fraction, the tp 8 worker's, so the dp 8 decode worker was told
    to take more memory than its pool was priced at (trial 318 #5)."""
    found = cli.json("plan", "deepseek-v3", "--target", "2x8xh200", "--engine", "sglang", "--disaggregated",
                     "--isl", "4096", "--osl", "1024", "--ttft-ms", "3000", "--itl-ms", "50")  # fmt: skip
    fractions = {(w["tp"], w["dp"]): w["gpu_memory_utilization"] for w in found["prefill"] + found["decode"]}
    assert fractions[1, 8] < fractions[8, 1] == found["gpu_memory_utilization"]
    for line in found["launch"]["sglang"].splitlines()[:-1]:
        words = shlex.split(line)
        tp = int(words[words.index("--tp-size") + 1])
        dp = int(words[words.index("--attn-dp-size") + 1]) if "--attn-dp-size" in words else 1
        assert float(words[words.index("--mem-fraction-static") + 1]) == fractions[tp // dp, dp]
