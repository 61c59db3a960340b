"""vLLM's MXFP4 MoE kernels read and compute gpt-oss's experts at their padded shapes every step
(``core.cost.work.kernel_expert``), and the pipeline stages and the fit's last way carry the memory plan's padded
weights. Counted by hand from the shapes ``Mxfp4MoEMethod.create_weights`` allocates (``tests/test_mxfp4_moe.py``)."""

from __future__ import annotations

import json

from mha_cli.core.cost.plan import LayoutPlans, serving_case
from mha_cli.core.cost.priors import datasheet_profile
from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.cost.work import decode_shape
from mha_cli.core.engine.generations import generation_of
from mha_cli.core.engine.mxfp4_moe import MARLIN, TRTLLM_GEN
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import plan_memory
from mha_cli.core.pipeline import stage_layout, stage_model, stage_sides
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import deployment_rank_bytes
from tests.conftest import reference_hf_config

LAYERS, TOUCHED = 36, 4
"""gpt-oss-120b: 36 MoE layers; one token visits 4 of the 128 experts in each."""
# Marlin (H 2,880 -> 3,072, I 2,880 -> 2,944; bf16 biases): the fused gate-and-up 5,888 rows x (1,536 value bytes +
# 96 scales + 2 bias bytes), the down 3,072 x (1,472 + 92 + 2)
MARLIN_W13, MARLIN_W2 = 5888 * (1536 + 96 + 2), 3072 * (1472 + 92 + 2)  # 9,620,992 and 4,810,752 B
# TRT-LLM-gen to 0.26 (H and I to 3,072; fp32 biases): 6,144 x (1,536 + 96 + 4) and 3,072 x (1,536 + 96 + 4)
TRTLLM_W13, TRTLLM_W2 = 6144 * (1536 + 96 + 4), 3072 * (1536 + 96 + 4)  # 10,051,584 and 5,025,792 B
# the checkpoint as the step priced it before (and SGLang still does): 2,880 x 2,880 at 4.25 bits, no biases
CHECKPOINT_MATRIX = 2880 * (1440 + 90)  # 4,406,400 B, each gate half, up half and down


def _gpt_oss():
    return import_hf_config(json.loads(reference_hf_config("gpt-oss-120b").read_text()), name="gpt-oss-120b").model


def _deployment(engine: str, **extra) -> DeploymentSpec:
    name, release = engine.split("@")
    return DeploymentSpec(
        seq_len=2048, tp=1, engine=name, engine_version=release, engine_generation=generation_of(engine).id,
        weight_dtype="mxfp4", **extra,
    )  # fmt: skip


def decode_expert_step(deployment: DeploymentSpec, target: str, tp: int) -> tuple[float, float, float, object]:
    """(weight bytes, activation bytes, FLOPs, the memory plan's expert kernel) of one decode step's routed experts of
    gpt-oss-120b at batch 1 on a rank of ``target`` at ``tp``, as ``mha plan`` builds its case (memory plan,
    ``serving_case``, ``Stepper``)."""
    model, resolved = _gpt_oss(), resolve_target(target)
    kv = kv_footprint(model, seq_len=2048, batch=1, kv_dtype="bf16", tp=tp)
    memory = plan_memory(resolved, model=model, kv=kv, weight_dtype="mxfp4", deployment=deployment)
    case = serving_case(model, deployment, memory, isl=1024, osl=1024, concurrency=1, pp=1, replicas=1, experts=None)
    ops = [op for op in Stepper(case, datasheet_profile(resolved.target)).ops(decode_shape(1, 1024)) if
           op.name.startswith("expert")]  # fmt: skip
    shapes = [map(int, op.name.removeprefix("expert ").split("x")) for op in ops]  # "expert OUTxIN"
    activations = sum(op.count * TOUCHED * (out + inp) * 2 for op, (out, inp) in zip(ops, shapes, strict=True))
    total = sum(op.count * op.bytes for op in ops)
    return total - activations, activations, sum(op.count * op.flops for op in ops), memory.expert_kernel


