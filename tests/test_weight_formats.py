"""Weight formats with their real bytes (values, scales, zeros, group indices), against hand counts, and the format
a Hugging Face checkpoint's ``quantization_config`` states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_quantization import checkpoint_weight_format
from mha_cli.core.params import matrices_per_rank, params_per_rank
from mha_cli.core.presets import get_preset
from mha_cli.core.sources import load_source
from mha_cli.core.weight_bytes import model_weight_bytes, rank_checkpoint_bytes, rank_weight_bytes
from mha_cli.core.weight_formats import normalise_weight_format, weight_format
from mha_cli.core.weight_scheme import SchemeRule, WeightScheme

OUT, IN = 4096, 14336  # Llama-3-8B's down projection: 4096 outputs of 14,336 inputs
LLAMA_LAYER = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 4096 * 14336  # q, o; k, v; gate, up, down: 218,103,808
LLAMA_REST = 2 * 128_256 * 4096 * 2 + (2 * 32 + 1) * 4096 * 2  # embedding and head rows, norms: bf16


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bf16", 2 * OUT * IN),
        ("fp8", OUT * IN + 4),  # one fp32 scale per matrix
        ("fp8-block", OUT * IN + 4 * (4096 // 128) * (14336 // 128)),  # one fp32 per 128 x 128 block
        ("int8", OUT * IN + 2 * OUT),  # one fp16 scale per output row
        ("awq", OUT * IN // 2 + (IN // 128) * (OUT // 8) * 4 + (IN // 128) * OUT * 2),  # qweight, qzeros, scales
        ("gptq-int4", OUT * IN // 2 + (IN // 128) * (OUT // 8) * 4 + (IN // 128) * OUT * 2 + 4 * IN),  # + g_idx
        ("nf4", OUT * IN // 2 + 4 * (OUT * IN // 64) + 64),  # fp32 absmax per 64, the 16-entry code
        ("nf4-dq", OUT * IN // 2 + OUT * IN // 64 + 4 * -(-(OUT * IN // 64) // 256) + 4 + 272 * 4),
        ("mxfp4", OUT * IN // 2 + OUT * (IN // 32)),  # 17 B per 32 weights
    ],
)
def test_matrix_bytes_by_hand(name, expected):
    assert weight_format(name).matrix_bytes(OUT, IN) == expected


def test_nvfp4_matrix_by_hand():
    """4096 x 4096 in NVFP4: 8,388,608 B of e2m1 pairs, 1,048,576 fp8 scales (one per 16 inputs), an fp32 global
    scale (weight_scale_2) and an fp32 input scale."""
    assert weight_format("nvfp4").matrix_bytes(4096, 4096) == 8_388_608 + 1_048_576 + 4 + 4


def test_mxfp4_on_a_dense_model_covers_every_linear_layer():
    """Quark's MXFP4 on Llama-3-8B: every linear layer at 17 B per 32 weights; embeddings, head and norms bf16."""
    linear = 32 * LLAMA_LAYER
    assert (
        rank_weight_bytes(get_preset("llama-3-8b"), 1, "mxfp4-linear", vocab_padding=1)
        == linear * 17 // 32 + LLAMA_REST
    )
    with pytest.raises(BadInputError, match="use mxfp4-linear for MXFP4 on every linear layer"):
        rank_weight_bytes(get_preset("llama-3-8b"), 1, "mxfp4")


def test_a_uniform_scheme_prices_as_the_named_format():
    """A rule on every linear layer in a format's own layout prices every preset as the named format does, at every
    split, experts included (the named formats and checkpoint schemes are one path)."""
    for name in ("llama-3-8b", "deepseek-v3", "qwen3-next-80b-a3b", "gpt-oss-20b"):
        model = get_preset(name)
        for fmt in ("fp8", "int4", "nvfp4"):
            layout = weight_format(fmt).layout
            rule = SchemeRule(name="all", targets=["Linear"], format=fmt, **layout._asdict())
            scheme = WeightScheme(method="test", format=fmt, rules=[rule])
            for tp in (1, 2, 4):
                assert rank_checkpoint_bytes(model, tp, scheme) == rank_weight_bytes(model, tp, fmt), (name, fmt, tp)


