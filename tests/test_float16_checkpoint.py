"""A config.json naming float16 weights is priced in fp16, as `--dtype auto` runs it (``core.sources``)."""

import json
from pathlib import Path

from mha_cli.core.check import check_design
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.sources import FLOAT16_CHECKPOINT, checkpoint_dtype_name, load_source
from tests.conftest import reference_hf_config


def written(tmp_path: Path, name: str, **changes) -> str:
    """Llama-2-7B's published config.json (torch_dtype float16) with ``changes``; a None value drops the key."""
    config = json.loads(reference_hf_config("llama-2-7b").read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_llama2_float16_is_priced_in_fp16_with_the_same_bytes():
    source = load_source(str(reference_hf_config("llama-2-7b")))
    assert FLOAT16_CHECKPOINT in source.assumptions
    deployment = merge_deployment(source.deployment, model=source.model)
    assert (deployment.weight_dtype, deployment.kv_dtype) == ("fp16", "fp16")
    # 32 layers x 2 (K and V) x 32 heads x 128 x 2 bytes: the bf16 figure, in fp16
    result = check_design(str(reference_hf_config("llama-2-7b")), seq_len=4096)
    assert result.kv.bytes_per_token == 524_288


def test_a_bfloat16_config_and_a_flag_keep_bf16(tmp_path):
    source = load_source(written(tmp_path, "bf16", torch_dtype="bfloat16"))
    assert FLOAT16_CHECKPOINT not in source.assumptions
    assert merge_deployment(source.deployment, model=source.model).weight_dtype == "bf16"
    fp16 = load_source(str(reference_hf_config("llama-2-7b")))
    asked = merge_deployment(fp16.deployment, model=fp16.model, weight_dtype="bf16", kv_dtype="fp8")
    assert (asked.weight_dtype, asked.kv_dtype) == ("bf16", "fp8")


def test_transformers_5_dtype_key_and_a_text_config_are_read():
    assert checkpoint_dtype_name({"dtype": "float16", "torch_dtype": "bfloat16"}) == "float16"
    assert checkpoint_dtype_name({"text_config": {"torch_dtype": "float16"}}) == "float16"
    assert checkpoint_dtype_name({"model_type": "llama"}) is None


def test_gemma2_runs_bf16_even_from_float16(tmp_path):
    """vLLM's _FLOAT16_NOT_SUPPORTED_MODELS: `--dtype auto` gives Gemma 2 bf16 whatever its config says."""
    config = json.loads(reference_hf_config("gemma-2-9b").read_text())
    config["torch_dtype"] = "float16"
    path = tmp_path / "gemma2.json"
    path.write_text(json.dumps(config))
    source = load_source(str(path))
    assert FLOAT16_CHECKPOINT not in source.assumptions
    assert merge_deployment(source.deployment, model=source.model).weight_dtype == "bf16"


def test_a_float16_model_on_a_t4_passes_check_strict(tmp_path):
    """The false 't4 has no bf16' warning failed `check --strict` for a model the T4 runs as stored."""
    small = written(tmp_path, "small", num_hidden_layers=4)
    result = check_design(small, strict=True, target="t4", seq_len=4096)
    assert result.passed, result.findings
    as_bf16 = written(tmp_path, "small-bf16", num_hidden_layers=4, torch_dtype="bfloat16")
    warned = check_design(as_bf16, strict=True, target="t4", seq_len=4096, kv_dtype="bf16")
    assert not warned.passed  # a bf16 cache asked for on a T4 is still told to run in fp16


def test_a_float32_config_is_priced_in_bf16_and_says_so(tmp_path):
    """vLLM's auto dtype runs a float32 checkpoint in bf16: priced so before, silently (trial 245)."""
    from mha_cli.core.sources import FLOAT32_CHECKPOINT

    source = load_source(written(tmp_path, "fp32", torch_dtype="float32"))
    assert FLOAT32_CHECKPOINT in source.assumptions
    assert merge_deployment(source.deployment, model=source.model).weight_dtype == "bf16"


def test_a_bf16_default_on_a_t4_needs_no_word_where_vllm_falls_back_by_itself(tmp_path):
    """vLLM from 0.10.0 (read then; 0.13.0 was the first read before trial 366 #7) runs a bf16 default in fp16 on a
    device without bf16 (_resolve_auto_dtype): no warning, so
    `check --strict` passes a bf16 or float32 checkpoint there (review 247: the float16 fix missed presets and float32
    configs). A flag asking bf16, or an older release, is still told; Gemma 2, which vLLM never runs in fp16, runs in
    float32 there: said, with the flags that price it."""
    small = written(tmp_path, "small-bf16", num_hidden_layers=4, torch_dtype="bfloat16")
    assert check_design(small, strict=True, target="t4", seq_len=4096).passed
    assert not check_design(small, strict=True, target="t4", seq_len=4096, weight_dtype="bf16").passed
    assert not check_design(small, strict=True, target="t4", seq_len=4096, engine="vllm@0.9").passed
    assert check_design(small, strict=True, target="t4", seq_len=4096, engine="vllm@0.10").passed
    gemma = json.loads(reference_hf_config("gemma-2-9b").read_text())
    path = tmp_path / "gemma2.json"
    path.write_text(json.dumps(gemma))
    said = check_design(str(path), target="t4", seq_len=2048).deployment_warnings
    assert any("vLLM never runs gemma2 in fp16" in note and "--weight-dtype fp32" in note for note in said)
    assert not any("vLLM never runs" in note for note in check_design(str(path), target="a100").deployment_warnings)


def test_the_float32_note_goes_once_fp32_is_priced_and_is_vllms_own(tmp_path):
    """Review 249: the note stayed after --weight-dtype fp32 (failing --strict whatever was passed), named vLLM under
    SGLang, and sat beside a 'use fp16' advice vLLM refuses for Gemma 2."""
    path = tmp_path / "gemma2.json"
    path.write_text(reference_hf_config("gemma-2-9b").read_text())
    priced = check_design(str(path), target="2xv100", seq_len=4096, weight_dtype="fp32", kv_dtype="fp32", strict=True)
    assert priced.passed and not priced.deployment_warnings
    told = check_design(str(path), target="2xv100", seq_len=4096).deployment_warnings
    assert any("vLLM never runs gemma2 in fp16" in note for note in told)
    assert not any("use fp16" in note for note in told)
    other = check_design(str(path), target="2xv100", seq_len=4096, engine="sglang").deployment_warnings
    assert not any("vLLM never runs" in note for note in other)


def test_a_dtype_mha_does_not_read_is_refused_not_priced_as_bf16(cli, tmp_path):
    """A Llama config.json with dtype "float8" was priced as bf16 with no word (found by newuser trial 251): refused
    in one line naming the value, unless --weight-dtype says what to price."""
    config = json.loads(reference_hf_config("llama-3.1-8b").read_text())
    path = tmp_path / "odd" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**config, "torch_dtype": "float8"}))
    refused = cli.run("kv", str(path))
    assert refused.exit_code == 2 and "dtype 'float8' (config.json) is not a torch dtype mha reads" in refused.output
    assert cli.run("kv", str(path), "--weight-dtype", "bf16").exit_code == 0


