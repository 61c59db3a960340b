"""vLLM's NVFP4 on ROCm by release (``core.engine.rocm_nvfp4``, read in the wheels): a ModelOpt NVFP4 MoE is refused
where petit_nvfp4 leaves its experts unquantised (0.10.2-0.19.1), every ModelOpt config before 0.10.2, compressed-
tensors NVFP4 before 0.20.0 (Marlin, not built for ROCm); from 0.20.0 the emulation kernels serve both. ModelOpt FP8
and MIXED_PRECISION need 0.21.0."""

import json

import pytest

from mha_cli.core.engine.rocm_nvfp4 import rocm_modelopt_refusal, rocm_nvfp4_refusal
from mha_cli.core.hf_quantization import read_checkpoint_weights
from mha_cli.core.sources import load_source
from tests.conftest import HF_FIXTURES

MOE = "gemma-4-26b-a4b-nvfp4"  # ModelOpt NVFP4, its routed experts in fp4


def _scheme(method: str = "modelopt"):
    scheme = load_source(str(HF_FIXTURES / f"{MOE}.json")).deployment.weight_scheme
    return scheme if method == "modelopt" else scheme.model_copy(update={"method": method})


@pytest.mark.parametrize("target", ["mi300x", "mi355x"])
def test_a_modelopt_nvfp4_moe_on_rocm_is_refused_under_petit(cli, target):
    refused = cli.run(
        "kv", str(HF_FIXTURES / f"{MOE}.json"), "--target", target, "--engine", "vllm@0.19.1", "--seq", "8k"
    )
    assert refused.exit_code == 2 and "Traceback" not in refused.stderr
    line = refused.stderr.strip()
    assert "\n" not in line
    assert "petit_nvfp4, which quantises linear layers only" in line and "use vLLM 0.20 or later" in line


def test_from_0_20_0_rocm_emulates_nvfp4_and_the_moe_is_priced(cli):
    priced = cli.run(
        "kv", str(HF_FIXTURES / f"{MOE}.json"), "--target", "mi300x", "--engine", "vllm@0.20.0", "--seq", "8k"
    )
    assert priced.exit_code == 0, priced.output
    assert rocm_nvfp4_refusal(_scheme(), True, "0.20.0") is None
    assert rocm_nvfp4_refusal(_scheme(), True, None) is None  # the latest


def test_a_dense_modelopt_nvfp4_runs_as_petit_w4a16_but_not_before_0_10_2():
    assert rocm_nvfp4_refusal(_scheme(), False, "0.19.1") is None
    assert rocm_nvfp4_refusal(_scheme(), False, "0.10.2") is None
    refusal = rocm_nvfp4_refusal(_scheme(), False, "0.10.1")
    assert refusal is not None and "does not support ModelOpt quantization on ROCm" in refusal


def test_compressed_tensors_nvfp4_needs_0_20_0_on_rocm():
    refusal = rocm_nvfp4_refusal(_scheme("compressed-tensors"), False, "0.19.1")
    assert refusal is not None and "through Marlin, whose kernels its ROCm build does not compile" in refusal
    assert rocm_nvfp4_refusal(_scheme("compressed-tensors"), True, "0.20.0") is None


def _modelopt_file(tmp_path, quantization: dict) -> str:
    """Llama-3.1-8B's config.json with a ModelOpt ``quantization_config``."""
    config = json.loads((HF_FIXTURES / "llama-3.1-8b.json").read_text())
    config["quantization_config"] = {"quant_method": "modelopt", "ignore": ["lm_head"], **quantization}
    path = tmp_path / "modelopt.json"
    path.write_text(json.dumps(config))
    return str(path)


MIXED = {
    "quant_algo": "MIXED_PRECISION",
    "quantized_layers": {
        **{f"model.layers.{i}.mlp.down_proj": {"quant_algo": "NVFP4", "group_size": 16} for i in range(32)},
        **{f"model.layers.0.self_attn.{p}_proj": {"quant_algo": "FP8"} for p in "qkv"},  # one fused layer, one format
    },
}


@pytest.mark.parametrize(
    ("quantization", "kind"), [({"quant_algo": "FP8"}, "FP8"), ({"quant_algo": "FP8_PB_WO"}, "FP8"), (MIXED, "MIXED")]
)
def test_modelopt_fp8_and_mixed_precision_need_0_21_0_on_rocm(cli, tmp_path, quantization, kind):
    """Trial 320 #1: a ModelOpt FP8 Llama was priced on an MI300X under vLLM 0.10.0, whose ROCm platform lists no
    ModelOpt method; 0.20.x lists ``modelopt_fp4`` alone, 0.21.0 ``modelopt`` and ``modelopt_mixed`` too. The control:
    the same file on an H100 under 0.10.0, and on the MI300X under 0.21.0, is priced."""
    path = _modelopt_file(tmp_path, quantization)
    for release in ("0.10.0", "0.19.1", "0.20.2"):
        refused = cli.run("kv", path, "--target", "mi300x", "--engine", f"vllm@{release}", "--seq", "8k")
        assert refused.exit_code == 2 and "Traceback" not in refused.stderr
        assert f"vLLM {release} does not list ModelOpt {kind}" in refused.stderr and "vllm@0.21.0" in refused.stderr
    assert cli.run("kv", path, "--target", "mi300x", "--engine", "vllm@0.21.0", "--seq", "8k").exit_code == 0
    assert cli.run("kv", path, "--target", "h100", "--engine", "vllm@0.10.0", "--seq", "8k").exit_code == 0