def test_mxfp4_is_17_bytes_per_32_weights():
    assert weight_format("mxfp4").matrix_bytes(1, 32) == 17


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_matrices_and_the_rest_add_up_to_the_rank(tp):
    """The linear matrices a format quantises plus embeddings, norms (and nothing else here) are the rank's weights."""
    model = get_preset("llama-3-8b")
    matrices = sum(m.count * m.out_features * m.in_features for m in matrices_per_rank(model, tp))
    rest = 2 * (128_256 // tp) * 4096 + (2 * 32 + 1) * 4096  # embedding and head rows, norms
    assert matrices + rest == params_per_rank(model, tp)


def test_fp8_keeps_embeddings_and_head_in_bf16():
    """Llama-3-8B in fp8: 7 matrices per layer at 1 B + 4 B of scale, embeddings, head and norms at 2 B."""
    model = get_preset("llama-3-8b")
    linear = 32 * (2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 4096 * 14336)
    rest = 2 * 128_256 * 4096 + 65 * 4096
    assert model_weight_bytes(model, "fp8") == linear + 32 * 7 * 4 + 2 * rest  # 9.08 GB (vLLM logs 8.49 GiB)


def test_mxfp4_covers_the_routed_experts_only():
    """gpt-oss-20b: 24 layers x 32 experts x 3 matrices of 2,880 x 2,880 in mxfp4 (17 B per 32 weights); attention,
    router, expert biases, embeddings and head in bf16."""
    model = get_preset("gpt-oss-20b")
    experts = 24 * 32 * 3 * 2880 * 2880
    assert experts == 19_110_297_600
    assert model_weight_bytes(model, "mxfp4") == model_weight_bytes(model, "bf16") - 2 * experts + experts * 17 // 32


def test_mxfp4_on_a_model_without_experts_is_refused():
    with pytest.raises(BadInputError, match="quantises routed experts and llama-3-8b has none"):
        model_weight_bytes(get_preset("llama-3-8b"), "mxfp4")


def test_a_split_that_does_not_shard_is_the_whole_split_evenly():
    model = get_preset("llama-3-8b")
    assert rank_weight_bytes(model, 3, "fp8") == -(-rank_weight_bytes(model, 1, "fp8") // 3)


def test_names_and_aliases():
    assert [normalise_weight_format(n) for n in ("gptq", "AWQ", "bnb-nf4", "bfloat16", "fp8_e4m3")] == [
        "gptq-int4", "awq", "nf4", "bf16", "fp8"
    ]  # fmt: skip
    with pytest.raises(BadInputError, match=r"unknown weight format 'gptx': did you mean gptq-int4[?,]"):
        normalise_weight_format("gptx")
    # trial 367 #3: "fp4" was offered nv-fp4, an alias missing from the list of names after it; now the formats meant
    with pytest.raises(BadInputError, match=r"'fp4': did you mean nvfp4, mxfp4, nf4\? use one of"):
        normalise_weight_format("fp4")


@pytest.mark.parametrize(
    ("quantization", "expected"),
    [
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8-block"),  # DeepSeek-V3
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8"),
        ({"quant_method": "mxfp4"}, "mxfp4"),  # gpt-oss
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "gptq-int4"),
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, "awq"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "nf4"),
        (
            {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
             "bnb_4bit_use_double_quant": True},
            "nf4-dq",
        ),
        (
            {"quant_method": "compressed-tensors",
             "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}},
            "fp8",
        ),
    ],
)  # fmt: skip
def test_checkpoint_formats(quantization, expected):
    assert checkpoint_weight_format({"quantization_config": quantization}, "config.json") == expected


@pytest.mark.parametrize(
    ("quantization", "named"),
    [
        ({"quant_method": "hqq"}, "quant_method 'hqq'"),
        ({"quant_method": "gptq", "bits": 3, "group_size": 128}, "gptq with bits=3"),  # no Marlin kernel
        ({"quant_method": "gptq", "bits": 8, "group_size": 16}, "gptq with bits=8 and group_size=16"),
        ({"quant_method": "awq", "bits": 8, "group_size": 128}, "awq with bits=8"),  # AWQ is 4-bit only
        # a string: "awq with bits=4 and group_size=128 is not a weight format", the very one listed (trial 243)
        ({"quant_method": "awq", "bits": "4", "group_size": 128}, "awq with bits='4' and group_size=128"),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "bitsandbytes other than 4-bit nf4"),
        # audit5: priced as 128 x 128 blocks (Llama-3-8B: 1,703,936 B of fp32 scales, where 64 x 64 blocks hold
        # 6,815,744 B), a format the checkpoint is not in
        ({"quant_method": "fp8", "weight_block_size": [64, 64]}, r"fp8 with weight_block_size \[64, 64\]"),
        ({"quant_method": "fp8", "weight_block_size": [128]}, r"fp8 with weight_block_size \[128\]"),
    ],
)
def test_unknown_quantisation_is_refused_not_priced_as_bf16(quantization, named):
    with pytest.raises(BadInputError, match=named):
        checkpoint_weight_format({"quantization_config": quantization}, "config.json")


