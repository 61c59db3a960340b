"""vLLM's MXFP4 MoE kernels' bytes (``core.engine.mxfp4_moe``): the kernel each release picks by GPU, and gpt-oss's
experts at the padded shapes, counted by hand from ``Mxfp4MoEMethod.create_weights`` (uint8 values, two a byte; a
uint8 e8m0 scale per 32; one bias per output row), against engine log 1201's 65.97 GiB."""

from __future__ import annotations

import json

import pytest

from mha_cli.core.engine.mxfp4_moe import (
    CHECKPOINT,
    MARLIN,
    TRITON,
    TRITON_0_26,
    TRITON_KEEPING_SCALES,
    TRTLLM_GEN,
    TRTLLM_GEN_0_27,
    padding_bytes_per_rank,
    vllm_mxfp4_kernel,
    vllm_padding,
)
from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.tensor_parallel import ExpertLayout
from mha_cli.core.weight_bytes import rank_weight_bytes
from tests.conftest import reference_hf_config

GIB = 2**30


def _gpt_oss(name: str):
    return import_hf_config(json.loads(reference_hf_config(name).read_text()), name=name).model


# One expert of gpt-oss (hidden 2,880, intermediate 2,880) at tp 1, by hand.
# Checkpoint: gate_up 5,760 x (1,440 value bytes + 90 scales + 2 bias bytes); down 2,880 x (1,440 + 90 + 2).
CHECKPOINT_EXPERT = 5760 * (1440 + 90 + 2) + 2880 * (1440 + 90 + 2)  # 13,236,480 B
# Marlin (H to 256 = 3,072, I to 128 = 2,944): gate_up 5,888 x (1,536 + 96 + 2); down 3,072 x (1,472 + 92 + 2).
MARLIN_EXPERT = 5888 * (1536 + 96 + 2) + 3072 * (1472 + 92 + 2)  # 14,431,744 B
# triton_kernels on Hopper (I to 64 = 2,880: unchanged; biases fp32) and a swizzled copy of the scales, rows to 256
# (gate_up 5,760 -> 5,888, down 2,880 -> 3,072), 90 groups each: 0.12-0.24 keep the originals too, 0.25 frees them.
TRITON_SWIZZLED_SCALES = 5888 * 90 + 3072 * 90  # 806,400 B
TRITON_EXPERT = 5760 * (1440 + 4) + 2880 * (1440 + 4) + TRITON_SWIZZLED_SCALES  # 13,282,560 B
TRITON_KEEPING_EXPERT = TRITON_EXPERT + 5760 * 90 + 2880 * 90  # 14,060,160 B
# from 0.26 the groups are padded to 4 first: 92 each
TRITON_0_26_EXPERT = TRITON_EXPERT - TRITON_SWIZZLED_SCALES + 5888 * 92 + 3072 * 92
# FlashInfer TRT-LLM-gen to 0.26 (H and I to 256 = 3,072, fp32 biases): 6,144 x (1,536 + 96 + 4) + 3,072 x (same).
TRTLLM_EXPERT = 6144 * (1536 + 96 + 4) + 3072 * (1536 + 96 + 4)  # 15,089,664 B


def test_one_expert_by_hand():
    assert CHECKPOINT.expert_bytes(2880, 2880) == CHECKPOINT_EXPERT == 13_236_480
    assert MARLIN.expert_bytes(2880, 2880) == MARLIN_EXPERT == 14_431_744
    assert TRITON.expert_bytes(2880, 2880) == TRITON_EXPERT == 13_282_560
    assert TRITON_KEEPING_SCALES.expert_bytes(2880, 2880) == TRITON_KEEPING_EXPERT == 14_060_160
    assert TRITON_0_26.expert_bytes(2880, 2880) == TRITON_0_26_EXPERT
    assert TRTLLM_GEN.expert_bytes(2880, 2880) == TRTLLM_EXPERT


