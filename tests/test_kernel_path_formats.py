"""Checkpoint formats named by the kernel path vLLM 0.19.1 runs them on (``core.compute_dtype``): compressed-tensors
NVFP4 without activations is W4A16 (``CompressedTensorsW4A16Fp4``, Marlin), with NVFP4 activations W4A4;
compressed-tensors MXFP4 is W4A16 whatever its activations (``CompressedTensorsW4A16Mxfp4``); Quark MXFP4 runs the fp4
GEMM only with MXFP4 activations (``QuarkOCP_MX.emulate``); int8 says W8A8 or W8A16. Bytes by hand for each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.core.compute_dtype import compute_dtype
from mha_cli.core.cost.priors import peak_matmul_flops
from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_quantization import read_checkpoint_weights
from mha_cli.core.targets import load_targets
from mha_cli.core.weight_formats import weight_format

LLAMA3 = json.loads(Path("tests/fixtures/hf_configs/llama-3-8b.json").read_text())
NVFP4_ARGS = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}
MXFP4_ARGS = {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32, "symmetric": True}


def compressed(weights: dict, inputs: dict | None, fmt: str) -> dict:
    """One compressed-tensors group on every linear layer, as llm-compressor writes it."""
    group = {"targets": ["Linear"], "weights": weights, "input_activations": inputs}
    return {"quant_method": "compressed-tensors", "format": fmt, "config_groups": {"group_0": group}}


def rule_of(quant: dict):
    weights = read_checkpoint_weights({**LLAMA3, "quantization_config": quant}, "config.json")
    assert weights is not None and weights.scheme is not None
    assert weights.format == weights.scheme.rules[0].format
    return weights.scheme.rules[0]


def test_nvfp4_without_activations_is_w4a16_with_one_global_scale():
    """``CompressedTensorsW4A16Fp4.create_weights``: weight_packed (out, in/2) uint8, weight_scale (out, in/16) fp8,
    weight_global_scale fp32; no input_global_scale. 4096 x 4096: 8,388,608 + 1,048,576 + 4 B."""
    rule = rule_of(compressed(NVFP4_ARGS, None, "nvfp4-pack-quantized"))
    assert rule.format == "nvfp4-w4a16"
    assert rule.layout.matrix_bytes(4096, 4096) == 8_388_608 + 1_048_576 + 4
    assert weight_format("nvfp4-w4a16").matrix_bytes(4096, 4096) == 8_388_608 + 1_048_576 + 4
    assert rule.description == "nvfp4 W4A16 (Marlin), fp8 scale per 16"


def test_nvfp4_with_nvfp4_activations_is_w4a4_with_two_global_scales():
    """``CompressedTensorsW4A4Fp4``: the same tensors + an fp32 input_global_scale."""
    rule = rule_of(compressed(NVFP4_ARGS, NVFP4_ARGS | {"dynamic": "local"}, "nvfp4-pack-quantized"))
    assert rule.format == "nvfp4"
    assert rule.layout.matrix_bytes(4096, 4096) == 8_388_608 + 1_048_576 + 8


def test_nvfp4_weights_with_other_activations_are_refused():
    """fp8 activations beside NVFP4 weights match no scheme in ``_get_scheme_from_parts`` (NotImplementedError)."""
    fp8_tokens = {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True}
    with pytest.raises(BadInputError, match="input_activations other than nvfp4"):
        rule_of(compressed(NVFP4_ARGS, fp8_tokens, "nvfp4-pack-quantized"))


@pytest.mark.parametrize("inputs", [None, MXFP4_ARGS | {"dynamic": True}])
def test_compressed_tensors_mxfp4_is_w4a16_whatever_its_activations(inputs):
    """``_is_mxfp4`` looks at the weights alone: ``CompressedTensorsW4A16Mxfp4``, weight_packed (out, in/2) uint8 and
    weight_scale (out, in/32) uint8, no global scale: 4096 x 4096 is 8,388,608 + 524,288 B."""
    rule = rule_of(compressed(MXFP4_ARGS, inputs, "mxfp4-pack-quantized"))
    assert rule.format == "mxfp4-w4a16"
    assert rule.layout.matrix_bytes(4096, 4096) == 8_388_608 + 524_288
    assert weight_format("mxfp4-w4a16").matrix_bytes(4096, 4096) == 8_388_608 + 524_288


@pytest.mark.parametrize(("inputs", "fmt"), [
    ({"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0", "is_dynamic": True},
     "mxfp4-linear"),  # W4A4: AITER's gemm_afp4wfp4 on gfx95
    (None, "mxfp4-w4a16"),  # no input spec: input_dtype None, emulated
    ({"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": True}, "mxfp4-w4a16"),  # W4A8: emulated
])  # fmt: skip
def test_quark_mxfp4_runs_fp4_only_with_mxfp4_activations(inputs, fmt):
    mx = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0", "is_dynamic": False}
    spec = {"weight": mx} | ({"input_tensors": inputs} if inputs else {})
    rule = rule_of({"quant_method": "quark", "exclude": ["lm_head"], "export": {}, "global_quant_config": spec})
    assert rule.format == fmt
    assert rule.layout.matrix_bytes(4096, 4096) == 8_388_608 + 524_288


@pytest.mark.parametrize(("target", "fmt", "tflops"), [
    ("b200", "nvfp4", 9000), ("b200", "nvfp4-w4a16", 2250),  # Marlin: bf16 MMAs on Blackwell too
    ("mi355x", "mxfp4-linear", 10066.4), ("mi355x", "mxfp4-w4a16", 2516.6),  # emulated / Marlin: bf16
    ("l40s", "nvfp4", 362.1), ("h20", "nvfp4", 148),  # no fp4 tensor cores: Marlin, bf16
])  # fmt: skip
def test_w4a16_fp4_formats_are_priced_at_the_bf16_rate(target, fmt, tflops):
    assert peak_matmul_flops(load_targets()[target], fmt) == pytest.approx(tflops * 1e12)


def test_w4a16_formats_multiply_in_bf16():
    assert compute_dtype("nvfp4-w4a16") == compute_dtype("mxfp4-w4a16") == "bf16"


def test_int8_rules_say_w8a8_or_w8a16():
    """compressed-tensors int8: with int8 activations ``CompressedTensorsW8A8Int8`` (fp32 scale per row), without
    ``CompressedTensorsWNA16`` (a bf16 scale per row and the int64 (2,) weight_shape); both named int8 (no int8 rate).
    4096 x 4096: 16,777,216 + 4 x 4096 B, and 16,777,216 + 2 x 4096 + 16 B."""
    int8 = {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True}
    tokens = {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True, "symmetric": True}
    w8a8 = rule_of(compressed(int8, tokens, "int-quantized"))
    w8a16 = rule_of(compressed(int8, None, "pack-quantized"))
    assert (w8a8.format, w8a16.format) == ("int8", "int8")
    assert w8a8.description == "int8 W8A8 per channel, fp32 scales (int8 MMAs, priced at bf16: no int8 rate)"
    assert w8a16.description == "int8 W8A16 symmetric, per channel, bf16 scales"
    assert w8a8.layout.matrix_bytes(4096, 4096) == 16_777_216 + 4 * 4096
    assert w8a16.layout.matrix_bytes(4096, 4096) == 16_777_216 + 2 * 4096 + 16
