"""Checkpoints priced tensor by tensor: NVFP4 (ModelOpt), MXFP4 on dense layers (Quark), compressed-tensors groups
with their ignore lists, mixed checkpoints; each against a hand count, and published configs read from fixtures
(tests/fixtures/quantization/SOURCES.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mha_cli.core.checkpoint_names import module_names
from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_quantization import read_checkpoint_weights
from mha_cli.core.presets import get_preset
from mha_cli.core.sources import load_source
from mha_cli.core.weight_bytes import model_modules, rank_checkpoint_bytes, rank_weight_bytes, stored_matrices
from mha_cli.core.weight_formats import weight_format
from mha_cli.core.weight_scheme import WeightScheme, names

QUANT = Path("tests/fixtures/quantization")
LLAMA3 = json.loads(Path("tests/fixtures/hf_configs/llama-3-8b.json").read_text())

# Llama-3-8B, one layer: q and o 4096 x 4096, k and v 1024 x 4096, gate and up 14336 x 4096, down 4096 x 14336
LAYER = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]
LAYER_PARAMS = sum(o * i for o, i in LAYER)  # 218,103,808
REST = 2 * 128_256 * 4096 * 2 + (2 * 32 + 1) * 4096 * 2  # embedding and head rows, norms: bf16


def scheme_of(quant: dict, model_config: dict = LLAMA3) -> WeightScheme:
    weights = read_checkpoint_weights({**model_config, "quantization_config": quant}, "config.json")
    assert weights is not None and weights.scheme is not None
    return weights.scheme


def w4a16(group_size: int = 128, **extra) -> dict:
    """compressed-tensors W4A16 as llm-compressor writes it (its docs' GPTQ recipe: int4 symmetric, group 128)."""
    weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": group_size}
    group = {"targets": ["Linear"], "input_activations": None, "weights": weights | extra}
    return {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": group}}


def test_w4a16_group_128_layer_by_hand():
    """One Llama-3-8B layer in compressed-tensors W4A16: values packed 8 to an int32 word (4 bits each), a bf16 scale
    per 128 inputs of each row, the int64 (2,) weight_shape of each of the 7 matrices; no zero points (symmetric)."""
    layer = LAYER_PARAMS // 2 + 2 * LAYER_PARAMS // 128 + 7 * 16
    assert layer == 112_459_888
    model = get_preset("llama-3-8b")
    assert rank_checkpoint_bytes(model, 1, scheme_of(w4a16()), vocab_padding=1) == 32 * layer + REST


def test_asymmetric_act_order_adds_zero_points_and_group_indices():
    """down_proj (4096 x 14336) asymmetric with actorder group: + 4-bit zero points packed 8 to an int32 along the
    outputs per group (112 groups x 512 words) + an int32 g_idx per input."""
    rule = scheme_of(w4a16(symmetric=False, actorder="group")).rules[0]
    values, scales = 4096 * 14336 // 2, 2 * 4096 * 112
    zeros, g_idx, shape = 112 * 4 * (4096 // 8), 4 * 14336, 16
    assert rule.layout.matrix_bytes(4096, 14336) == values + scales + zeros + g_idx + shape


def test_an_ignored_layer_stays_bf16():
    """W4A16 with layer 0 ignored: that layer's matrices at 2 B a weight, the other 31 in int4; the control (nothing
    ignored) must differ by exactly one layer's bf16 bytes less its int4 bytes."""
    model = get_preset("llama-3-8b")
    layer = 112_459_888
    ignored = scheme_of(w4a16() | {"ignore": ["lm_head", "re:model\\.layers\\.0\\..*"]})
    assert rank_checkpoint_bytes(model, 1, ignored, vocab_padding=1) == 31 * layer + 2 * LAYER_PARAMS + REST
    control = rank_checkpoint_bytes(model, 1, scheme_of(w4a16()), vocab_padding=1)
    assert rank_checkpoint_bytes(model, 1, ignored, vocab_padding=1) - control == 2 * LAYER_PARAMS - layer


def test_a_mixed_checkpoint_prices_each_group_on_its_layers():
    """Two groups: NVFP4 on attention and gate/up (named by regex), fp8 per channel on every other linear layer
    (the down projections): 32 layers x (NVFP4 on 6 matrices + fp8 on down_proj with an fp32 scale per row)."""
    nvfp4 = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}
    fp8 = {"num_bits": 8, "type": "float", "strategy": "channel"}
    quant = {
        "quant_method": "compressed-tensors", "format": "mixed-precision", "ignore": ["lm_head"],
        "config_groups": {
            "group_0": {"targets": ["re:.*self_attn.*", "re:.*mlp.(gate|up)_proj"], "weights": nvfp4,
                        "format": "nvfp4-pack-quantized"},
            "group_1": {"targets": ["Linear"], "weights": fp8, "format": "float-quantized"},
        },
    }  # fmt: skip
    scheme = scheme_of(quant)
    assert scheme.format == "fp8"  # the rule on every linear layer names it
    first_six = LAYER[:6]
    nvfp4_bytes = sum(o * i // 2 + o * i // 16 + 4 for o, i in first_six)  # weight-only: one fp32 global scale
    fp8_bytes = 4096 * 14336 + 4 * 4096
    model = get_preset("llama-3-8b")
    assert rank_checkpoint_bytes(model, 1, scheme, vocab_padding=1) == 32 * (nvfp4_bytes + fp8_bytes) + REST


def test_experts_only_checkpoint():
    """Kimi-K2-Thinking's layout on DeepSeek-V3's shape: int4 group 32 on the routed experts only (attention, shared
    experts and dense MLPs ignored, as its published ignore list does): experts 58 layers x 256 x 3 matrices of
    2048 x 7168 in int4 with bf16 scales per 32 and a weight_shape each; every other weight bf16."""
    deepseek = json.loads(Path("tests/fixtures/hf_configs/deepseek-v3.json").read_text())
    quant = w4a16(group_size=32) | {
        "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]
    }
    model = load_source("deepseek-v3").model
    experts = 58 * 256 * 3 * 2048 * 7168
    expert_bytes = experts // 2 + 2 * experts // 32 + 58 * 256 * 3 * 16
    bf16 = rank_weight_bytes(model, 1, "bf16", vocab_padding=1)
    assert (
        rank_checkpoint_bytes(model, 1, scheme_of(quant, deepseek), vocab_padding=1)
        == bf16 - 2 * experts + expert_bytes
    )


KIMI_K25 = Path("tests/fixtures/hf_configs/kimi-k2.5.json")


def test_a_wrapper_s_text_config_quantization_config_prices_kimi_k2_5_as_stored():
    """moonshotai/Kimi-K2.5 keeps its compressed-tensors config in text_config only (vLLM 0.32.0 get_quant_config
    reads it there when the wrapper has none). One routed expert by hand: gate and up 2048 x 7168, down 7168 x 2048,
    each int4 packed 8 to an int32 (7,340,032 B), a bf16 scale per 32 inputs of each row (917,504 B) and the int64
    (2,) weight_shape vLLM allocates (16 B); attention, shared experts, the dense MLP, router and head stay bf16."""
    source = load_source(str(KIMI_K25))
    assert source.deployment is not None and source.deployment.weight_dtype == "int4"
    scheme = source.deployment.weight_scheme
    assert scheme is not None and scheme.method == "compressed-tensors"
    rule = scheme.rule_for("model.layers.5.mlp.experts.7.down_proj")
    assert rule is not None and rule.description == "int4 symmetric, group 32, bf16 scales"
    one_expert = 3 * (2048 * 7168 // 2 + 2048 * 7168 // 32 * 2 + 16)
    assert one_expert == 24_772_656
    assert sum(rule.layout.matrix_bytes(o, i) for o, i in ((2048, 7168), (2048, 7168), (7168, 2048))) == one_expert
    for kept in ("model.layers.5.self_attn.kv_b_proj", "model.layers.5.mlp.shared_experts.up_proj",
                 "model.layers.0.mlp.down_proj", "lm_head"):  # fmt: skip
        assert scheme.rule_for(kept) is None


def test_kimi_k2_5_weights_against_the_checkpoint_s_tensor_listing():
    """The whole text model against a transformers 5.7.0 dump of moonshotai/Kimi-K2.5's 64 safetensors files (index
    id 62530201892, "张量累计大小 554.27 GB", GiB: 595,148,192,736 B with the 471M-parameter vision tower and
    projector): its language_model tensors, shape by shape, are 594,205,904,896 B; the MoonViT tower and projector
    the rest, 942,287,840 B, 471,143,920 bf16 weights, which mha counts since trial 375 #2 (transformers 5.25's
    Kimi_K25ForConditionalGeneration builds as many). mha prices the experts' weight_shape as vLLM allocates it, int64
    (compressed_tensors_wNa16.py create_weights), not int32 as stored (+8 B x 3 x 23,040 experts), and leaves out the
    fp32 e_score_correction_bias (-4 B x 384 x 60)."""
    experts = 60 * 384
    listing = (
        2 * 163840 * 7168 * 2  # embed_tokens and lm_head, bf16
        + (61 * (7168 * 2 + 512 + 1536) + 7168) * 2  # norms
        + 61 * (576 * 7168 + 16384 * 512 + 7168 * 8192 + 1536 * 7168 + 12288 * 1536) * 2  # MLA projections
        + 3 * 18432 * 7168 * 2  # layer 0's dense MLP
        + experts * (7168 * 256 + 2 * 2048 * 896) * 4  # weight_packed, int32
        + experts * (7168 * 64 + 2 * 2048 * 224) * 2  # weight_scale, bf16
        + experts * 3 * 2 * 4  # weight_shape, int32 (2,)
        + experts * 4  # mlp.gate.e_score_correction_bias, fp32
        + 60 * 384 * 7168 * 2  # router (mlp.gate.weight), bf16
        + 60 * 3 * 2048 * 7168 * 2  # shared experts, bf16
    )
    assert listing == 594_205_904_896
    source = load_source(str(KIMI_K25))
    assert source.deployment is not None and source.deployment.weight_scheme is not None
    priced = rank_checkpoint_bytes(source.model, 1, source.deployment.weight_scheme, vocab_padding=1)
    tower = 471_143_920 * 2
    assert listing + tower == 595_148_192_736  # the dump's whole total
    assert priced == listing + tower + experts * 3 * 8 - experts * 4 == 595_148_653_536
    assert priced < rank_weight_bytes(source.model, 1, "bf16", vocab_padding=1) / 3  # the bf16 price it replaces


KIMI_K26_NVFP4 = Path("tests/fixtures/hf_configs/kimi-k2.6-nvfp4.json")


def test_kimi_k2_6_nvfp4_keeps_what_its_wrapper_spelled_exclusions_name_in_bf16():
    """nvidia/Kimi-K2.6-NVFP4 excludes ``language_model.model.layers.0*``, each layer's ``self_attn*`` and
    ``mlp.shared_experts*`` and ``language_model.lm_head``: its wrapper's names (vLLM 0.34.0 ``kimi_k25.py``). By hand:
    the 60 MoE layers' 384 routed experts, 3 matrices of 2048 x 7168 each, in NVFP4 (half a byte a weight and an fp8
    scale per 16: 9/16 B) with an fp32 weight_scale_2 and input_scale each (8 B); everything else bf16. Before the
    wrapper's spelling was read, every entry named nothing and the attention was priced in NVFP4 too (580,970,440,512
    B, 13.2 GB short)."""
    source = load_source(str(KIMI_K26_NVFP4))
    assert source.deployment is not None and source.deployment.weight_dtype == "nvfp4"
    scheme = source.deployment.weight_scheme
    assert scheme is not None and scheme.method == "modelopt"
    for kept in ("model.layers.0.mlp.down_proj", "model.layers.7.self_attn.q_a_proj",
                 "model.layers.7.mlp.shared_experts.up_proj", "lm_head"):  # fmt: skip
        assert scheme.rule_for(kept) is None, kept
    assert scheme.rule_for("model.layers.7.mlp.experts.5.gate_proj") is not None
    experts = 60 * 384 * 3 * 2048 * 7168
    parameters = 1_026_408_209_408  # the text model (mha kv), as kimi-k2.5.json's
    by_hand = experts * 9 // 16 + 60 * 384 * 3 * 8 + (parameters - experts) * 2
    assert by_hand == 594_205_812_736
    tower = 471_143_920 * 2  # the MoonViT tower and projector, bf16 (its exclusions name them)
    assert rank_checkpoint_bytes(source.model, 1, scheme, vocab_padding=1) == by_hand + tower
    unmatched = scheme.unmatched(model_modules(source.model), module_names(source.model))
    # the tower's entries, spelled from the wrapper's root: no decoder module; the tower is priced in bf16 anyway
    assert sorted(unmatched) == ["mm_projector*", "vision_tower*"]


def test_without_the_nested_config_kimi_k2_5_is_bf16(tmp_path):
    """The control: the same file less text_config.quantization_config is priced in bf16 (2.05 TB)."""
    config = json.loads(KIMI_K25.read_text())
    del config["text_config"]["quantization_config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    source = load_source(str(path))
    assert source.deployment is None or source.deployment.weight_scheme is None
    assert rank_weight_bytes(source.model, 1, "bf16", vocab_padding=1) == 2_052_816_418_816 + 471_143_920 * 2


def test_an_outer_and_a_nested_config_that_agree_are_read_once():
    quant = w4a16()
    wrapped = {"model_type": "wrapper", "text_config": LLAMA3 | {"quantization_config": quant}}
    both = read_checkpoint_weights(wrapped | {"quantization_config": quant}, "config.json")
    nested = read_checkpoint_weights(wrapped, "config.json")
    assert both is not None and nested is not None and both.scheme == nested.scheme
    assert nested.format == "int4"


def test_an_outer_and_a_nested_config_that_differ_are_refused_in_one_line(cli, tmp_path):
    path = tmp_path / "config.json"
    wrapped = {"model_type": "wrapper", "text_config": LLAMA3 | {"quantization_config": w4a16()}}
    path.write_text(json.dumps(wrapped | {"quantization_config": w4a16(group_size=64)}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2
    assert "quantization_config and text_config.quantization_config differ" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_a_nested_config_mha_cannot_price_names_where_it_was_read(tmp_path):
    wrapped = {"model_type": "wrapper", "text_config": LLAMA3 | {"quantization_config": {"quant_method": "hqq"}}}
    with pytest.raises(BadInputError, match=r"config.json \(text_config.quantization_config\): quantization_config"):
        read_checkpoint_weights(wrapped, "config.json")


# Matching --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "module", "expected"),
    [
        ("lm_head", "lm_head", True),
        ("model.layers.0.mlp.experts", "model.layers.0.mlp.experts.7.up_proj", True),  # a parent names its children
        ("model.layers.1", "model.layers.10.mlp.up_proj", False),  # not a prefix of another layer's number
        ("re:.*mlp.gate$", "model.layers.3.mlp.gate", True),
        ("re:.*mlp.gate$", "model.layers.3.mlp.gate_proj", False),
        ("re:.*self_attn.*", "model.layers.3.self_attn.q_proj", True),
        ("model.layers.*.self_attn*", "model.layers.12.self_attn.o_proj", True),  # a ModelOpt glob
        ("*mlp.gate", "model.layers.12.mlp.gate_proj", False),  # a glob matches the whole name
    ],
)
def test_pattern_names_a_module(pattern, module, expected):
    assert names(pattern, module) is expected


def test_a_named_target_wins_over_linear_and_ignore_wins_over_both():
    quant = w4a16()
    quant["config_groups"]["group_1"] = {
        "targets": ["re:.*down_proj"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
        "format": "float-quantized",
    }  # fmt: skip
    quant["ignore"] = ["model.layers.5.mlp.down_proj"]
    scheme = scheme_of(quant)
    assert scheme.rule_for("model.layers.4.mlp.down_proj").name == "group_1"
    assert scheme.rule_for("model.layers.4.mlp.up_proj").name == "group_0"
    assert scheme.rule_for("model.layers.5.mlp.down_proj") is None


def test_experts_stored_apart_are_refused():
    quant = w4a16() | {"ignore": ["re:model\\.layers\\.3\\.mlp\\.experts\\.1\\..*"]}
    model = get_preset("deepseek-v2-lite")
    with pytest.raises(BadInputError, match=r"stores 1 of the 64 experts of model\.layers\.3\.mlp apart"):
        rank_checkpoint_bytes(model, 1, scheme_of(quant))
    # expert 0 the odd one out: 1 of 64 apart too, not the 63 others (trial 278 #3)
    quant = w4a16() | {"ignore": ["re:model\\.layers\\.3\\.mlp\\.experts\\.0\\..*"]}
    with pytest.raises(BadInputError, match=r"stores 1 of the 64 experts of model\.layers\.3\.mlp apart"):
        rank_checkpoint_bytes(model, 1, scheme_of(quant))


# Readers ---------------------------------------------------------------------------------------------------------


def test_modelopt_nvfp4_flat_and_nested_read_alike():
    flat = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}
    nested = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}}
    for quant in (flat, nested):
        scheme = scheme_of(quant)
        assert (scheme.method, scheme.format, scheme.ignore) == ("modelopt", "nvfp4", ["lm_head"])
        assert scheme.rules[0].layout == weight_format("nvfp4").layout


def test_modelopt_exclude_modules_and_ignore_that_differ_are_refused():
    """Trial 320 #3: a flat config with ``exclude_modules: [lm_head]`` and ``ignore: [lm_head, re:.*down_proj]`` was
    priced with down_proj in the format, the ``ignore`` list dropped: vLLM 0.19+ reads ``ignore`` from a
    config.json (0.10 ``exclude_modules``), so which layers stay bf16 depends on the release. Equal lists read."""
    quant = {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}
    with pytest.raises(BadInputError, match="exclude_modules and ignore lists that differ"):
        scheme_of(quant | {"ignore": ["lm_head", "re:.*down_proj"]})
    assert scheme_of(quant | {"ignore": ["lm_head"]}).ignore == ["lm_head"]


def test_a_modelopt_export_without_weight_quantisation_is_bf16():
    """ModelOpt writes quant_algo null when it quantised only the KV cache: the weights are the model's own."""
    quant = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": None, "kv_cache_quant_algo": "FP8"}}
    assert read_checkpoint_weights({"quantization_config": quant}, "config.json") is None


def test_modelopt_mixed_precision_prices_each_listed_layer():
    """MIXED_PRECISION: NVFP4 on the MLPs of layers 0 and 1, FP8 (fp32 weight and input scales) on their q_proj; every
    module not listed stays bf16."""
    layers = {
        "model.layers.0.mlp": {"quant_algo": "NVFP4", "group_size": 16},
        "model.layers.1.mlp": {"quant_algo": "NVFP4", "group_size": 16},
        "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
    }
    scheme = scheme_of({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": layers})
    assert scheme.format == "nvfp4"  # the most listed
    mlp = sum(o * i // 2 + o * i // 16 + 8 for o, i in LAYER[4:])
    q = 4096 * 4096 + 4 + 4
    whole_bf16 = rank_weight_bytes(get_preset("llama-3-8b"), 1, "bf16", vocab_padding=1)
    expected = whole_bf16 - 2 * (2 * sum(o * i for o, i in LAYER[4:]) + 4096 * 4096) + 2 * mlp + q
    assert rank_checkpoint_bytes(get_preset("llama-3-8b"), 1, scheme, vocab_padding=1) == expected


def test_modelopt_w4a16_nvfp4_stores_nvfp4_and_multiplies_in_bf16():
    """MIXED_PRECISION with W4A16_NVFP4 MLPs (nvidia/Qwen3.6-27B-NVFP4's form): layer 0's MLP W4A16 (NVFP4 values and
    fp8 scales per 16, one fp32 global scale: SGLang 0.5.15 drops its input_scale), layer 1's W4A4 NVFP4 (two fp32
    scalars). Both store alike but for one scalar; the W4A16 MLP multiplies in bf16 (Marlin), the W4A4 one in nvfp4."""
    layers = {
        "model.layers.0.mlp": {"quant_algo": "W4A16_NVFP4", "group_size": 16},
        "model.layers.1.mlp": {"quant_algo": "NVFP4", "group_size": 16},
    }
    scheme = scheme_of({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": layers})
    w4a16_rule = scheme.rule_for("model.layers.0.mlp.down_proj")
    assert w4a16_rule is not None and w4a16_rule.format == "nvfp4" and w4a16_rule.compute == "bf16"
    w4a4_rule = scheme.rule_for("model.layers.1.mlp.down_proj")
    assert w4a4_rule is not None and w4a4_rule.compute == "nvfp4"
    mlp_bf16 = 2 * sum(o * i for o, i in LAYER[4:])
    w4a16 = sum(o * i // 2 + o * i // 16 + 4 for o, i in LAYER[4:])
    w4a4 = sum(o * i // 2 + o * i // 16 + 8 for o, i in LAYER[4:])
    model = get_preset("llama-3-8b")
    whole_bf16 = rank_weight_bytes(model, 1, "bf16", vocab_padding=1)
    assert rank_checkpoint_bytes(model, 1, scheme, vocab_padding=1) == whole_bf16 - 2 * mlp_bf16 + w4a16 + w4a4
    found = stored_matrices(model, 1, "nvfp4", scheme).matrices
    down = ("mlp", "down_proj", 4096, 14336)
    assert {dtype: (share.count, share.bytes) for (key, dtype), share in found.items() if key == down} == {
        "bf16": (31, 30 * 4096 * 14336 * 2 + 4096 * 14336 // 2 + 4096 * 14336 // 16 + 4),
        "nvfp4": (1, 4096 * 14336 // 2 + 4096 * 14336 // 16 + 8),
    }


def test_quark_mxfp4_as_amd_publishes_it():
    """amd/Llama-3.3-70B-Instruct-MXFP4-Preview's card: OCP MXFP4 weights (static) and activations (dynamic); the
    fields vLLM's Quark loader requires of it (``_is_ocp_mx``), lm_head excluded: MXFP4 on every linear layer."""
    mx = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}
    quant = {
        "quant_method": "quark", "exclude": ["lm_head"], "export": {"pack_method": "reorder"},
        "global_quant_config": {"weight": mx | {"is_dynamic": False}, "input_tensors": mx | {"is_dynamic": True}},
    }  # fmt: skip
    scheme = scheme_of(quant)
    assert scheme.format == "mxfp4-linear"
    model = get_preset("llama-3-8b")
    assert rank_checkpoint_bytes(model, 2, scheme) == rank_weight_bytes(model, 2, "mxfp4-linear")


@pytest.mark.parametrize(
    ("quant", "named"),
    [
        (w4a16() | {"sparsity_config": {"format": "sparse-24-bitmask"}}, "sparsity format 'sparse-24-bitmask'"),
        # online Hadamard rotations (llm-compressor's QuIP and SpinQuant recipes) hold transform layers (trial 278 #1)
        (w4a16() | {"transform_config": {"config_groups": {"u": {"type": "hadamard"}}}}, "transform_config"),
        (w4a16() | {"format": "naive-quantized"}, "num_bits=4 type=int strategy=group format=naive-quantized"),
        ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, "ModelOpt quant_algo 'W4A8_AWQ'"),
        ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
          "quantized_layers": {"model.layers.0.mlp": {"quant_algo": "W4A16_NVFP4", "group_size": 32}}},
         "W4A16_NVFP4 group_size 32"),
        ({"quant_method": "quark", "export": {}, "global_quant_config": {"weight": {"dtype": "int4",
                                                                                   "qscheme": "per_group"}}},
         "Quark global weight dtype=int4"),
        # trial 382 #6, #7: what differs from a priced config is named
        ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"], "format":
          "int-quantized", "weights": {"num_bits": 8, "type": "int", "symmetric": False, "strategy": "channel"},
          "input_activations": {"num_bits": 8, "type": "int", "dynamic": True}}}}, "strategy=channel format=int-"
         "quantized symmetric=false is not"),
        ({"bits": 4}, "quantization_config without a quant_method is not"),
        # vLLM's QuarkConfig raises "The export key should be included" (trial 382 #5: priced, exit 0)
        ({"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp8_e4m3", "qscheme": "per_tensor"}}},
         "Quark without an export section"),
        (w4a16() | {"ignore": "lm_head"}, "ignore that is not a list of module names"),
        # a quoted count named as such, not as "num_bits=4 ... is not a weight format" (trial 299 #6)
        (w4a16(num_bits="4"), "group_0: num_bits '4' is not a whole number: write it without quotes"),
        (w4a16(group_size="128"), "group_0: group_size '128' is not a whole number"),
        (w4a16(group_size=127.5), "group_0: group_size 127.5 is not a whole number: give a whole number"),
        # NVFP4 is an fp8 scale per 16 values: group 32 is no NVFP4 (priced a scale per 32, exit 0: trial 293 #3)
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 32}, "ModelOpt NVFP4 group_size 32"),
        # vLLM raises "Missing 'quant_algo'"; this was priced as bf16 with exit 0 (trial 293 #2)
        ({"quant_method": "modelopt"}, "ModelOpt without a quant_algo"),
        ({"quant_method": "modelopt", "quant_algo": None}, "quant_algo null without a kv_cache_quant_algo"),
    ],
)  # fmt: skip
def test_what_mha_cannot_price_is_refused(quant, named):
    with pytest.raises(BadInputError, match=named):
        read_checkpoint_weights({"quantization_config": quant}, "config.json")


# Published configs and the commands ------------------------------------------------------------------------------


def test_published_modelopt_nvfp4_beside_its_config(cli):
    """vipertsniper/DeepSeek-R1-Distill-Qwen-32B-NVFP4's hf_quant_config.json, read beside the base config.json as
    vLLM reads it: per layer 487,587,840 linear weights in NVFP4 (half a byte, a 16th of a byte of scale, 8 B per
    matrix), q/k/v biases, norms, embedding and head in bf16."""
    per_layer = 2 * 5120 * 5120 + 2 * 1024 * 5120 + 3 * 27648 * 5120
    assert per_layer == 487_587_840
    layers = 64 * (per_layer // 2 + per_layer // 16 + 7 * 8)
    bf16 = 2 * (64 * (5120 + 2 * 1024) + 64 * 2 * 5120 + 5120 + 2 * 152_064 * 5120)  # biases, norms, embed, head
    data = cli.json("kv", str(QUANT / "deepseek-r1-distill-qwen-32b-nvfp4" / "config.json"), "--target", "b200")
    assert data["deployment"]["weight_dtype"] == "nvfp4"
    assert data["weight_bytes"] == layers + bf16 == 20_669_675_008
    assert data["engine"]["weights_bytes_per_rank"] == layers + bf16  # 152,064 rows: already a multiple of 64
    assert any("tensor by tensor: modelopt" in line for line in data["assumptions"])


def test_published_compressed_tensors_configs():
    """nm-testing's NVFP4 (W4A4: fp32 weight and input global scales) and int8 W8A8 (fp32 scale per output row,
    dynamic activations: no input scale) Llama-3-8B configs."""
    nvfp4 = load_source(str(QUANT / "llama-3-8b-instruct-nvfp4-ct.json"))
    w8a8 = load_source(str(QUANT / "llama-3-8b-instruct-w8a8-ct.json"))
    nvfp4_layer = LAYER_PARAMS // 2 + LAYER_PARAMS // 16 + 7 * 8
    w8a8_layer = LAYER_PARAMS + 4 * sum(o for o, _ in LAYER)
    for source, layer, fmt in ((nvfp4, nvfp4_layer, "nvfp4"), (w8a8, w8a8_layer, "int8")):
        assert source.deployment is not None and source.deployment.weight_scheme is not None
        assert source.deployment.weight_dtype == fmt
        assert rank_checkpoint_bytes(source.model, 1, source.deployment.weight_scheme, 1) == 32 * layer + REST


def test_kv_and_plan_price_the_checkpoint_as_stored(cli, tmp_path):
    """A W4A16 checkpoint with layer 0 ignored: kv and plan give the hand count; --weight-dtype prices every weight
    alike instead; patterns that name no module are said."""
    path = tmp_path / "config.json"
    quant = w4a16() | {"ignore": ["lm_head", "re:model\\.layers\\.0\\..*", "re:.*vision_tower.*"]}
    path.write_text(json.dumps(LLAMA3 | {"quantization_config": quant}))
    expected = 31 * 112_459_888 + 2 * LAYER_PARAMS + REST
    data = cli.json("kv", str(path), "--target", "h100")
    assert data["weight_bytes"] == data["engine"]["weights_bytes_per_rank"] == expected
    assert any("(re:.*vision_tower.*) that this config does not describe" in line for line in data["assumptions"])
    plan = cli.json("plan", str(path), "--target", "h100", "--tp", "1", "--concurrency", "1")
    assert plan["memory"]["engine"]["weights_bytes_per_rank"] == expected
    overridden = cli.json("kv", str(path), "--target", "h100", "--weight-dtype", "int4")
    assert overridden["deployment"]["weight_scheme"] is None
    assert overridden["weight_bytes"] == rank_weight_bytes(get_preset("llama-3-8b"), 1, "int4", vocab_padding=1)


def test_an_unpriceable_checkpoint_is_one_line_exit_2(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA3 | {"quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A8"}}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2
    assert "quantization_config ModelOpt quant_algo 'W4A8' is not a weight format mha prices" in result.stderr
    assert "Traceback" not in result.output


def test_a_config_file_keeps_the_scheme(tmp_path):
    """The deployment's scheme survives a config file round trip (what --json writes is what a config reads)."""
    from mha_cli.core.schemas import DeploymentSpec

    scheme = scheme_of(w4a16() | {"ignore": ["lm_head"]})
    deployment = DeploymentSpec(weight_dtype="int4", weight_scheme=scheme)
    again = DeploymentSpec.model_validate_json(deployment.model_dump_json())
    assert again.weight_scheme == scheme
    assert DeploymentSpec.model_validate(deployment.model_dump()).weight_scheme == scheme


def test_a_step_reads_each_matrix_as_the_checkpoint_stores_it():
    """The cost model's decode step reads Kimi-K2.5's matrices as stored: at tp 8 a routed expert's down projection
    7168 x 256 on each rank in int4 with a bf16 scale per 32 inputs and its weight_shape (917,504 + 114,688 + 16 B),
    its MLA o_proj 7168 x 1024 in bf16 (14,680,064 B); the checkpoint's format named alone (int4, group 128, on every
    linear layer) would read o_proj at a quarter of that."""
    from mha_cli.core.cost.work import layer_weights

    source = load_source(str(KIMI_K25))
    assert source.deployment is not None
    scheme = source.deployment.weight_scheme
    stored = {(m.kind, m.part, m.out_features, m.in_features): b
              for m, b, _, _ in layer_weights(source.model, 8, "int4", scheme=scheme).matrices}  # fmt: skip
    named = {(m.kind, m.part, m.out_features, m.in_features): b
             for m, b, _, _ in layer_weights(source.model, 8, "int4").matrices}  # fmt: skip
    assert stored[("expert", "down_proj", 7168, 256)] == 7168 * 256 // 2 + 2 * 7168 * 256 // 32 + 16 == 1_032_208
    assert stored[("attention", "o_proj", 7168, 1024)] == 7168 * 1024 * 2
    assert named[("attention", "o_proj", 7168, 1024)] < stored[("attention", "o_proj", 7168, 1024)] / 3


def test_mha_plan_serves_kimi_k2_5_on_eight_h200_as_stored(cli):
    """The cookbook's launch (8 x H200, --tp 8, SGLang): each rank holds the int4 checkpoint's share, 76.2 GB, and the
    engine starts; priced in bf16 (the control) each rank would need 258.5 GB, more than an H200 holds. SGLang 0.5.9
    is the first whose registry has KimiK25ForConditionalGeneration (0.5.6 was asked here before the class was read)."""
    plan = cli.json(
        "plan", str(KIMI_K25), "--target", "8xh200", "--tp", "8", "--engine", "sglang@0.5.9",
        "--concurrency", "16", "--isl", "496", "--osl", "510",
    )  # fmt: skip
    model = load_source(str(KIMI_K25)).model
    scheme = load_source(str(KIMI_K25)).deployment.weight_scheme  # type: ignore[union-attr]
    engine = plan["memory"]["engine"]
    tower = 111_273_934 * 2  # MoonViT split by its 16 heads over 8 ranks, the projector whole (vLLM's layout)
    assert engine["weights_bytes_per_rank"] == rank_checkpoint_bytes(model, 8, scheme) == 76_183_607_296 + tower
    assert engine["starts"]
    assert rank_weight_bytes(model, 8, "bf16") == 258_508_896_256 + tower > 141 * 10**9


@pytest.mark.parametrize(
    ("pattern", "module", "named"),
    [
        ("model.language_model.layers.0.mlp*", "model.layers.0.mlp.gate_proj", True),
        ("model.language_model.layers.0.mlp*", "model.layers.0.experts.3.gate_proj", False),
        ("model.language_model.layers.0.mlp*", "model.layers.10.mlp.gate_proj", False),
        ("model.language_model.layers.1.self_attn", "model.layers.1.self_attn.q_proj", True),
        ("re:model.language_model.layers.2.router.*", "model.layers.2.router.proj", True),
        ("model.vision_tower*", "model.layers.0.mlp.gate_proj", False),
        ("language_model.layers.0.mlp*", "model.layers.0.mlp.gate_proj", False),
        ("language_model.model.layers.1.self_attn*", "model.layers.1.self_attn.kv_b_proj", True),
        ("language_model.model.layers.0*", "model.layers.0.mlp.down_proj", True),
        ("language_model.model.layers.0*", "model.layers.10.mlp.experts.3.down_proj", False),  # 0*: 0, never 10
        ("language_model.model.layers.1.self_attn*", "model.layers.1.mlp.experts.3.down_proj", False),
        ("language_model.lm_head", "lm_head", True),
    ],
)
def test_a_multimodal_checkpoint_s_text_model_patterns_are_read_from_mha_s_decoder(pattern, module, named):
    """``model.language_model.`` (transformers 5's multimodal text model, as vLLM's Gemma4 mapper reads it) and
    ``language_model.model.`` (Kimi-K2.5's wrapper, vLLM 0.34.0 ``kimi_k25.py``) are mha's ``model.``,
    ``language_model.lm_head`` its ``lm_head``; nothing else is rewritten (vLLM 0.15.1's ``language_model.layers.``
    is not a checkpoint's spelling)."""
    from mha_cli.core.weight_scheme import names

    assert names(pattern, module) is named


def test_a_pattern_that_is_no_regular_expression_is_refused_with_its_file():
    """Trial 320 #12: the refusal came from where the pattern was matched, without the file it came from."""
    with pytest.raises(BadInputError, match=r"^config.json: quantization_config ignore pattern '\(unclosed' is not a"):
        scheme_of(w4a16() | {"ignore": ["re:(unclosed"]})


def test_a_group_with_empty_targets_maps_nothing_and_alone_is_refused():
    """Trial 320 #2: ``targets: []`` was read as ``["Linear"]`` (int4 everywhere, 5.7 GB for a Llama-3.1-8B of
    16.1 GB in bf16); vLLM maps no module to such a group: alone it is refused, beside a group that quantises it is
    left out (review 322 #3), and ``targets: null``, which fails vLLM's start-up, is refused."""
    quant = w4a16()
    quant["config_groups"]["group_0"]["targets"] = []
    with pytest.raises(BadInputError, match="groups have empty targets: they quantise no layer"):
        scheme_of(quant)
    both = w4a16()
    both["config_groups"]["group_1"] = {**both["config_groups"]["group_0"], "targets": []}
    assert [rule.targets for rule in scheme_of(both).rules] == [["Linear"]]
    quant["config_groups"]["group_0"]["targets"] = None
    with pytest.raises(BadInputError, match="group group_0 has targets null, which vLLM cannot load"):
        scheme_of(quant)


@pytest.mark.parametrize("targets", [["Conv2d"], ["Embedding", "Conv2d"]])
def test_a_group_targeting_only_other_layer_classes_is_refused(targets):
    """A group whose targets are layer classes mha does not price stores none of its weights: the scheme was labelled
    int4 while every weight was priced bf16 (found by newuser trial 229). Refused in one line naming the group."""
    quant = w4a16()
    quant["config_groups"]["group_0"]["targets"] = targets
    with pytest.raises(BadInputError) as caught:
        scheme_of(quant)
    assert f"quantization_config group group_0 targets {', '.join(targets)} alone" in caught.value.message


def test_a_group_targeting_linear_beside_another_class_is_read():
    quant = w4a16()
    quant["config_groups"]["group_0"]["targets"] = ["Linear", "Embedding"]
    assert scheme_of(quant).format == "int4"


@pytest.mark.parametrize(
    ("group_size", "said"),
    [(100, "group_size=100 (mha prices the group sizes of vLLM's Marlin WNA16 kernels"),
     (-1, "with group_size -1 (strategy channel means one group per output channel)")],
)  # fmt: skip
def test_a_w4a16_group_no_kernel_runs_is_refused_as_gptqs_is(group_size, said):
    """compressed-tensors W4A16 at group 100 was priced (4,096 is no multiple of it) where GPTQ at 256 is refused;
    group -1 was said to be 'without a group_size' (newuser trial 250)."""
    config = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                           "group_size": group_size, "symmetric": True}}}}  # fmt: skip
    with pytest.raises(BadInputError, match=re.escape(said)):
        read_checkpoint_weights({"quantization_config": config}, "config.json")
    config["config_groups"]["group_0"]["weights"]["group_size"] = 128
    assert read_checkpoint_weights({"quantization_config": config}, "config.json") is not None