def test_a_float8_dtype_is_vllms_bf16_fallback_said(cli, tmp_path):
    """Real fp8 checkpoints name float8_e4m3fn (RedHatAI's Llama-4-Scout-FP8-dynamic): vLLM's _resolve_auto_dtype
    falls back to bf16 for it, so the fp8 scheme and the bf16 rest are priced as before, with the assumption said (the
    review of this change found the refusal above blocking them)."""
    config = json.loads(reference_hf_config("llama-3.1-8b").read_text())
    path = tmp_path / "fp8" / "config.json"
    path.parent.mkdir()
    quant = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    path.write_text(json.dumps({**config, "torch_dtype": "float8_e4m3fn", "quantization_config": quant}))
    data = cli.json("kv", str(path))
    assert data["deployment"]["weight_dtype"] == "fp8"
    assert any(
        note.startswith("dtype float8_e4m3fn (config.json): vLLM runs the model") for note in data["assumptions"]
    )
    path.write_text(json.dumps({**config, "quantization_config": quant}))
    assert cli.json("kv", str(path))["weight_bytes"] == data["weight_bytes"]


def test_plan_refuses_a_family_vllm_runs_in_float32_without_bf16(cli):
    """kv warned that vLLM runs Gemma 3 in float32 on a T4 while plan priced bf16 and printed a line that runs out of
    memory (trial 366 #3): plan refuses it; fp32 asked is priced (and here does not fit); an L4 (bf16) is the control."""
    args = ("plan", "gemma-3-4b-it", "--tp", "1", "--isl", "1024", "--osl", "128", "--closed-form")
    refused = cli.run(*args, "--target", "t4")
    assert refused.exit_code == 2 and "vLLM never runs gemma3 in fp16" in refused.output
    assert "this rank's 16.02 GiB exceed" in cli.run(*args, "--target", "t4", "--weight-dtype", "fp32").output
    assert cli.run(*args, "--target", "l4").exit_code == 0
