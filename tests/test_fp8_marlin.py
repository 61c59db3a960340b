"""vLLM's FP8 Marlin kernel: which GPUs and releases run block-FP8 linear layers through it, and its scales' bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from mha_cli.core.engine.fp8_marlin import marlin_scale_bytes, marlin_scales, runs_fp8_marlin
from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import plan_memory
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target

ROOT = Path(__file__).parent.parent

# Qwen3-8B per layer (d_model 4,096, 32 heads and 8 KV heads of 128, d_ff 12,288), each (in, out) with its Marlin
# group scales ceil(in / 128) x out x 2 B less the checkpoint's ceil(in / 128) x ceil(out / 128) x 4 B:
# q/k/v (4,096, 6,144): 393,216 - 6,144; o (4,096, 4,096): 262,144 - 4,096; gate/up (4,096, 24,576):
# 1,572,864 - 24,576; down (12,288, 4,096): 786,432 - 12,288. 2,967,552 B a layer x 36 layers.
QWEN3_8B_SCALES = 2_967_552 * 36  # 106,831,872 B, 0.0995 GiB


def _qwen3():
    return load_source(str(ROOT / "tests/fixtures/hf_configs/qwen3-8b.json")).model


def test_qwen3_8b_scales_by_hand():
    assert marlin_scale_bytes(_qwen3(), 1) == QWEN3_8B_SCALES


def test_tensor_parallel_halves_every_projection():
    # each projection's in or out halves at tp 2 (4,096 / 2 = 2,048 still a multiple of 128): half the bytes
    assert marlin_scale_bytes(_qwen3(), 2) * 2 == QWEN3_8B_SCALES


@pytest.mark.parametrize(
    ("release", "capability", "runs"),
    [
        ((0, 29), 8.9, True),  # Ada from 0.29.0 (log 2407's L4: MarlinFP8ScaledMMLinearKernel)
        ((0, 28), 8.9, False),  # 0.28.0's is_supported refuses 8.9 without VLLM_TEST_FORCE_FP8_MARLIN: Triton
        ((0, 26), 8.0, True),  # an A100 under the kernel abstraction
        ((0, 10), 8.0, True),  # 0.10.0's Fp8LinearMethod.use_marlin below 8.9 (review 363 #7)
        ((0, 9), 8.0, False),  # not read: not priced
        ((0, 32), 9.0, False),  # Hopper: Cutlass and DeepGEMM come first
        ((0, 32), 12.0, False),  # B12x on a 12.x part
        ((0, 32), 7.0, False),  # below 7.5, no FP8 Marlin
        (None, 8.9, True),  # the latest read
    ],
)
def test_which_gpus_and_releases_run_marlin(release, capability, runs):
    assert runs_fp8_marlin("fp8-block", "vllm", release, "NVIDIA", capability) is runs


def test_only_block_fp8_on_vllm_widens_its_scales():
    assert not runs_fp8_marlin("fp8", "vllm", (0, 29), "NVIDIA", 8.9)  # per-channel: (1, N) scales, not priced
    assert not runs_fp8_marlin("fp8-block", "sglang", (0, 29), "NVIDIA", 8.9)
    assert not runs_fp8_marlin("fp8-block", "vllm", (0, 29), "AMD", 9.4)


def test_a_named_linear_backend_wins():
    assert not runs_fp8_marlin("fp8-block", "vllm", (0, 29), "NVIDIA", 8.9, forced="triton")
    assert runs_fp8_marlin("fp8-block", "vllm", (0, 32), "NVIDIA", 9.0, forced="marlin")


def test_moe_models_with_global_heads_are_not_priced_on_ada():
    model = load_source(str(ROOT / "tests/fixtures/hf_configs/gemma-4-26b-a4b.json")).model
    assert marlin_scales(model, 1, "fp8-block", "vllm", (0, 29), "NVIDIA", 8.9) == (0, None)


def _weights(kernel: str | None) -> int:
    model = _qwen3()
    deployment = DeploymentSpec(
        seq_len=8192, engine="vllm", engine_version="0.29.0", weight_dtype="fp8-block",
        vllm_fp8_linear_kernel=kernel,
    )  # fmt: skip
    kv = kv_footprint(model, seq_len=8192, batch=1, kv_dtype="bf16", tp=1)
    plan = plan_memory(resolve_target("l4"), model=model, kv=kv, weight_dtype="fp8-block", deployment=deployment)
    return plan.weight_bytes_per_device


def test_the_plan_adds_the_scales_on_an_l4_unless_triton_is_named():
    assert _weights(None) - _weights("triton") == QWEN3_8B_SCALES


def test_the_kernel_is_refused_for_other_weights_or_engines():
    with pytest.raises(ValidationError, match="vllm_fp8_linear_kernel"):
        DeploymentSpec(seq_len=4096, weight_dtype="fp8", vllm_fp8_linear_kernel="marlin")
    with pytest.raises(ValidationError, match="vllm_fp8_linear_kernel"):
        DeploymentSpec(seq_len=4096, engine="sglang", weight_dtype="fp8-block", vllm_fp8_linear_kernel="marlin")


def _qwen3_fp8_block_config(tmp_path, engine_version: str, kernel: str):
    """A config file: Qwen3-8B's model with a deployment naming vLLM's block-FP8 linear kernel."""
    model = load_source("qwen3-8b").model.model_dump(mode="json")
    deployment = {
        "engine": "vllm", "engine_version": engine_version, "weight_dtype": "fp8-block",
        "vllm_fp8_linear_kernel": kernel,
    }  # fmt: skip
    path = tmp_path / f"qwen3-8b-{kernel}-{engine_version}.json"
    path.write_text(json.dumps({"model": model, "deployment": deployment}))
    return path


@pytest.mark.parametrize(
    ("release", "kernel", "first"),
    [("0.21.0", "marlin", "0.22.0"), ("0.21.0", "triton", "0.22.0"), ("0.24.0", "humming", "0.25.0")],
)
def test_a_release_without_the_backend_flag_or_kernel_is_refused(cli, tmp_path, release, kernel, first):
    """--linear-backend is first in 0.22.0's engine/arg_utils.py (0.21.0 lacks it); humming is in its LinearBackend
    literal from 0.25.0: the launch line could not ask for the kernel priced, so one line refuses it."""
    result = cli.run("kv", str(_qwen3_fp8_block_config(tmp_path, release, kernel)), "--target", "l4", "--json")
    assert result.exit_code == 2 and result.stdout == ""
    assert f"(first in {first}), which vLLM {release} lacks" in result.stderr and result.stderr.count("\n") == 1


def test_the_launch_line_names_the_kernel_priced(cli, tmp_path):
    """The plan prices Marlin's scales for the kernel named, so the vllm line asks for it: --linear-backend marlin."""
    plan = cli.json("plan", str(_qwen3_fp8_block_config(tmp_path, "0.29.0", "marlin")), "--target", "l4",
                    "--closed-form")  # fmt: skip
    assert " --linear-backend marlin" in plan["launch"]["vllm"]
    humming = cli.json("kv", str(_qwen3_fp8_block_config(tmp_path, "0.25.0", "humming")), "--target", "l4")
    assert humming["kv"]["bytes_per_token"] == 147456  # priced, not refused