def test_a_gptq_config_without_bits_is_said_to_miss_them():
    """A GPTQ config without bits was refused as 'bits=None ... is not a weight format' (newuser trial 250)."""
    with pytest.raises(BadInputError, match="gptq without bits"):
        read_checkpoint_weights({"quantization_config": {"quant_method": "gptq", "group_size": 128}}, "config.json")
    with pytest.raises(BadInputError, match="awq without group_size"):
        read_checkpoint_weights({"quantization_config": {"quant_method": "awq", "bits": 4}}, "config.json")


def test_an_embedding_target_is_said_to_stay_bf16():
    """A group targeting ["Linear", "Embedding"] prices the embedding in bf16, as vLLM's compressed-tensors loads it
    (linear layers, attention and FusedMoE alone); its assumption line named the embedding among the int4 layers
    (trial 278 #2)."""
    quant = w4a16()
    quant["config_groups"]["group_0"]["targets"] = ["Linear", "Embedding"]
    model = get_preset("llama-3-8b")
    assert rank_checkpoint_bytes(model, 1, scheme_of(quant)) == rank_checkpoint_bytes(model, 1, scheme_of(w4a16()))
    assert "Linear (not Embedding: the engines quantise linear layers alone; priced bf16): int4" in (
        scheme_of(quant).describe()
    )