def test_gpt_oss_120b_layer_on_an_h100_under_vllm_0_11_2():
    """One MoE layer of gpt-oss-120b (128 experts) as vLLM 0.11.2 holds it on an H100: Marlin's padded shapes."""
    kernel = vllm_mxfp4_kernel((0, 11), "NVIDIA", 9.0)
    assert kernel == MARLIN
    assert 128 * kernel.expert_bytes(2880, 2880) == 1_847_263_232  # against the checkpoint's 1,694,269,440
    model = _gpt_oss("gpt-oss-120b")
    padding = padding_bytes_per_rank(model, ExpertLayout(1), kernel)
    assert padding == 36 * 128 * (MARLIN_EXPERT - CHECKPOINT_EXPERT) == 5_507_776_512  # 5.13 GiB
    total = rank_weight_bytes(model, 1, "mxfp4") + padding
    # engine log 1201 (vLLM 0.11.2, one H100, 'Using Marlin backend'): "Model loading took 65.9651 GiB memory"
    assert total / GIB == pytest.approx(65.9651, abs=0.1)
    assert rank_weight_bytes(model, 1, "mxfp4") / GIB == pytest.approx(60.77, abs=0.01)  # the checkpoint: 5.2 short


def test_gpt_oss_20b_under_marlin_and_triton():
    """gpt-oss-20b (32 experts x 24 layers): Marlin on an A100 with vLLM 0.19 (engine log 407: 13.72 GiB loaded),
    triton_kernels on an H100 from 0.12 (the intermediate size is already a multiple of 64: fp32 biases and the
    scales' swizzled copy, beside the originals until 0.25)."""
    model = _gpt_oss("gpt-oss-20b")
    marlin = vllm_mxfp4_kernel((0, 19), "NVIDIA", 8.0)
    assert marlin == MARLIN
    assert padding_bytes_per_rank(model, ExpertLayout(1), marlin) == 24 * 32 * (MARLIN_EXPERT - CHECKPOINT_EXPERT)
    total = rank_weight_bytes(model, 1, "mxfp4") + padding_bytes_per_rank(model, ExpertLayout(1), marlin)
    assert total / GIB == pytest.approx(13.72, abs=0.1)
    triton = vllm_mxfp4_kernel((0, 12), "NVIDIA", 9.0)
    assert triton == TRITON_KEEPING_SCALES
    assert padding_bytes_per_rank(model, ExpertLayout(1), triton) == 24 * 32 * (
        TRITON_KEEPING_EXPERT - CHECKPOINT_EXPERT
    )
    freed = padding_bytes_per_rank(model, ExpertLayout(1), vllm_mxfp4_kernel((0, 25), "NVIDIA", 9.0))
    assert freed == 24 * 32 * ((5760 + 2880) * 2 + (5888 - 5760) * 90 + (3072 - 2880) * 90)  # biases, padded rows


def test_padding_follows_the_ranks_share_of_the_intermediate_size():
    """At tp 2 each rank holds every expert at 1,440 wide: Marlin pads that to 1,536 (not 2,880's 2,944 halved);
    the down projection's bias stays whole on each rank."""
    model = _gpt_oss("gpt-oss-120b")
    per_expert = 3072 * (1536 + 96 + 2) + 3072 * (768 + 48 + 2) - (2880 * (1440 + 90 + 2) + 2880 * (720 + 45 + 2))
    assert padding_bytes_per_rank(model, ExpertLayout(2), MARLIN) == 36 * 128 * per_expert
    # expert parallel: 64 whole experts a rank
    assert padding_bytes_per_rank(model, ExpertLayout(2, whole=True), MARLIN) == 36 * 64 * (
        MARLIN_EXPERT - CHECKPOINT_EXPERT
    )