# Qwen3-30B-A3B (d_model 2,048, 128 experts of 768, 48 MoE layers), one rank: each expert's w13 (2,048 in, 1,536 out)
# 16 x 1,536 x 2 B less 16 x 12 x 4 B = 48,384 B and w2 (768 in, 2,048 out) 6 x 2,048 x 2 B less 6 x 16 x 4 B =
# 24,192 B: 72,576 B an expert (trial 361 #1's hand count) x 128 x 48 layers.
QWEN3_30B_EXPERT_SCALES = 72_576 * 128 * 48  # 445,906,944 B, 0.415 GiB
# its attention (32 heads, 4 KV heads of 128): q/k/v (2,048, 5,120) 16 x 5,120 x 2 - 16 x 40 x 4 = 161,280 B and
# o (4,096, 2,048) 32 x 2,048 x 2 - 32 x 16 x 4 = 129,024 B a layer x 48
QWEN3_30B_ATTENTION_SCALES = (161_280 + 129_024) * 48  # 13,934,592 B


def test_an_ampere_part_runs_block_fp8_experts_through_marlin_and_holds_its_scales():
    """Triton's fused MoE takes fp8 only from 8.9: on an A100 the experts run Marlin, whose scales were left out
    while the dense layers' were priced (trial 361 #1). An L40S (8.9) runs them in Triton: the control, none."""
    from mha_cli.core.engine.fp8_marlin import moe_marlin_scale_bytes, runs_fp8_marlin_moe
    from mha_cli.core.tensor_parallel import ExpertLayout

    model = load_source("qwen3-30b-a3b").model
    assert moe_marlin_scale_bytes(model, ExpertLayout(1)) == QWEN3_30B_EXPERT_SCALES
    assert marlin_scales(model, 1, "fp8-block", "vllm", (0, 34), "NVIDIA", 8.0)[0] == (
        QWEN3_30B_EXPERT_SCALES + QWEN3_30B_ATTENTION_SCALES
    )
    assert runs_fp8_marlin_moe("fp8-block", "vllm", None, "NVIDIA", 8.0)
    assert not runs_fp8_marlin_moe("fp8-block", "vllm", (0, 34), "NVIDIA", 8.9)  # Triton takes fp8 on Ada
    assert runs_fp8_marlin_moe("fp8-block", "vllm", (0, 10), "NVIDIA", 8.0)  # Fp8MoEMethod.use_marlin in 0.10.0
    assert not runs_fp8_marlin_moe("fp8-block", "vllm", (0, 9), "NVIDIA", 8.0)  # not read: not priced
    assert marlin_scales(model, 1, "fp8-block", "vllm", (0, 34), "NVIDIA", 9.0) == (0, None)  # Hopper: neither
    # expert parallel over 4 ranks: 32 whole experts a rank
    assert moe_marlin_scale_bytes(model, ExpertLayout(4, whole=True)) == QWEN3_30B_EXPERT_SCALES // 4


def test_the_a100_plan_holds_the_expert_scales(cli):
    a100 = cli.json("kv", "qwen3-30b-a3b", "--weight-dtype", "fp8-block", "--target", "a100", "--seq", "8k")
    h100 = cli.json("kv", "qwen3-30b-a3b", "--weight-dtype", "fp8-block", "--target", "h100", "--seq", "8k")
    extra = a100["memory"]["weight_bytes_per_device"] - h100["memory"]["weight_bytes_per_device"]
    assert extra == QWEN3_30B_EXPERT_SCALES + QWEN3_30B_ATTENTION_SCALES