def test_an_lm_head_the_ignore_list_leaves_is_said_to_stay_bf16(cli, tmp_path):
    """compressed-tensors W4A16 on Llama-3.1-8B with ``ignore: []``: the engines quantise linear layers only, so the
    LM head is bf16 either way (the same bytes as ``ignore: [lm_head]``), and the line says so (newuser trial 299 #3:
    the "kept in bf16" note vanished, as if the head were int4)."""
    config = json.loads(Path("tests/fixtures/hf_configs/llama-3.1-8b.json").read_text())
    group = {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                                                "symmetric": True}}  # fmt: skip
    found = {}
    for label, ignore in (("none", []), ("head", ["lm_head"])):
        folder = tmp_path / label
        folder.mkdir()
        scheme = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ignore,
                  "config_groups": {"group_0": group}}  # fmt: skip
        (folder / "config.json").write_text(json.dumps({**config, "quantization_config": scheme}))
        found[label] = cli.json("kv", str(folder))
    assert found["none"]["weight_bytes"] == found["head"]["weight_bytes"]
    said = {label: " ".join(a for a in data["assumptions"] if "tensor by tensor" in a) for label, data in found.items()}
    assert "the LM head in bf16 (the engines quantise linear and expert layers only)" in said["none"]
    assert "the LM head in bf16 (" not in said["head"] and "kept in bf16: lm_head" in said["head"]


