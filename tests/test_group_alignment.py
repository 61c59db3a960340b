"""A group- or block-quantised checkpoint split so that a quantisation group straddles two ranks is refused for vLLM
and SGLang (``core.engine.group_alignment``, read in vLLM 0.32.0's and SGLang 0.5.23's AWQ, GPTQ and fp8-block
loaders): the plan search picked tp 2 for Qwen2.5-72B's AWQ weights on 8 x L40S, which vLLM refuses ("The input size
is not aligned with the quantized weight shape"), and check passed it (trial 261 #3)."""

from __future__ import annotations

import json

import pytest

from mha_cli.core.engine.group_alignment import group_straddle_refusal
from mha_cli.core.sources import load_source
from mha_cli.core.tensor_parallel import ExpertLayout
from tests.conftest import reference_hf_config


@pytest.fixture
def qwen72_awq(tmp_path):
    """Qwen2.5-72B-Instruct's config with an AWQ quantization_config (group 128), as Qwen's AWQ release has one."""
    config = json.loads(reference_hf_config("qwen2.5-72b-instruct").read_text())
    config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                                     "version": "gemm"}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def test_hand_counts_of_the_rank_parts():
    """Qwen2.5-72B: intermediate 29,568 = 231 x 128, so down_proj's inputs on a rank are 14,784 (tp 2, 115.5 groups),
    7,392 (tp 4), 3,696 (tp 8): no tp above 1 keeps AWQ's groups of 128 whole; o_proj's 8,192 would. Llama-3.1-70B's
    28,672 = 224 x 128 splits at 2, 4 and 8. DeepSeek-V3's fp8 blocks of 128: down_proj's 18,432 inputs are 1,152 on
    a rank at tp 16, 576 at 32; its experts (2,048 wide: 64 at 32) are not judged, vLLM 0.32 refining their block
    (review 263), nor a merged gate_up whose part is not whole blocks (vLLM lets it pass)."""
    qwen = load_source(str(reference_hf_config("qwen2.5-72b-instruct"))).model
    assert group_straddle_refusal(qwen, "awq", None, 1) is None
    assert group_straddle_refusal(qwen, "awq", None, 2) == (
        "vLLM cannot load qwen2.5-72b-instruct's awq weights at tp 2: down_proj holds 14,784 inputs on a rank, not"
        " whole groups of 128 (its quantisation groups would straddle two ranks): --tp 1 keeps them whole"
    )
    assert "SGLang cannot load" in group_straddle_refusal(qwen, "awq", None, 2, "sglang")
    assert group_straddle_refusal(qwen, "awq", None, 2, "trtllm") is None  # not read
    assert "down_proj holds 3,696 inputs" in group_straddle_refusal(qwen, "gptq-int4", None, 8)
    assert group_straddle_refusal(qwen, "fp8", None, 8) is None  # per-channel scales: nothing to straddle
    llama = load_source("llama-3.1-70b").model
    assert all(group_straddle_refusal(llama, fmt, None, tp) is None for fmt in ("awq", "fp8-block") for tp in (2, 4, 8))
    deepseek = load_source(str(reference_hf_config("deepseek-v3"))).model
    assert group_straddle_refusal(deepseek, "fp8-block", None, 16) is None
    assert "down_proj holds 576 inputs on a rank, not whole blocks of 128" in group_straddle_refusal(
        deepseek, "fp8-block", None, 32
    )
    kimi = load_source(str(reference_hf_config("kimi-k2.5")))  # int4 on the experts alone: dense layers not grouped
    assert group_straddle_refusal(kimi.model, "int4", kimi.deployment.weight_scheme, 64) is None


def test_the_search_and_check_leave_out_the_tps_the_engines_refuse(cli, qwen72_awq):
    args = ["plan", str(qwen72_awq), "--target", "8xl40s", "--isl", "2000", "--osl", "500", "--ttft-ms", "3000",
            "--itl-ms", "80"]  # fmt: skip
    found = cli.json(*args)
    assert {c["deployment"]["tp"] for c in found["candidates"]} == {1}
    assert any("not whole groups of 128" in line for line in found["layouts"])
    for engine in ("vllm", "sglang"):  # SGLang 0.5.23's awq_linear.py raises the same (review 263 #3)
        refused = cli.run("check", str(qwen72_awq), "--target", "8xl40s", "--tp", "2", "--engine", engine)
        assert refused.exit_code == 2 and "down_proj holds 14,784 inputs on a rank" in refused.output