def test_a_checkpoint_is_priced_in_its_own_format(cli, tmp_path):
    source = load_source("tests/fixtures/hf_configs/gpt-oss-20b.json")
    assert source.deployment is not None and source.deployment.weight_dtype == "mxfp4"
    data = cli.json("kv", "tests/fixtures/hf_configs/deepseek-v3.json", "--target", "8xh200")
    assert data["deployment"]["weight_dtype"] == "fp8-block"
    assert any("fp8-block (quantization_config)" in line for line in data["assumptions"])
    overridden = cli.json(
        "kv", "tests/fixtures/hf_configs/deepseek-v3.json", "--target", "8xh200", "--weight-dtype", "bf16"
    )
    assert overridden["engine"]["weights_bytes_per_rank"] > data["engine"]["weights_bytes_per_rank"]
    path = tmp_path / "config.json"
    config = json.loads(Path("tests/fixtures/hf_configs/llama-3-8b.json").read_text())
    path.write_text(json.dumps(config | {"quantization_config": {"quant_method": "hqq"}}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2 and "quantization_config quant_method 'hqq'" in result.stderr


LLAMA_31_8B_LINEAR = 32 * (2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096)
"""Llama-3.1-8B's linear weights: q, o 4096 x 4096, k, v 1024 x 4096, gate, up, down 14,336 x 4,096, 32 layers."""
LLAMA_31_8B_REST = 2 * 128256 * 4096 * 2 + (2 * 32 + 1) * 4096 * 2
"""Its embedding and untied head, and norms, in bf16."""
G_IDX = 32 * 4 * (6 * 4096 + 14336)
"""GPTQ's int32 g_idx, one per input of each checkpoint matrix (down_proj's inputs are 14,336)."""
ROWS = 32 * (4096 + 1024 + 1024 + 4096 + 2 * 14336 + 4096)
"""The output rows of every linear matrix (q, k, v, o, gate, up, down): one scale and zero each per group of a row."""


@pytest.mark.parametrize(
    ("quantization", "weight_dtype", "by_hand"),
    [
        # GPTQ-Int8, group 128 (Qwen2.5's -GPTQ-Int8 kind): 1 B a weight, an fp16 scale and an 8-bit zero a group
        ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "int8",
         LLAMA_31_8B_LINEAR + LLAMA_31_8B_LINEAR // 128 * (2 + 1) + G_IDX + LLAMA_31_8B_REST),
        ({"quant_method": "gptq", "bits": 4, "group_size": 32}, "int4",
         LLAMA_31_8B_LINEAR // 2 + LLAMA_31_8B_LINEAR // 32 * 2 + LLAMA_31_8B_LINEAR // 32 // 2 + G_IDX
         + LLAMA_31_8B_REST),
        # per channel (group -1): one fp16 scale and one 4-bit zero a row
        ({"quant_method": "gptq", "bits": 4, "group_size": -1}, "int4",
         LLAMA_31_8B_LINEAR // 2 + ROWS * 2 + ROWS // 2 + G_IDX + LLAMA_31_8B_REST),
        # AWQ group 64: no g_idx
        ({"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True, "version": "gemm"}, "int4",
         LLAMA_31_8B_LINEAR // 2 + LLAMA_31_8B_LINEAR // 64 * 2 + LLAMA_31_8B_LINEAR // 64 // 2 + LLAMA_31_8B_REST),
    ],
)  # fmt: skip
def test_gptq_and_awq_at_other_widths_and_groups_are_priced_by_hand(cli, tmp_path, quantization, weight_dtype, by_hand):
    """GPTQ 8-bit and groups of 32, 64 or per channel, which vLLM's Marlin kernels run, were refused (asked by
    newuser trial 235); 4 bits at group 128 keeps its named formats."""
    config = json.loads(Path("tests/fixtures/hf_configs/llama-3.1-8b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "quantization_config": quantization}))
    data = cli.json("kv", str(path))
    assert data["deployment"]["weight_dtype"] == weight_dtype
    assert data["weight_bytes"] == by_hand


def test_vllms_later_quantization_names_are_the_formats_they_mean():
    """Trial 368 #5: vLLM 0.20-0.34's own --quantization names were refused as "unknown weight format":
    fp8_per_tensor (0.31 asks for it instead of fp8) and fp8_per_block are its online fp8 with a scale per tensor or
    per 128 x 128 block, auto_awq and auto_gptq an AWQ or GPTQ checkpoint's method with vLLM's kernel choice
    (``QuantizationMethods`` in the 0.20.0-0.34.0 wheels); its other new names are refused as vLLM's, not priced."""
    from mha_cli.core.vllm_quantization import pasted_format

    assert [normalise_weight_format(n) for n in ("fp8_per_tensor", "fp8_per_block", "auto_awq", "auto_gptq")] == [
        "fp8", "fp8-block", "awq", "gptq-int4"
    ]  # fmt: skip
    assert model_weight_bytes(get_preset("llama-3-8b"), "fp8_per_tensor") == model_weight_bytes(
        get_preset("llama-3-8b"), "fp8"
    )
    for name in ("fp8_per_channel", "mxfp8", "nvfp4_per_token", "cpu_awq", "fp_quant"):  # review 370 #9: and these
        with pytest.raises(BadInputError, match=f"{name} is a vLLM quantization mha does not price"):
            normalise_weight_format(name)
    # pasted on an AWQ or GPTQ checkpoint, auto_awq / auto_gptq are its own method: the checkpoint as stored
    assert pasted_format("auto_awq", "awq", None) is None and pasted_format("auto_gptq", "gptq-int4", "gptq") is None
    with pytest.raises(BadInputError, match="checkpoint's quantization_config says awq"):
        pasted_format("auto_gptq", "awq", None)  # another method: vLLM refuses to start