def test_a_sidecar_beside_a_config_json_quantization_config_is_named_as_not_read(cli, tmp_path):
    """config.json's W4A16 beside a ModelOpt NVFP4 hf_quant_config.json: vLLM reads config.json's (the sidecar only
    where it has none), and so does mha; it said nothing of the other file (newuser trial 299 #4)."""
    config = json.loads(Path("tests/fixtures/hf_configs/llama-3.1-8b.json").read_text())
    (tmp_path / "config.json").write_text(
        json.dumps({**config, "quantization_config": w4a16() | {"ignore": ["lm_head"]}})
    )
    alone = cli.json("kv", str(tmp_path))
    sidecar = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16}}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(sidecar))
    both = cli.json("kv", str(tmp_path))
    assert both["weight_bytes"] == alone["weight_bytes"]
    assert any(
        a.startswith("hf_quant_config.json not read: config.json's quantization_config") for a in both["assumptions"]
    )
    assert not any("hf_quant_config.json" in a for a in alone["assumptions"])


def test_a_whole_float_count_is_read_as_compressed_tensors_reads_it():
    """group_size 128.0 and num_bits 4.0 are 128 and 4 to compressed-tensors' pydantic (review 301 #1: refused as
    "not a whole number: write it without quotes")."""
    as_float = read_checkpoint_weights({"quantization_config": w4a16(group_size=128.0, num_bits=4.0)}, "config.json")
    as_int = read_checkpoint_weights({"quantization_config": w4a16()}, "config.json")
    assert as_float == as_int


