"""Which vLLM model runner profiles a model, by release (``core.engine.model_runner``), and its dummy sampler's peak."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.engine.activation import sampler_peak_bytes
from mha_cli.core.engine.generations import vllm_memory_rules_note
from mha_cli.core.engine.model_runner import estimates_cuda_graphs, profiling_sampler, runs_v2_model_runner
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.sampler import bytes_per_logit
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.safe_yaml import load_yaml_file
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import rank_weight_bytes

ROOT = Path(__file__).parent.parent
CONFIGS = ROOT / "tests/fixtures/hf_configs"
LOGS = {log["id"]: log for log in load_yaml_file(ROOT / "tests/fixtures/engine_logs.yaml")}


def _model(name: str):
    return load_source(str(CONFIGS / name)).model


@pytest.mark.parametrize(
    ("config", "runs"),
    [
        # dense Qwen3 (listed from 0.22), dense Qwen2 (not listed: V2 from 0.25), Qwen3-MoE (not listed: V2 from
        # 0.29), DeepSeek-V2 (a listed MoE from 0.24), Jamba (hybrid: V2 from 0.29)
        ("qwen3-32b.json", {(0, 21): False, (0, 22): True, (0, 23): True, (0, 24): True, (0, 27): True, (0, 29): True}),
        ("qwen2.5-7b.json", {(0, 21): False, (0, 24): False, (0, 25): True, (0, 28): True, (0, 32): True}),
        ("qwen3-235b-a22b-instruct-2507.json", {(0, 24): False, (0, 28): False, (0, 29): True}),
        ("deepseek-v2-lite.json", {(0, 21): False, (0, 24): True, (0, 26): True, (0, 29): True}),
        ("jamba-mini-1.5.json", {(0, 24): False, (0, 27): False, (0, 29): True}),
    ],
)
def test_the_release_and_model_pick_the_runner(config, runs):
    """``VllmConfig.use_v2_model_runner`` (``config/vllm.py``) by release, read in the 0.21.0-0.32.0 wheels."""
    model = _model(config)
    assert {release: runs_v2_model_runner(release, model) for release in runs} == runs
    assert runs_v2_model_runner(None, model)  # the latest read, 0.32: every model


def test_022_and_023_keep_a_quantized_checkpoint_on_v1():
    """0.22-0.23's ``_is_default_v2_model_runner_model``: a listed architecture, ``not model_config.is_moe and not
    model_config.is_quantized``; 0.22 lists Qwen3 alone, 0.23 adds Llama and Mistral; 0.24 drops the quantization
    test. A quantized Qwen3 stays on the V1 runner, which estimates its graphs (``config/vllm.py``, 0.22.0-0.24.0)."""
    qwen3, llama = _model("qwen3-32b.json"), _model("llama-3.1-8b.json")
    assert [runs_v2_model_runner((0, 22), qwen3, quantized) for quantized in (False, True)] == [True, False]
    assert [runs_v2_model_runner((0, 23), qwen3, quantized) for quantized in (False, True)] == [True, False]
    assert runs_v2_model_runner((0, 24), qwen3, quantized=True)
    assert [runs_v2_model_runner(release, llama) for release in ((0, 22), (0, 23))] == [False, True]
    assert not estimates_cuda_graphs((0, 22), qwen3) and estimates_cuda_graphs((0, 22), qwen3, quantized=True)
    assert profiling_sampler("flashinfer", (0, 23), qwen3, quantized=True) == "flashinfer"
    assert profiling_sampler("flashinfer", (0, 23), qwen3) == "v2-fp32-copy"
    spec = DeploymentSpec(engine="vllm", engine_version="0.23.0", weight_dtype="awq")
    target = resolve_target("h100").target
    assert resolve_settings(spec, target, 1).quantized_checkpoint
    assert not resolve_settings(spec.model_copy(update={"weight_dtype": "bf16"}), target, 1).quantized_checkpoint


def test_v2_runs_the_dummy_sampler_greedily():
    """0.22-0.26 copy the logits to fp32 first (2 + 4 B); 0.27 and later leave them untouched (2 B); the V1 runner
    keeps the release's path."""
    qwen3 = _model("qwen3-32b.json")
    assert profiling_sampler("flashinfer", (0, 24), qwen3) == "v2-fp32-copy"
    assert profiling_sampler("flashinfer", (0, 27), qwen3) == profiling_sampler("triton", (0, 32), qwen3) == "v2-greedy"
    assert profiling_sampler("flashinfer", (0, 21), qwen3) == "flashinfer"
    assert profiling_sampler("flashinfer", (0, 24), _model("qwen2.5-7b.json")) == "flashinfer"