def test_each_layer_is_judged_by_the_rule_that_stores_it(tmp_path):
    """A compressed-tensors int4 group-128 rule naming the MLP (``re:.*mlp.*``) was not judged at all, and one with
    down_proj in its ignore list was refused over down_proj, which vLLM loads unquantised (review 265 #6, #8)."""
    from mha_cli.core.sources import load_source

    config = json.loads(reference_hf_config("qwen2.5-72b-instruct").read_text())
    weights = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}

    def loaded(targets: list[str], ignore: list[str]):
        group = {"targets": targets, "weights": weights, "input_activations": None}
        quant = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"g": group},
                 "ignore": ignore}  # fmt: skip
        (tmp_path / "config.json").write_text(json.dumps({**config, "quantization_config": quant}))
        source = load_source(str(tmp_path / "config.json"))
        return source.model, source.deployment.weight_scheme

    named, scheme = loaded(["re:.*mlp.*"], ["lm_head"])
    assert "down_proj holds 14,784 inputs" in group_straddle_refusal(named, scheme.format, scheme, 2)
    kept, scheme = loaded(["Linear"], ["lm_head", "re:.*down_proj"])
    assert group_straddle_refusal(kept, scheme.format, scheme, 2) is None  # o_proj's 4,096 a rank: whole groups


def test_fp8_experts_whose_width_on_a_rank_is_not_whole_blocks():
    """Qwen3-235B-A22B in fp8 blocks of 128 at tp 8: its experts are 1,536 wide, 192 on a rank. SGLang 0.5.23's
    Fp8MoEMethod and vLLM 0.28's fp8.py refuse it; from 0.29 vLLM refines the block to gcd(128, 192, 4,096) = 64
    (review 265 #5, #7; review 267 #1: 0.29, not 0.30), refusing below 32: Qwen3-30B-A3B at tp 16, 48 a rank, gcd 16."""
    from mha_cli.core.tensor_parallel import ExpertLayout

    qwen = load_source(str(reference_hf_config("qwen3-235b-a22b-instruct-2507"))).model
    said = "experts' down_proj holds 192 inputs on a rank, not whole blocks of 128"
    assert said in group_straddle_refusal(qwen, "fp8-block", None, 8, "sglang")
    assert said in group_straddle_refusal(qwen, "fp8-block", None, 8, "vllm", (0, 28, 0, 0))
    assert group_straddle_refusal(qwen, "fp8-block", None, 8, "vllm", (0, 29, 0, 0)) is None
    assert group_straddle_refusal(qwen, "fp8-block", None, 8, "vllm") is None  # the latest
    assert group_straddle_refusal(qwen, "fp8-block", None, 4, "sglang") is None  # 384 a rank: 3 blocks
    small = load_source(str(reference_hf_config("qwen3-30b-a3b"))).model  # experts 768 wide: 48 a rank at tp 16
    assert "experts' down_proj holds 48 inputs" in group_straddle_refusal(small, "fp8-block", None, 16, "vllm")
    assert group_straddle_refusal(small, "fp8-block", None, 8, "vllm") is None  # 96: gcd 32, refined
    # 8 DP-attention ranks at tp 1 sharing the experts split by width: 192 a rank (review 267 #3)
    spread = ExpertLayout(8, dp_attention=True)
    assert group_straddle_refusal(qwen, "fp8-block", None, 1, "sglang", None, spread).endswith(
        "fewer ranks sharing the experts, or expert parallelism (whole experts a rank: mha plan --expert-parallel),"
        " keep them whole"
    )
    assert group_straddle_refusal(qwen, "fp8-block", None, 8, "sglang").endswith(
        ": --tp 4, or expert parallelism (whole experts a rank: mha plan --expert-parallel), keeps them whole"
    )
    whole = ExpertLayout(8, whole=True, dp_attention=True)
    assert group_straddle_refusal(qwen, "fp8-block", None, 1, "sglang", None, whole) is None