def test_kvs_step_reads_each_module_as_the_checkpoint_stores_it(cli, tmp_path):
    """Trial 342 #2: ModelOpt MIXED_PRECISION on Llama-3.1-8B, attention in FP8 and the MLP in NVFP4, held 6.61 GB
    against the all-FP8 export's 9.08 GB, yet ``mha kv``'s decode step read every module in fp8 (the same 1.02 ms
    bound as the all-FP8 one; ``mha plan``'s step read the scheme). Now between the all-FP8 and all-NVFP4 exports',
    as the bytes are."""
    config = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "llama-3.1-8b.json").read_text())
    layers = {}
    for i in range(32):
        layers |= {
            f"model.layers.{i}.self_attn.{p}": {"quant_algo": "FP8"} for p in ("q_proj", "k_proj", "v_proj", "o_proj")
        }
        layers |= {
            f"model.layers.{i}.mlp.{p}": {"quant_algo": "NVFP4", "group_size": 16}
            for p in ("gate_proj", "up_proj", "down_proj")
        }
    exports = {
        "mixed": {"quant_algo": "MIXED_PRECISION", "quantized_layers": layers},
        "fp8": {"quant_algo": "FP8"},
        "nvfp4": {"quant_algo": "NVFP4", "group_size": 16},
    }
    bound, held = {}, {}
    for name, algo in exports.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**config, "quantization_config": {"quant_method": "modelopt", **algo,
                                                                       "exclude_modules": ["lm_head"]}}))  # fmt: skip
        result = cli.json("kv", str(path), "--target", "b200", "--seq", "1024")
        bound[name], held[name] = result["latency"]["decode_bound_ms"], result["memory"]["weight_bytes_per_device"]
    assert held["nvfp4"] < held["mixed"] < held["fp8"]
    assert bound["nvfp4"] < bound["mixed"] < bound["fp8"]


