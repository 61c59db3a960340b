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
    warned = check_design(as_bf16, strict=True, target="t4", seq_len=4096)
    assert not warned.passed  # a bf16 checkpoint on a T4 is still told to run in fp16


def test_a_float32_config_is_priced_in_bf16_and_says_so(tmp_path):
    """vLLM's auto dtype runs a float32 checkpoint in bf16: priced so before, silently (trial 245)."""
    from mha_cli.core.sources import FLOAT32_CHECKPOINT

    source = load_source(written(tmp_path, "fp32", torch_dtype="float32"))
    assert FLOAT32_CHECKPOINT in source.assumptions
    assert merge_deployment(source.deployment, model=source.model).weight_dtype == "bf16"
