"""vLLM's kept fused-MoE workspace (``core.engine.moe_workspace``): its bytes counted by hand from config.json and
``TritonExperts.workspace_shapes`` (workspace1 (M, top_k, max(N / 2, K)), workspace2 (M, top_k, max(N, K)), 2 B), the
releases and kernels that keep it, and the profiling peak it sits under."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.engine.activation import profile_peak_bytes, sampler_peak_bytes
from mha_cli.core.engine.moe_workspace import moe_workspace_bytes, runs_triton_experts
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from tests.spec_paths import copy_with

CONFIGS = Path(__file__).parent / "fixtures" / "hf_configs"


def _model(name: str):
    return load_source(str(CONFIGS / f"{name}.json")).model


def test_gemma4_workspace_by_hand():
    """gemma-4-26B-A4B: top_k 8, moe_intermediate_size 704 (N 1,408), hidden 2,816: both buffers are M x 8 x 2,816 x
    2 B, 90,112 B a token; 0.172 GiB at 2,048 tokens, 1.375 GiB at 16,384 (the brief's 0.17 and 1.38)."""
    model = _model("gemma-4-26b-a4b")
    assert moe_workspace_bytes(model, tokens=2048, tp=1, release=(0, 29)) == 2 * 2048 * 8 * 2816 * 2
    assert moe_workspace_bytes(model, tokens=16_384, tp=1, release=(0, 29)) == 2 * 16_384 * 8 * 2816 * 2
    assert moe_workspace_bytes(model, tokens=16_384, tp=1, release=(0, 29)) / 2**30 == pytest.approx(1.375)


def test_wide_experts_take_the_gate_up_width():
    """Experts wider than d_model: workspace1 is M x top_k x d_ff (the activation's output), workspace2 M x top_k x 2
    d_ff (gate + up); Qwen3-30B-A3B (hidden 2,048, top_k 8) with experts of 4,096 at tp 2: 2,048 and 4,096 wide."""
    model = _model("qwen3-30b-a3b")
    wide = copy_with(model, {"block.moe": model.block.moe.model_copy(update={"d_ff_expert": 4096})})
    assert moe_workspace_bytes(wide, tokens=100, tp=2, release=None) == 100 * 8 * 2 * (2048 + 4096)
    # at tp 4 the rank's experts (1,024) are narrower than d_model: both buffers d_model wide
    assert moe_workspace_bytes(wide, tokens=100, tp=4, release=None) == 2 * 100 * 8 * 2 * 2048


def test_each_buffer_rounds_up_to_256_bytes():
    """``get_simultaneous`` aligns each view to 256 B: 1 token x 8 x 2,816 x 2 B = 45,056 B -> 45,056 (176 x 256),
    3 tokens of Qwen3-30B-A3B x 8 x 2,048 x 2 B = 98,304 (already aligned); a 3-token, top-1 toy rounds up."""
    model = _model("qwen3-30b-a3b")
    toy = copy_with(model, {"block.moe": model.block.moe.model_copy(update={"n_active_experts": 1})})
    per = 3 * 1 * 2048 * 2  # 12,288 B: aligned
    assert moe_workspace_bytes(toy, tokens=3, tp=1, release=None) == 2 * per
    odd = copy_with(toy, {"d_model": 2050})  # 3 x 2,050 x 2 = 12,300 B -> 12,544 each
    assert moe_workspace_bytes(odd, tokens=3, tp=1, release=None) == 2 * 12_544


def test_chunked_to_16k_tokens_before_0_18():
    """0.14-0.17's modular kernel chunks M by VLLM_FUSED_MOE_CHUNK_SIZE (16,384); 0.18 does not."""
    model = _model("gemma-4-26b-a4b")
    assert moe_workspace_bytes(model, tokens=32_768, tp=1, release=(0, 17)) == 2 * 16_384 * 8 * 2816 * 2
    assert moe_workspace_bytes(model, tokens=32_768, tp=1, release=(0, 18)) == 2 * 32_768 * 8 * 2816 * 2


def test_dense_model_has_none():
    assert moe_workspace_bytes(_model("qwen3-8b"), tokens=2048, tp=1, release=None) == 0


@pytest.mark.parametrize(
    ("release", "weights", "gpu", "kept"),
    [
        ((0, 13), "bf16", "l40s", False),  # the functional fused_experts: caches freed after each call
        ((0, 14), "bf16", "l40s", True),
        ((0, 19), "bf16", "h100", True),  # FlashInfer's MoE only with VLLM_USE_FLASHINFER_MOE_FP16
        ((0, 19), "bf16", "b200", True),
        ((0, 22), "bf16", "h100", False),  # 0.20-0.26: FlashInfer CUTLASS first where it runs (9.0, 10.x, 12.x)
        ((0, 22), "bf16", "a100", True),
        ((0, 29), "bf16", "h100", True),  # 0.27+: FlashInfer moved behind Triton on capability 9.x
        ((0, 29), "bf16", "b200", False),  # FlashInfer first on Blackwell
        ((0, 29), "fp8", "l40s", True),  # Ada: Triton is the first fp8 backend that runs
        ((0, 29), "fp8", "a100", False),  # no fp8 tensor cores: Marlin
        ((0, 29), "fp8", "h100", False),  # Hopper fp8: DeepGEMM/CUTLASS/FlashInfer, not priced
        ((0, 29), "mxfp4", "l40s", False),  # Marlin / triton_kernels: other shapes
        ((0, 29), "awq", "a100", False),
        ((0, 29), "bf16", "mi300x", False),  # AITER
        (None, "bf16", "a100", True),
    ],
)  # fmt: skip
def test_which_kernel_keeps_it(release, weights, gpu, kept):
    assert runs_triton_experts(release, weights, resolve_target(gpu).target) is kept


def test_the_workspace_sits_under_the_sampler_peak():
    """Kept after the first MoE layer, the workspace is live at the sampler's peak and every later layer's: the
    profile is it plus the larger of the sampler and the forward without its MoE caches (gemma-4: the q/k/v width,
    (16 + 16) x 256 = 8,192, plus 2 x 2,816: 27,648 B a token), not the larger of the MoE forward and the sampler."""
    model = _model("gemma-4-26b-a4b")
    workspace = moe_workspace_bytes(model, tokens=2048, tp=1, release=(0, 29))
    sampler = sampler_peak_bytes(model, max_num_batched_tokens=2048, max_num_seqs=256)
    peak = profile_peak_bytes(model, max_num_batched_tokens=2048, max_num_seqs=256, tp=1, moe_workspace=workspace)
    assert peak == workspace + max(2048 * 27_648, sampler)
    assert profile_peak_bytes(model, max_num_batched_tokens=2048, max_num_seqs=256, tp=1) == max(2048 * 90_112, sampler)


def _plan(release: str, gpu: str, weights: str = "fp8"):
    source = load_source(str(CONFIGS / "gemma-4-26b-a4b.json"))
    target = resolve_target(gpu).target
    deployment = DeploymentSpec(
        seq_len=4096, tp=1, engine="vllm", engine_version=release, max_num_batched_tokens=2048, max_num_seqs=256,
        weight_dtype=weights, gpu_memory_utilization=0.92,
    )  # fmt: skip
    settings = resolve_settings(deployment, target, 1)
    kv = kv_footprint(source.model, seq_len=4096, kv_dtype="bf16", tp=1)
    return plan_engine(source.model, kv, target, settings, weights_bytes_per_rank=25 * 2**30, sequences_per_replica=1)


def test_plan_takes_it_from_the_budget_by_release():
    """vLLM 0.29.0 on an L40S (the logs of group new-21): the activation line is the workspace plus the dummy
    sampler's greedy peak (Model Runner V2: 256 rows x 262,144 logits x 2 B) and says so; an nvfp4 checkpoint (another
    kernel) keeps the transient MoE forward (2,048 x 90,112 B), as does fp8 on an H100."""
    workspace, sampler = 2 * 2048 * 8 * 2816 * 2, 256 * 262_144 * 2
    new, control, hopper = _plan("0.29.0", "l40s"), _plan("0.29.0", "l40s", "nvfp4"), _plan("0.29.0", "h100")
    assert new.activation_peak_bytes == workspace + sampler
    assert control.activation_peak_bytes == 2048 * 90_112
    line = next(line for line in new.budget if line.label == "activation peak (profiling)")
    assert "fused-MoE workspace" in line.how and -line.bytes == new.activation_peak_bytes
    assert "fused-MoE workspace" not in next(line.how for line in hopper.budget if line.label.startswith("activation"))