def test_the_shared_experts_are_one_matrix_a_projection():
    """DeepSeek-V2-Lite's two shared experts are one MLP 2 x 1,408 = 2,816 wide, as its checkpoint stores
    ``shared_experts.gate_proj`` and vLLM builds one ``DeepseekV2MLP``: W4A16 (group 128, lm_head ignored) stores one
    16-byte ``weight_shape`` a projection, so 8,726,579,152 B, the trial's hand count; split in two experts it was
    1,248 B more (26 MoE layers x 3 projections x 16 B: trial 382 #4)."""
    from mha_cli.core.params import matrices_per_rank

    model = load_source("tests/fixtures/hf_configs/deepseek-v2-lite.json").model
    shared = [m for m in matrices_per_rank(model, 1) if m.part in ("gate_proj", "up_proj", "down_proj")
              and {m.out_features, m.in_features} == {2816, 2048}]  # fmt: skip
    assert sorted((m.part, m.count) for m in shared) == [("down_proj", 26), ("gate_proj", 26), ("up_proj", 26)]
    group = {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                                                "group_size": 128}}  # fmt: skip
    quant = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
             "config_groups": {"group_0": group}}  # fmt: skip
    read = read_checkpoint_weights({"quantization_config": quant}, "config.json")
    assert read is not None and read.scheme is not None
    assert rank_checkpoint_bytes(model, 1, read.scheme, vocab_padding=1) == 8_726_579_152