def _decode_experts(engine: str, target: str) -> tuple[float, float, float]:
    """``decode_expert_step`` at tp 1 on ``engine`` (``name@release``), less the kernel."""
    return decode_expert_step(_deployment(engine), target, tp=1)[:3]


def test_marlin_decode_step_reads_and_computes_the_padded_experts_on_an_h100():
    """vLLM 0.11.2 on an H100 (Marlin; engine log 1201): each of the 4 experts a token visits in each of the 36 layers
    is read whole at Marlin's shapes, biases included, and multiplied at them (K 3,072: the activations padded by
    ``FusedMoE.forward_native``; N 2 x 2,944 and 3,072)."""
    weights, activations, flops = _decode_experts("vllm@0.11.2", "h100")
    assert weights == LAYERS * TOUCHED * (MARLIN_W13 + MARLIN_W2) == 2_078_171_136  # checkpoint: 1,903,564,800
    assert activations == LAYERS * TOUCHED * 2 * (2 * (3072 + 2944) + (2944 + 3072))
    assert flops == LAYERS * TOUCHED * 2 * (2 * 2944 * 3072 + 3072 * 2944)
    assert MARLIN.expert_bytes(2880, 2880) == MARLIN_W13 + MARLIN_W2  # what memory holds, no swizzled copy


def test_trtllm_gen_decode_step_on_a_b200_under_0_19():
    """vLLM 0.19.1 on a B200 (FlashInfer TRT-LLM-gen, H and I to 256, fp32 biases): 3,072 x 3,072 every matrix."""
    weights, activations, flops = _decode_experts("vllm@0.19.1", "b200")
    assert weights == LAYERS * TOUCHED * (TRTLLM_W13 + TRTLLM_W2) == 2_171_142_144
    assert activations == LAYERS * TOUCHED * 2 * 3 * (3072 + 3072)
    assert flops == LAYERS * TOUCHED * 2 * 3 * 3072 * 3072
    assert TRTLLM_GEN.expert_bytes(2880, 2880) == TRTLLM_W13 + TRTLLM_W2


def test_sglang_decode_step_keeps_the_checkpoint_shapes():
    """SGLang's MXFP4 path was not read: its step reads the checkpoint's 2,880 x 2,880 matrices, as before."""
    weights, activations, flops = _decode_experts("sglang@0.5.6", "h100")
    assert weights == LAYERS * TOUCHED * 3 * CHECKPOINT_MATRIX == 1_903_564_800
    assert activations == LAYERS * TOUCHED * 3 * 2 * (2880 + 2880)
    assert flops == LAYERS * TOUCHED * 3 * 2 * 2880 * 2880


def test_pipeline_stages_hold_the_memory_plans_padded_weights():
    """pp 2 on 2 x H100 under vLLM 0.11.2: each stage's ``weight_bytes_per_device`` is its memory plan's, Marlin's
    padding of its 18 MoE layers on top of the checkpoint's bytes (before: the checkpoint's alone), and the plan's
    memory is the limiting stage's."""
    model, target = _gpt_oss(), resolve_target("2xh100")
    deployment = _deployment("vllm@0.11.2")
    profile = datasheet_profile(target.target)
    plans = LayoutPlans(model, target, deployment, profile, profile, isl=1024, osl=1024, tp=1, pp=2)
    plan = plans.at(1)
    padding = 18 * 128 * (MARLIN_W13 + MARLIN_W2 - (5760 + 2880) * (1440 + 90 + 2))  # 2,753,888,256 B a stage
    for stage in plan.stages:
        layout = stage_layout(model, 2, stage.stage, "vllm")
        stored = deployment_rank_bytes(stage_model(model, layout), 1, "mxfp4", plans.engine_deployment,
                                       sides=stage_sides(model, layout))  # fmt: skip
        assert stage.weight_bytes_per_device == stored + padding
    assert plans.limiting is not None
    assert plan.memory.weight_bytes_per_device == plans.limiting.weight_bytes_per_device