def test_log_605_by_hand():
    """engine_logs.yaml 605 (vLLM 0.27.1, Qwen3-32B at tp 2 on RTX PRO 6000 Server cards; the log's "Model loading
    took" line is ``v1/worker/gpu/model_runner.py``'s, Model Runner V2's). Its dummy sampler holds 1,024 x 151,936
    x 2 B = 0.29 GiB, under the forward's 8,192 x 2 B x (2 x 5,120 + 3 x 25,600 / 2) = 0.74 GiB, so the activation
    line is the forward's; the 16 B Triton rule charged 2.32 GiB."""
    log = LOGS[605]
    model = _model("qwen3-32b.json")
    target = resolve_target(log["target"]).target
    spec = DeploymentSpec(
        seq_len=log["max_model_len"], tp=2, engine="vllm", engine_version=log["version"],
        gpu_memory_utilization=log["utilisation"], kv_dtype="bf16",
    )  # fmt: skip
    settings = resolve_settings(spec, target, 2)
    assert (settings.generation, settings.sampler, settings.release) == ("vllm-0.21", "flashinfer", (0, 27))
    kv = kv_footprint(model, seq_len=log["max_model_len"], kv_dtype="bf16", tp=2)
    plan = plan_engine(model, kv, target, settings, weights_bytes_per_rank=rank_weight_bytes(model, 2, "bf16"),
                       sequences_per_replica=1)  # fmt: skip
    forward = 8192 * 2 * (2 * 5120 + 3 * 25_600 // 2)
    assert plan.activation_peak_bytes == forward == 796_917_760 > 1024 * 151_936 * 2
    activation = next(line for line in plan.budget if line.label.startswith("activation"))
    assert "forward over 8192 tokens" in activation.how
    # 0.27.1's V2 ``profile_cudagraph_memory`` returns 0: no graph line; the pool is the budget less weights, RoPE,
    # activation and non-torch memory, and the 51 + 51 graphs (1.19 GiB) are captured after it
    assert not plan.cuda_graph_in_budget and not any(line.label.startswith("CUDA graphs") for line in plan.budget)
    graphs = plan.cuda_graph_estimate
    assert graphs is not None and not graphs.before_pool
    assert (graphs.piecewise_graphs, graphs.full_graphs, round(graphs.bytes / 2**30, 2)) == (51, 51, 1.19)
    usable = int(target.device_memory_bytes * log["utilisation"])
    rope = next(line for line in plan.budget if line.label.startswith("RoPE")).bytes
    # and, from 0.27, V2's sampler tables (``core.engine.v2_sampler_state``: 1,024 x (151,936 + 4,748 + 4,749 +
    # 4,481) x 4 B)
    sampler = 1024 * (151_936 + 4748 + 4749 + 4481) * 4
    assert plan.available_kv_bytes == (
        usable - plan.weights_bytes_per_rank + rope - forward - plan.non_torch_bytes - sampler
    )


@pytest.mark.parametrize(
    ("config", "estimates"),
    [
        # Qwen3 runs V2 from 0.22 (no estimate to 0.28), Qwen2 from 0.25, an unlisted MoE only from 0.29: the V1
        # runner estimates from 0.21 whatever the release
        ("qwen3-32b.json", {(0, 21): True, (0, 22): False, (0, 24): False, (0, 28): False, (0, 29): True, None: True}),
        ("qwen2.5-7b.json", {(0, 24): True, (0, 25): False, (0, 28): False, (0, 29): True, (0, 32): True}),
        ("qwen3-235b-a22b-instruct-2507.json", {(0, 24): True, (0, 27): True, (0, 28): True, (0, 29): True}),
    ],
)
def test_v2_estimates_its_cuda_graphs_from_029(config, estimates):
    """``profile_cudagraph_memory`` of ``v1/worker/gpu/model_runner.py`` is ``return 0`` in the 0.22.0-0.28.0 wheels
    and calls ``cudagraph_utils.profile_cudagraph_memory`` in 0.29.0-0.32.0; the V1 runner's estimates from 0.21."""
    model = _model(config)
    assert {release: estimates_cuda_graphs(release, model) for release in estimates} == estimates


def test_a_draft_model_or_eagle3_at_pp_keeps_v1_before_0_30():
    """``_get_v2_model_runner_unsupported_features`` (``config/vllm.py``, read in 0.22.0, 0.24.0, 0.27.1, 0.28.0,
    0.29.0): V2 speculates only with eagle, eagle3, mtp (and dflash, dspark), and not eagle3 with pp > 1; otherwise
    ``use_v2_model_runner`` falls back to V1, whose graphs are estimated and whose dummy run keeps its sampler. 0.32.0
    lists neither limit (0.30-0.31: ``test_speculation_by_release_0_29_to_0_32``)."""
    qwen3 = _model("qwen3-32b.json")
    assert not runs_v2_model_runner((0, 27, 1), qwen3, speculative="draft_model")
    assert not runs_v2_model_runner((0, 29), qwen3, speculative="eagle3", pp=2)
    assert runs_v2_model_runner((0, 29), qwen3, speculative="eagle3")
    assert runs_v2_model_runner((0, 27), qwen3, speculative="mtp", pp=2)
    assert runs_v2_model_runner(None, qwen3, speculative="draft_model")
    assert runs_v2_model_runner((0, 32), qwen3, speculative="eagle3", pp=2)
    assert estimates_cuda_graphs((0, 24), qwen3, speculative="draft_model")
    assert not estimates_cuda_graphs((0, 24), qwen3, speculative="eagle")
    assert profiling_sampler("flashinfer", (0, 27), qwen3, speculative="draft_model") == "flashinfer"


@pytest.mark.parametrize(
    ("release", "draft_model_v2", "eagle3_pp_v2"),
    [((0, 29), False, False), ((0, 30), False, True), ((0, 31), True, True), ((0, 32), True, True)],
)
def test_speculation_by_release_0_29_to_0_32(release, draft_model_v2, eagle3_pp_v2):
    """``_get_v2_model_runner_unsupported_features`` by release (``config/vllm.py``): 0.29.0 keeps eagle3 at pp > 1
    and any method but eagle, eagle3, mtp (dflash, dspark) on V1; 0.30.0 lists ngram, ngram_gpu, draft_model,
    suffix, medusa, mlp_speculator, custom_class (no pp limit); 0.31.0 drops draft_model; 0.32.0 drops ngram."""
    qwen3 = _model("qwen3-32b.json")
    assert runs_v2_model_runner(release, qwen3, speculative="draft_model") is draft_model_v2
    assert runs_v2_model_runner(release, qwen3, speculative="eagle3", pp=2) is eagle3_pp_v2
    assert runs_v2_model_runner(release, qwen3, speculative="mtp", pp=2)
    expected = "v2-greedy" if draft_model_v2 else "flashinfer"
    assert profiling_sampler("flashinfer", release, qwen3, speculative="draft_model") == expected


def test_a_draft_model_plan_on_0_30_is_v1s_and_on_0_31_v2s():
    """vLLM 0.30 profiles a draft_model drafter on the V1 runner (no V2 sampler tables, FlashInfer's dummy run,
    graphs at V1's sizes); 0.31 on Model Runner V2 (its sampler tables in the budget)."""
    model = _model("qwen3-32b.json")
    target = resolve_target("h100").target
    kv = kv_footprint(model, seq_len=4096, batch=1, kv_dtype="bf16", tp=1)
    labels = {}
    for release in ("0.30.0", "0.31.0"):
        settings = resolve_settings(DeploymentSpec(engine="vllm", engine_version=release), target, 1)
        plan = plan_engine(
            model, kv, target, settings, weights_bytes_per_rank=rank_weight_bytes(model, 1, "fp8"),
            sequences_per_replica=1, speculative_tokens=2, speculative_method="draft_model",
        )  # fmt: skip
        assert plan.cuda_graph_in_budget
        labels[release] = " ".join(line.label for line in plan.budget).lower()
    assert "sampler" not in labels["0.30.0"] and "sampler" in labels["0.31.0"]


def test_the_engine_plan_reads_the_speculative_method():
    """The plan for a draft model on vLLM 0.27 is the V1 runner's: graphs in the budget, no V2 sampler tables."""
    model = _model("qwen3-32b.json")
    target = resolve_target("h100").target
    settings = resolve_settings(DeploymentSpec(engine="vllm", engine_version="0.27.1"), target, 1)
    kv = kv_footprint(model, seq_len=4096, batch=1, kv_dtype="bf16", tp=1)
    weights = rank_weight_bytes(model, 1, "fp8")
    plans = {
        method: plan_engine(
            model, kv, target, settings, weights_bytes_per_rank=weights, sequences_per_replica=1,
            speculative_tokens=2, speculative_method=method,
        )
        for method in ("eagle", "draft_model")
    }  # fmt: skip
    assert not plans["eagle"].cuda_graph_in_budget and plans["draft_model"].cuda_graph_in_budget
    labels = {method: " ".join(line.label for line in plan.budget) for method, plan in plans.items()}
    assert "sampler" in labels["eagle"].lower() and "sampler" not in labels["draft_model"].lower()


def test_rocm_keeps_deepseek_v32_and_glm_dsa_on_v1_in_0_29_to_0_31():
    """``ROCM_DEFAULT_MRV1_ARCHITECTURES`` (``config/vllm.py``): DeepSeek-V3.2 (and V4) on ROCm stay on the V1 runner in
    0.29, GLM-5's ``GlmMoeDsaForCausalLM`` too in 0.30-0.31; 0.32.0 has no list, and 0.22-0.28 check no platform for
    any family here (0.27 drops Kimi-K3, 0.28 DeepSeek-V4 on ROCm: neither is one)."""
    v32 = _model("deepseek-v3.2-exp.json")
    glm_dsa = v32.model_copy(update={"family": "glm_moe_dsa"})
    qwen3 = _model("qwen3-8b.json")
    on_rocm = {release: runs_v2_model_runner(release, v32, rocm=True) for release in ((0, 29), (0, 31), (0, 32), None)}
    assert on_rocm == {(0, 29): False, (0, 31): False, (0, 32): True, None: True}
    assert [runs_v2_model_runner((0, 29), glm_dsa, rocm=True), runs_v2_model_runner((0, 30), glm_dsa, rocm=True)] == [
        True, False,
    ]  # fmt: skip
    assert runs_v2_model_runner((0, 29), v32) and runs_v2_model_runner((0, 30), glm_dsa)  # CUDA: every model
    for release in ((0, 22), (0, 24), (0, 27), (0, 28), (0, 29), (0, 31), None):
        assert runs_v2_model_runner(release, qwen3, rocm=True) == runs_v2_model_runner(release, qwen3)
    assert estimates_cuda_graphs((0, 29), v32, rocm=True) and profiling_sampler("triton", (0, 30), v32, rocm=True) == (
        "triton"
    )


def test_an_amd_plan_reads_the_rocm_default():
    """On an MI300X, vLLM 0.29 profiles DeepSeek-V3.2 on the V1 runner: no V2 sampler tables; on an H100, V2's."""
    model = _model("deepseek-v3.2-exp.json")
    kv = kv_footprint(model, seq_len=4096, batch=1, kv_dtype="bf16", tp=8)
    plans = {}
    for name in ("mi300x", "h100"):
        target = resolve_target(name).target
        settings = resolve_settings(DeploymentSpec(engine="vllm", engine_version="0.29.0", tp=8), target, 8)
        plans[name] = plan_engine(model, kv, target, settings, weights_bytes_per_rank=rank_weight_bytes(model, 8, "fp8"),
                                  sequences_per_replica=1)  # fmt: skip
    labels = {name: " ".join(line.label for line in plan.budget).lower() for name, plan in plans.items()}
    assert "sampler" not in labels["mi300x"] and "sampler" in labels["h100"]


def _qwen3_8b_on_h100(release: str):
    """Qwen3-8B's vLLM ``release`` plan on one H100 at 4,096 tokens, the engine's defaults."""
    model = _model("qwen3-8b.json")
    target = resolve_target("h100").target
    kv = kv_footprint(model, seq_len=4096, batch=1, kv_dtype="bf16", tp=1)
    settings = resolve_settings(DeploymentSpec(engine="vllm", engine_version=release), target, 1)
    return plan_engine(model, kv, target, settings, weights_bytes_per_rank=rank_weight_bytes(model, 1, "bf16"),
                       sequences_per_replica=1)  # fmt: skip


def test_0_33_samples_the_dummy_run_a_second_time_with_warmup_parameters():
    """0.33.0's V2 ``_dummy_sampler_run`` (read in the 0.33.0 and 0.34.0 wheels) samples the logits again with
    ``for_sampler_warmup()``: an fp32 copy, then FlashInfer's masked logits and softmax where the GPU runs FlashInfer
    (2 + 4 + 4 + 4 = 14 B a bf16 logit), the Triton in-place mask elsewhere (2 + 4 = 6 B); no release typed is the
    latest read, 0.33."""
    qwen3 = _model("qwen3-32b.json")
    assert profiling_sampler("flashinfer", (0, 32), qwen3) == "v2-greedy"
    assert profiling_sampler("flashinfer", (0, 33), qwen3) == profiling_sampler("flashinfer", None, qwen3)
    assert profiling_sampler("flashinfer", (0, 33), qwen3) == "v2-flashinfer"
    assert profiling_sampler("triton-any-rows", (0, 34), qwen3, rocm=True) == "v2-triton"
    assert [bytes_per_logit(path, 1_024) for path in ("v2-greedy", "v2-flashinfer", "v2-triton")] == [
        2, 14, 6,
    ]  # fmt: skip
    model = _model("qwen3-8b.json")
    peaks = {release: _qwen3_8b_on_h100(release).activation_peak_bytes for release in ("0.32.0", "0.33.0")}
    plan = _qwen3_8b_on_h100("0.33.0")
    rows = min(plan.max_num_seqs, plan.max_num_batched_tokens)  # 1,024 dummy requests on an H100
    warmup = sampler_peak_bytes(
        model, max_num_batched_tokens=plan.max_num_batched_tokens, max_num_seqs=plan.max_num_seqs,
        sampler="v2-flashinfer",
    )  # fmt: skip
    assert (rows, warmup) == (1_024, 1_024 * 151_936 * 14)
    assert peaks["0.33.0"] == warmup > peaks["0.32.0"]


def test_a_release_past_0_33_says_it_is_priced_with_0_33s_memory_rules():
    """A plan for a release after the newest whose memory code was read (0.33) says 0.33's rules priced it; 0.33,
    0.32 and no release say nothing."""
    assert [vllm_memory_rules_note(release) for release in ((0, 33), (0, 32), None)] == [None, None, None]
    assert "priced with 0.33's memory rules" in vllm_memory_rules_note((0, 34))
    notes = {release: " ".join(_qwen3_8b_on_h100(release).notes) for release in ("0.33.0", "0.34.0")}
    assert "memory rules" not in notes["0.33.0"] and "vLLM 0.34 is priced with 0.33's memory rules" in notes["0.34.0"]