@pytest.mark.parametrize(
    ("release", "capability", "kernel"),
    [
        ((0, 10), 9.0, MARLIN),  # 0.10.1: no triton_kernels in the wheel
        ((0, 11), 9.0, MARLIN),  # log 1201
        ((0, 11), 8.0, MARLIN),
        ((0, 11), 10.0, TRTLLM_GEN),
        ((0, 11), 10.3, MARLIN),  # 0.11 reads capability 10.0 exactly for FlashInfer
        ((0, 11), 12.0, MARLIN),
        ((0, 12), 9.0, TRITON_KEEPING_SCALES),  # triton_kernels vendored from 0.12
        ((0, 12), 10.3, None),  # triton_kernels' Blackwell layouts, not modelled
        ((0, 24), 9.0, TRITON_KEEPING_SCALES),
        ((0, 25), 9.0, TRITON),  # the unswizzled scales freed
        ((0, 26), 9.0, TRITON_0_26),
        ((0, 13), 10.3, TRTLLM_GEN),  # the 10.x family from 0.13
        ((0, 18), 12.0, MARLIN),  # triton_kernels below capability 11 only
        ((0, 18), 8.9, MARLIN),
        ((0, 26), 10.0, TRTLLM_GEN),
        ((0, 27), 10.0, TRTLLM_GEN_0_27),  # intermediate to 128 from 0.27
        ((0, 34), 9.0, TRITON_0_26),
        ((0, 34), 8.6, MARLIN),
        ((0, 34), 12.0, None),  # not modelled: the oracle's order on consumer Blackwell
        ((0, 9), 9.0, None),  # before gpt-oss
        (None, 9.0, TRITON_0_26),  # the latest
        (None, None, None),
    ],
)
def test_the_kernel_each_release_picks(release, capability, kernel):
    assert vllm_mxfp4_kernel(release, "NVIDIA", capability) == kernel


def test_only_vllm_and_mxfp4_experts_are_padded():
    """SGLang, TensorRT-LLM, AMD GPUs and other weight formats keep the checkpoint's bytes."""
    model = _gpt_oss("gpt-oss-120b")
    layout = ExpertLayout(1)
    assert vllm_padding(model, "mxfp4", "vllm", (0, 11), "NVIDIA", 9.0, layout)[0] == 5_507_776_512
    assert vllm_padding(model, "mxfp4", "sglang", None, "NVIDIA", 9.0, layout) == (0, None)
    assert vllm_padding(model, "mxfp4", "trtllm", None, "NVIDIA", 12.1, layout) == (0, None)
    assert vllm_padding(model, "bf16", "vllm", (0, 11), "NVIDIA", 9.0, layout) == (0, None)
    assert vllm_padding(model, "mxfp4", "vllm", (0, 11), "AMD", None, layout) == (0, None)


def test_the_engine_plan_carries_the_padding_and_plain_weights_do_not(cli):
    """``mha kv`` with ``--engine vllm@0.11.2`` on an H100 budgets the padded weights and says why; the model's own
    weight count (no engine) stays the checkpoint's."""
    config = str(reference_hf_config("gpt-oss-120b"))
    args = ("kv", config, "--target", "h100", "--seq", "98304", "--gpu-memory-utilization", "0.96")
    padded = cli.json(*args, "--engine", "vllm@0.11.2", "--max-num-seqs", "6")
    assert padded["memory"]["weight_bytes_per_device"] == padded["weight_bytes"] + 5_507_776_512
    weights_line = next(line for line in padded["engine"]["budget"] if line["label"] == "weights on this rank")
    assert "Marlin" in weights_line["how"]
    sglang = cli.json(*args, "--engine", "sglang")
    assert sglang["memory"]["weight_bytes_per_device"] == sglang["weight_bytes"]


def test_vllm_refuses_mxfp4_experts_below_compute_capability_8(cli):
    """vLLM's ``Mxfp4Config.get_min_capability`` is 80: a V100 (7.0) or T4 (7.5) cannot load gpt-oss under vLLM, so
    the plan refuses in one line (exit 2) instead of pricing a Marlin kernel that never runs there; 8.0 is priced."""
    model = _gpt_oss("gpt-oss-20b")
    with pytest.raises(BadInputError) as refused:
        vllm_padding(model, "mxfp4", "vllm", None, "NVIDIA", 7.5, ExpertLayout(1))
    assert str(refused.value) == (
        "vLLM runs mxfp4 experts on compute capability 8.0 or later (Mxfp4Config.get_min_capability); this GPU is"
        " 7.5: pick a GPU of 8.0+, or another engine or weight format"
    )
    assert vllm_padding(model, "mxfp4", "vllm", None, "NVIDIA", 8.0, ExpertLayout(1))[0] > 0  # Marlin on Ampere
    assert vllm_padding(model, "mxfp4", "sglang", None, "NVIDIA", 7.0, ExpertLayout(1)) == (0, None)
    result = cli.run("kv", str(reference_hf_config("gpt-oss-20b")), "--target", "v100-32gb", "--engine", "vllm")
    assert result.exit_code == 2
    assert "compute capability 8.0 or later" in result.output
    assert "Traceback" not in result.output