def test_one_nvfp4_algorithm_keeps_its_own_rule():
    """ModelOpt NVFP4 alone is ``modelopt_fp4``, which the ROCm rule above does not judge (``rocm_nvfp4_refusal``)."""
    assert rocm_modelopt_refusal(_scheme(), "0.19.1") is None


def test_a_mixed_precision_export_of_one_module_is_still_mixed_precision():
    """Review 325 #4: one NVFP4 module under MIXED_PRECISION read as one algorithm (NVFP4, which petit serves), where
    vLLM resolves it to ``modelopt_mixed``, unlisted on ROCm before 0.21.0."""
    config = json.loads((HF_FIXTURES / "llama-3.1-8b.json").read_text())
    config["quantization_config"] = {
        "quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
        "quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "NVFP4", "group_size": 16}},
    }  # fmt: skip
    scheme = read_checkpoint_weights(config, "config.json").scheme
    refusal = rocm_modelopt_refusal(scheme, "0.19.1")
    assert refusal is not None and "ModelOpt MIXED_PRECISION" in refusal
    assert rocm_modelopt_refusal(scheme, "0.21.0") is None


@pytest.mark.parametrize(
    ("model", "engine", "refused"),
    [("llama-3.3-70b-instruct", "vllm@0.10.0", "does not run NVFP4 on ROCm"),
     ("deepseek-v3", "vllm@0.11.0", "the fp4 experts of this MoE do not load"),
     ("llama-3.3-70b-instruct", "vllm@0.11.0", None),  # petit_nvfp4: a dense model's linear layers, W4A16
     ("deepseek-v3", "vllm@0.20.0", None),  # emulated from 0.20
     ("deepseek-v3", "vllm", None)],
)  # fmt: skip
def test_nvfp4_typed_as_a_format_on_amd_is_read_as_modelopt_s_by_release(cli, model, engine, refused):
    """Trial 402 #4: --weight-dtype nvfp4 on an MI300X was priced and launched under vLLM 0.10, which lists no
    ModelOpt method on ROCm and builds no Marlin kernel there; a typed format now meets the rules a ModelOpt NVFP4
    checkpoint meets (the control: an NVIDIA target is never refused)."""
    args = ("kv", model, "--target", "8xmi300x", "--tp", "8", "--weight-dtype", "nvfp4", "--engine", engine)
    result = cli.run(*args)
    if refused is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2 and refused in result.stderr and len(result.stderr.strip().splitlines()) == 1
    nvidia = ("kv", model, "--target", "8xh200", "--tp", "8", "--weight-dtype", "nvfp4", "--engine", engine)
    assert cli.run(*nvidia).exit_code == 0


def test_the_typed_nvfp4_refusal_offers_formats_the_release_runs(cli):
    """Review 403 #8, 405 #7: a dense model was told "or ... mxfp4 weights" (the experts' alone), then mxfp4-linear,
    which vLLM 0.10 emulates on an MI300X and mha refuses: bf16 or fp8 alone are offered."""
    dense = cli.run("kv", "llama-3.1-8b", "--target", "mi300x", "--weight-dtype", "nvfp4", "--engine", "vllm@0.10.0")
    assert dense.stderr.strip().endswith("or bf16 or fp8 weights")
    assert (
        cli.run(
            "kv", "llama-3.1-8b", "--target", "mi300x", "--weight-dtype", "fp8", "--engine", "vllm@0.10.0"
        ).exit_code
        == 0
    )


def test_from_0_20_0_the_emulated_nvfp4_step_is_refused_and_kv_says_why(cli):
    """Trial 407 #2: NVFP4 weights on an MI300X were priced as a 4-bit step (decode 68 ms for Llama-3.1-70B) with no
    word; from 0.20.0 vLLM's only ROCm NVFP4 kernels dequantise every weight to bf16 each forward
    (``EmulationNvFp4LinearKernel``), a time mha does not price, as Quark's emulated MXFP4. kv prices the memory and
    says why it shows no step; plan refuses in one line. The control: 0.19's petit W4A16 kernel (dense) is priced."""
    args = ("llama-3.1-70b", "--weight-dtype", "nvfp4", "--target", "mi300x")
    said = "NVFP4 weights (nvfp4): vLLM from 0.20 runs them on AMD GPUs only by emulation, dequantising every weight"
    kv = cli.json("kv", *args)
    assert kv["latency"] is None and kv["memory"]["weights_fit"]
    assert any(line.startswith(f"no step latency: {said}") for line in kv["warnings"])
    refused = cli.run("plan", *args, "--tp", "1", "--closed-form")
    assert refused.exit_code == 2 and refused.stderr.strip().startswith(f"error: {said}")
    assert "\n" not in refused.stderr.strip()
    petit = cli.json("plan", *args, "--tp", "1", "--closed-form", "--engine", "vllm@0.19")
    assert petit["itl_ms"] > 0