def test_a_compressed_tensors_fp8_block_checkpoint_gets_no_refined_experts(tmp_path):
    """vLLM's block refinement (0.29+) is its own fp8 method's; CompressedTensorsW8A8Fp8MoEMethod still raises on
    experts whose width on a rank is not whole blocks (0.29 and 0.32): Qwen3-30B-A3B at tp 8 (96 a rank) passed
    (review 269 #2)."""
    config = json.loads(reference_hf_config("qwen3-30b-a3b").read_text())
    block = {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128], "symmetric": True}
    group = {"targets": ["Linear"], "weights": block, "input_activations": None}
    quant = {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": group},
             "ignore": ["lm_head"]}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps({**config, "quantization_config": quant}))
    source = load_source(str(tmp_path / "config.json"))
    scheme = source.deployment.weight_scheme
    assert scheme.format == "fp8-block" and scheme.method == "compressed-tensors"
    said = group_straddle_refusal(source.model, "fp8-block", scheme, 8)
    assert said is not None and "experts' down_proj holds 96 inputs on a rank" in said
    assert group_straddle_refusal(source.model, "fp8-block", None, 8) is None  # vLLM's own fp8: refined, gcd 32


def test_a_vllm_plan_writes_no_sglang_line_sglang_cannot_load(cli, tmp_path):
    """Trial 342 #1: Qwen3-30B-A3B in fp8 blocks at tp 8 on vLLM (from 0.29 it refines the experts' 96 inputs a rank
    to blocks of 32) printed an SGLang line too, whose Fp8MoEMethod refuses 96 inputs a rank. Left out, with why;
    the control, expert parallelism (whole experts a rank), keeps the SGLang line."""
    config = json.loads(reference_hf_config("qwen3-30b-a3b").read_text())
    config["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128],
                                     "activation_scheme": "dynamic"}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    args = ("plan", str(tmp_path / "config.json"), "--target", "8xh100", "--tp", "8", "--isl", "1024", "--osl", "256",
            "--closed-form")  # fmt: skip
    split = cli.json(*args)
    assert "vllm" in split["launch"] and "sglang" not in split["launch"]
    note = split["launch_note"]
    assert "sglang: no line: SGLang cannot load " in note
    assert "fp8-block weights at tp 8: experts' down_proj holds 96 inputs on a rank" in note
    whole = cli.json(*args, "--expert-parallel")
    assert "--ep-size 8" in whole["launch"]["sglang"] and "sglang: no line" not in (whole["launch_note"] or "")


def test_a_way_out_keeps_whole_groups_at_tp_1_too():
    """Trial 382 #2: DeepSeek-V2-Lite's dense down_proj has 10,944 inputs (85.5 groups of 128), so tp 1 cuts a group as
    tp 2 does (5,472, 42.75): the refusal at tp 2 said "--tp 1 keeps them whole". gpt-oss-20b's experts are 2,880 wide
    (22.5 fp8 blocks of 128), which SGLang refuses at any tp (fp8.py: intermediate_size_per_partition % block_n, read
    in 0.5.2): tp 2's refusal crashed looking for a tp that keeps them whole (StopIteration), and tp 1 was priced."""
    lite = load_source(str(reference_hf_config("deepseek-v2-lite"))).model
    refused = group_straddle_refusal(lite, "int4", None, 2)
    assert "down_proj holds 5,472 inputs on a rank" in refused and "no tensor-parallel size keeps them whole" in refused
    assert "--tp 1" not in refused
    oss = load_source("gpt-oss-20b").model
    assert "no tensor-parallel size (nor whole experts a rank)" in group_straddle_refusal(oss, "fp8-block", None, 2,
                                                                                          "sglang")  # fmt: skip
    assert "experts' down_proj holds 2,880 inputs (whole, at tp 1)" in group_straddle_refusal(
        oss, "fp8-block", None, 1, "sglang"
    )
    assert group_straddle_refusal(oss, "fp8-block", None, 1, "vllm") is None  # the control: vLLM 0.29+ refines it
    assert "at tp 1" in group_straddle_refusal(oss, "fp8-block", None, 1, "vllm", (0, 28))  # 0.28's fp8.py does not
    # review 384 #2: int4's loaders check a row layer's inputs at any tp (vLLM's AWQ create_weights, Marlin's
    # verify_marlin_supports_shape), so tp 1 is refused as tp 2 is; fp8 blocks' rows only from tp 2 (the control)
    assert "down_proj holds 10,944 inputs (whole, at tp 1)" in group_straddle_refusal(lite, "int4", None, 1)
    assert group_straddle_refusal(lite, "fp8-block", None, 1) is None
    # review 384 #3: whole experts a rank (expert parallelism) keep the full 2,880 width, which SGLang refuses too
    whole = ExpertLayout(4, whole=True, dp_attention=True)
    assert "experts' down_proj holds 2,880 inputs" in group_straddle_refusal(oss, "fp8-block", None, 1, "sglang",
                                                                              None, whole)  # fmt: skip
