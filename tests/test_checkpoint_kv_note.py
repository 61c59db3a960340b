"""A checkpoint's declared KV-cache format (ModelOpt ``kv_cache_quant_algo``, compressed-tensors ``kv_cache_scheme``)
is named among the assumptions, never silently ignored: mha prices the cache in ``--kv-dtype``'s format, and vLLM
from 0.14.0 allocates fp8 by itself for a ModelOpt checkpoint that declares it (``resolve_kv_cache_dtype_string``,
read in the 0.13.0 and 0.14.0 wheels), so the line says how to price that. Found by newuser3: such a checkpoint was
planned with a bf16 cache and no word about the field."""

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


@pytest.mark.parametrize(("quantization", "sidecar"), [(MODELOPT, None), (None, SIDECAR)], ids=["config", "sidecar"])
def test_a_modelopt_fp8_kv_cache_is_named_with_how_to_price_it(cli, tmp_path, quantization, sidecar):
    path = write(tmp_path / "model", quantization, sidecar)
    bf16, lines = kv_assumptions(cli, path)
    assert lines == [
        "the checkpoint declares its KV cache FP8 (kv_cache_quant_algo); the cache is priced in --kv-dtype's format"
        " (bf16 unless given): vLLM from 0.14.0 allocates fp8 for it when --kv-cache-dtype is auto"
        " (resolve_kv_cache_dtype_string), earlier releases the model's dtype, and SGLang reads it too"
        " (sgl-project/sglang#27906, its release not read here): give --kv-dtype fp8 to price that"
    ]
    fp8, _ = kv_assumptions(cli, path, "--kv-dtype", "fp8")  # what the line offers halves the cache: 131,072 -> 65,536
    assert (bf16["bytes_per_token"], fp8["bytes_per_token"]) == (131072, 65536)


def test_a_compressed_tensors_kv_scheme_is_named_and_priced_as_vllm_runs_it(cli, tmp_path):
    _, lines = kv_assumptions(cli, write(tmp_path / "model", COMPRESSED))
    assert lines == [
        "the checkpoint declares its KV cache fp8 (kv_cache_scheme); the cache is priced in --kv-dtype's format"
        " (bf16 unless given), as vLLM runs it when --kv-cache-dtype is auto (the model's dtype)"
    ]


def test_a_checkpoint_declaring_no_kv_format_gets_no_line(cli, tmp_path):
    assert kv_assumptions(cli, write(tmp_path / "model", {**MODELOPT, "kv_cache_quant_algo": None}))[1] == []
