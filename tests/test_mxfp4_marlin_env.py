"""``VLLM_MXFP4_USE_MARLIN=1`` (``DeploymentSpec.vllm_mxfp4_kernel`` ``marlin``): the kernel it forces by release and
GPU (``core.engine.mxfp4_moe.marlin_forced``), the refusals, the launch line's variable, and one decode step of
gpt-oss-120b at tp 2 on H100s under vLLM 0.15.1 counted by hand from the padded shapes (``tests/test_mxfp4_moe.py``)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from mha_cli.core.cost.launch_settings import pool_words
from mha_cli.core.engine.flags import line_problems, release_key
from mha_cli.core.engine.generations import generation_of
from mha_cli.core.engine.mxfp4_moe import MARLIN, TRITON_KEEPING_SCALES, TRTLLM_GEN, marlin_forced
from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.schemas import DeploymentSpec
from tests.conftest import reference_hf_config
from tests.test_mxfp4_step import decode_expert_step

LAYERS, TOUCHED = 36, 4
"""gpt-oss-120b: 36 MoE layers; one token visits 4 of the 128 experts in each."""
# tp 2: each rank holds every expert's half of the intermediate size, 2,880 / 2 = 1,440.
# Marlin (H 2,880 -> 3,072, I 1,440 -> 1,536; bf16 biases): gate-and-up 3,072 rows x (1,536 value bytes + 96 scales +
# 2 bias bytes), down 3,072 x (768 + 48 + 2).
MARLIN_W13, MARLIN_W2 = 3072 * (1536 + 96 + 2), 3072 * (768 + 48 + 2)  # 5,019,648 and 2,512,896 B
# triton_kernels on Hopper, 0.15.1's default (H as is, I 1,440 -> 1,472, a multiple of 64; fp32 biases); the step
# reads the scales' swizzled copy, rows to 256 (2,944 and 2,880 -> 3,072) and groups to 2 (90 and 46).
TRITON_W13 = 2944 * 1440 + 3072 * 90 + 2944 * 4  # 4,527,616 B
TRITON_W2 = 2880 * 736 + 3072 * 46 + 2880 * 4  # 2,272,512 B


def _gpt_oss():
    return import_hf_config(json.loads(reference_hf_config("gpt-oss-120b").read_text()), name="gpt-oss-120b").model


def _deployment(release: str, **extra) -> DeploymentSpec:
    return DeploymentSpec(
        seq_len=2048, tp=2, engine="vllm", engine_version=release, engine_generation=generation_of(f"vllm@{release}").id,
        weight_dtype="mxfp4", **extra,
    )  # fmt: skip


def _decode_expert_weights(deployment: DeploymentSpec) -> tuple[float, object]:
    """The routed experts' weight bytes one decode step at batch 1 reads on a rank of 2 x H100, and the kernel the
    memory plan holds them in (``tests.test_mxfp4_step.decode_expert_step``)."""
    weights, _, _, kernel = decode_expert_step(deployment, "2xh100", tp=2)
    return weights, kernel


def test_the_h100_tp2_decode_step_reads_marlins_shapes_when_forced():
    """vLLM 0.15.1 on 2 x H100: triton_kernels by default, Marlin with ``VLLM_MXFP4_USE_MARLIN=1`` (InferenceX
    issue #828's launch line): 10.8% more expert bytes a step."""
    default, kernel = _decode_expert_weights(_deployment("0.15.1"))
    assert kernel == TRITON_KEEPING_SCALES
    assert default == LAYERS * TOUCHED * (TRITON_W13 + TRITON_W2) == 979_218_432
    forced, kernel = _decode_expert_weights(_deployment("0.15.1", vllm_mxfp4_kernel="marlin"))
    assert kernel == MARLIN
    assert forced == LAYERS * TOUCHED * (MARLIN_W13 + MARLIN_W2) == 1_084_686_336


def test_a_release_the_generation_does_not_cover_forces_marlin_as_its_last_does():
    """vllm-v1's rules with a 0.30.0 release (a control column's): the kernel is the generation's last's (0.20 reads
    the variable: Marlin), not refused as 0.30.0 (read as the release typed before)."""
    outside = _deployment("0.15.1", vllm_mxfp4_kernel="marlin").model_copy(update={"engine_version": "0.30.0"})
    assert outside.engine_generation == "vllm-v1"
    _, kernel = _decode_expert_weights(outside)
    assert kernel == MARLIN


@pytest.mark.parametrize(
    ("typed", "capability", "default", "kernel"),
    [
        ("0.10.1", 10.0, TRTLLM_GEN, MARLIN),  # _should_use_marlin returns the variable first, Blackwell too
        ("0.11.2", 9.0, MARLIN, MARLIN),
        ("0.15.1", 9.0, TRITON_KEEPING_SCALES, MARLIN),
        ("0.15.1", 10.0, TRTLLM_GEN, TRTLLM_GEN),  # get_mxfp4_backend's FlashInfer branches come first
        ("0.19.1", 10.0, TRTLLM_GEN, MARLIN),  # select_mxfp4_moe_backend: the variable before the priority list
        ("0.23.0", 9.0, TRITON_KEEPING_SCALES, MARLIN),
    ],
)
def test_the_kernel_the_variable_forces(typed, capability, default, kernel):
    assert marlin_forced(default, None, typed) == kernel


@pytest.mark.parametrize("typed", ["0.10.2", "0.11.0", "0.11.1", "0.24.0", "0.34.0"])
def test_releases_that_do_not_read_the_variable_are_refused(typed):
    with pytest.raises(BadInputError) as refused:
        marlin_forced(MARLIN, None, typed)
    assert str(refused.value) == (
        "vllm_mxfp4_kernel marlin is VLLM_MXFP4_USE_MARLIN=1, which vLLM reads in 0.10.1 and 0.11.2-0.23 only, not"
        f" in {typed}: give engine_version one of those releases, or drop vllm_mxfp4_kernel"
    )
    with pytest.raises(BadInputError, match="not in the latest"):
        marlin_forced(MARLIN, None, None)


def test_other_engines_and_formats_are_refused():
    with pytest.raises(ValidationError) as refused:
        DeploymentSpec(engine="sglang", weight_dtype="mxfp4", vllm_mxfp4_kernel="marlin")
    assert (
        "vllm_mxfp4_kernel is vLLM's kernel for mxfp4 experts (VLLM_MXFP4_USE_MARLIN): not for sglang with mxfp4"
        " weights; drop it"
    ) in str(refused.value)
    with pytest.raises(ValidationError, match="not for vllm with bf16 weights; drop it"):
        DeploymentSpec(weight_dtype="bf16", vllm_mxfp4_kernel="marlin")


def test_the_launch_line_sets_the_variable_in_the_releases_that_have_it():
    words = pool_words(_deployment("0.15.1", vllm_mxfp4_kernel="marlin"), cpu=False, trtllm=False)
    assert words.vllm_variables == ["VLLM_MXFP4_USE_MARLIN=1"]
    assert pool_words(_deployment("0.15.1"), cpu=False, trtllm=False).vllm_variables == []
    line = ["VLLM_MXFP4_USE_MARLIN=1", "vllm", "serve", "openai/gpt-oss-120b", "--tensor-parallel-size", "2"]
    assert line_problems("vllm", release_key("0.15.1"), line) == []
    assert line_problems("vllm", release_key("0.24.0"), line) != []  # gone from 0.24.0's envs.py


def test_the_disaggregated_workers_lines_set_the_variable_too(cli, tmp_path):
    """A config file whose deployment states ``vllm_mxfp4_kernel: marlin``: every vLLM worker line of the split
    (not the proxy's) starts ``VLLM_MXFP4_USE_MARLIN=1 vllm serve``, as the aggregated line does."""
    deployment = {"engine": "vllm", "engine_version": "0.15.1", "weight_dtype": "mxfp4", "vllm_mxfp4_kernel": "marlin"}
    config = tmp_path / "gpt-oss-120b-marlin.json"
    config.write_text(json.dumps({"model": _gpt_oss().model_dump(mode="json"), "deployment": deployment}))
    plan = cli.json("plan", str(config), "--target", "4xh100", "--disaggregated", "--closed-form")
    *workers, proxy = plan["launch"]["vllm"].splitlines()
    assert len(workers) == 2  # one prefill and one decode worker of 2 GPUs each
    assert all(" VLLM_MXFP4_USE_MARLIN=1 vllm serve " in line for line in workers), workers
    assert "VLLM_MXFP4_USE_MARLIN" not in proxy
    aggregated = cli.json("plan", str(config), "--target", "4xh100", "--closed-form")
    assert aggregated["launch"]["vllm"].startswith("VLLM_MXFP4_USE_MARLIN=1 vllm serve ")
