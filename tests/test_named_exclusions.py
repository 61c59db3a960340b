"""A named weight format's exclusion lists read as vLLM 0.19.1 reads them (core.named_exclusions): the modules they
keep unquantised priced in bf16, each case against a hand count; lists that keep only what the format leaves in bf16
change nothing; fields no loader reads are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_quantization import read_checkpoint_weights
from mha_cli.core.presets import get_preset
from mha_cli.core.sources import load_source
from mha_cli.core.weight_bytes import rank_checkpoint_bytes, rank_weight_bytes
from mha_cli.core.weight_formats import weight_format

CONFIGS = Path("tests/fixtures/hf_configs")
LLAMA3 = json.loads((CONFIGS / "llama-3-8b.json").read_text())
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}

# Llama-3-8B: 32 layers; q and o 4096 x 4096, k and v 1024 x 4096; gate and up 14336 x 4096, down 4096 x 14336
MLP = 3 * 14336 * 4096  # 176,160,768 weights a layer
ATTENTION = 2 * 4096 * 4096 + 2 * 1024 * 4096  # 41,943,040
# AWQ int4 group 128, per matrix of out x in: out*in/2 values + 2 B scale per (row, group) + 4-bit zeros per (row,
# group) packed 8 to an int32: out*in * (1/2 + 2/128 + 1/256) = out*in * 133/256
AWQ_MLP = MLP * 133 // 256  # 91,521,024


def llama_weights(quant: dict):
    return read_checkpoint_weights({**LLAMA3, "quantization_config": quant}, "config.json")


def llama_bytes(quant: dict) -> int:
    weights = llama_weights(quant)
    assert weights is not None
    model = get_preset("llama-3-8b")
    if weights.scheme is None:
        return rank_weight_bytes(model, 1, weights.format, vocab_padding=1)
    return rank_checkpoint_bytes(model, 1, weights.scheme, vocab_padding=1)


def test_awq_keeps_one_layer_s_mlp_in_bf16_by_hand():
    """AWQ with modules_to_not_convert ["model.layers.3.mlp"] (matched anywhere in the name, as is_layer_skipped with
    skip_with_substr): layer 3's gate, up and down at 2 B a weight instead of AWQ's 133/256 B, nothing else moves."""
    assert AWQ_MLP == 91_521_024
    control = llama_bytes(AWQ)
    assert llama_bytes(AWQ | {"modules_to_not_convert": ["model.layers.3.mlp"]}) == control - AWQ_MLP + 2 * MLP
    assert 2 * MLP - AWQ_MLP == 260_800_512


def test_awq_entries_match_anywhere_in_the_name_as_vllm_reads_them():
    """``3.mlp`` is in layers 3, 13 and 23's MLP names: three layers' MLPs in bf16 (vLLM's substring test)."""
    control = llama_bytes(AWQ)
    assert llama_bytes(AWQ | {"modules_to_not_convert": ["3.mlp"]}) == control + 3 * (2 * MLP - AWQ_MLP)


def test_fp8_ignored_layers_by_hand_and_names_matched_whole():
    """fp8 per tensor (1 B a weight + an fp32 scale per matrix) with ignored_layers naming layer 0's q, k and v: those
    three in bf16 (25,165,824 weights: + 25,165,824 B - 3 scales); ``model.layers.1.mlp`` names no linear layer
    whole (Fp8Config compares whole names), so it changes nothing."""
    qkv = 4096 * 4096 + 2 * 1024 * 4096
    kept = ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.v_proj"]
    control = llama_bytes(FP8)
    assert llama_bytes(FP8 | {"ignored_layers": [*kept, "lm_head", "model.layers.1.mlp"]}) == control + qkv - 3 * 4
    assert qkv - 12 == 25_165_812


def test_fp8_reads_modules_to_not_convert_only_without_ignored_layers():
    """Fp8Config.from_config: modules_to_not_convert (here layer 0's o_proj, 4096 x 4096) is read when ignored_layers
    is empty; when ignored_layers lists layer 0's down_proj (4096 x 14336), only that one is kept in bf16."""
    control = llama_bytes(FP8)
    fallback = FP8 | {"ignored_layers": [], "modules_to_not_convert": ["model.layers.0.self_attn.o_proj"]}
    assert llama_bytes(fallback) == control + 4096 * 4096 - 4
    both = fallback | {"ignored_layers": ["model.layers.0.mlp.down_proj"]}
    assert llama_bytes(both) == control + 4096 * 14336 - 4


def test_fp8_entry_naming_one_expert_keeps_the_layer_s_fused_experts(tmp_path):
    """Qwen3-30B-A3B in fp8: an ignored_layers entry naming expert 0's gate of layer 5 skips layer 5's FusedMoE
    (is_layer_skipped: an entry holding ``experts`` that holds ``model.layers.5.mlp.experts``): its 128 experts x 3
    matrices (768 x 2048 and 2048 x 768) in bf16, 603,979,776 weights: + 603,979,776 B - 384 fp32 scales."""
    config = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config | {"quantization_config": FP8 | {"ignored_layers": [
        "model.layers.5.mlp.experts.0.gate_proj", "lm_head"]}}))  # fmt: skip
    source = load_source(str(path))
    assert source.deployment is not None and source.deployment.weight_scheme is not None
    experts = 128 * 3 * 768 * 2048
    stored = rank_checkpoint_bytes(source.model, 1, source.deployment.weight_scheme, vocab_padding=1)
    assert stored - rank_weight_bytes(source.model, 1, "fp8", vocab_padding=1) == experts - 128 * 3 * 4
    assert experts == 603_979_776


def test_gptq_modules_in_block_and_dynamic_by_hand():
    """GPTQ quantises only the linear layers whose name holds a modules_in_block_to_quantize entry (is_layer_gptq_
    quantized): the attention listed, every MLP in bf16; a negative dynamic rule keeps what its regex matches in bf16
    (get_dynamic_override). GPTQ int4 g128 per matrix: AWQ's 133/256 B a weight + an int32 g_idx per input."""
    fmt = weight_format("gptq-int4")
    mlp = 2 * fmt.matrix_bytes(14336, 4096) + fmt.matrix_bytes(4096, 14336)
    assert mlp == AWQ_MLP + 4 * (2 * 4096 + 14336)
    control = llama_bytes(GPTQ)
    attention_only = [["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"], ["self_attn.o_proj"]]
    assert llama_bytes(GPTQ | {"modules_in_block_to_quantize": attention_only}) == control + 32 * (2 * MLP - mlp)
    dynamic = {"-:model\\.layers\\.0\\.mlp\\..*": {}, "+:.*self_attn.*": {"bits": 4, "group_size": 128}}
    assert llama_bytes(GPTQ | {"dynamic": dynamic}) == control + 2 * MLP - mlp


def test_bitsandbytes_skip_modules_by_hand():
    """bitsandbytes NF4 with llm_int8_skip_modules ["model.layers.0"] (is_layer_skipped_bnb: the name's first parts):
    layer 0's seven matrices at 2 B a weight instead of NF4's 4 bits + an fp32 absmax per 64 + a 16-entry code."""
    nf4 = weight_format("nf4")
    shapes = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]
    layer = sum(o * i // 2 + 4 * (o * i // 64) + 64 for o, i in shapes)
    assert layer == sum(nf4.matrix_bytes(o, i) for o, i in shapes)
    quant = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    control = llama_bytes(quant)
    assert llama_bytes(quant | {"llm_int8_skip_modules": ["model.layers.0"]}) == control + 2 * (MLP + ATTENTION) - layer


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ("minimax-m2.7.json", "keeps in bf16 (gate, e_score_correction_bias, lm_head) only what fp8-block leaves"),
        ("gpt-oss-20b.json", "keeps no routed expert unquantised, and vLLM 0.19.1's mxfp4 loader reads no list"),
        ("gpt-oss-120b.json", "keeps no routed expert unquantised, and vLLM 0.19.1's mxfp4 loader reads no list"),
    ],
)
def test_published_lists_that_keep_only_what_the_format_leaves_in_bf16_change_nothing(config, said):
    """MiniMax-M2.7's fp8 list (gate, e_score_correction_bias, lm_head: no linear layer's whole name) read into a
    scheme that costs the named format's bytes exactly, and gpt-oss's mxfp4 list (attention, router, embeddings,
    lm_head: vLLM's mxfp4 loader reads none and quantises only the experts): priced as the named format, said."""
    data = json.loads((CONFIGS / config).read_text())
    source = load_source(str(CONFIGS / config))
    assert source.deployment is not None and source.deployment.weight_scheme is None
    assert any(said in line for line in source.assumptions)
    read = read_checkpoint_weights(data, config)
    assert read is not None and read.format == source.deployment.weight_dtype
    if read.scheme is not None:
        named = rank_weight_bytes(source.model, 1, read.format, vocab_padding=1)
        assert rank_checkpoint_bytes(source.model, 1, read.scheme, vocab_padding=1) == named


def test_lm_head_alone_changes_nothing():
    assert llama_weights(AWQ | {"modules_to_not_convert": ["lm_head"]}).scheme is not None  # type: ignore[union-attr]
    assert llama_bytes(AWQ | {"modules_to_not_convert": ["lm_head", "model.embed_tokens"]}) == llama_bytes(AWQ)


@pytest.mark.parametrize(
    ("quant", "named"),
    [
        (FP8 | {"ignore": ["lm_head"]}, "quantization_config ignore (vLLM 0.19.1's fp8 loader does not read it)"),
        (AWQ | {"modules_in_block_to_quantize": ["self_attn"]}, "modules_in_block_to_quantize (vLLM 0.19.1's awq"),
        (GPTQ | {"dynamic": {"+:.*mlp.*": {"bits": 8}}}, "dynamic rule '+:.*mlp.*' storing bits=8"),
        (GPTQ | {"dynamic": {".*mlp.*": {"act_group_aware": True}}}, "dynamic rule '.*mlp.*' overriding"),
        (FP8 | {"ignored_layers": ["re:.*mlp.*"]}, "ignored_layers entry 're:.*mlp.*': vLLM 0.19.1's fp8 loader"),
        (AWQ | {"modules_to_not_convert": "lm_head"}, "modules_to_not_convert that is not a list of module names"),
        # vLLM's GPTQConfig quantises the output head (its lm_head_quantized): 0.72 GiB less for Llama-3.1-8B than
        # the bf16 head priced before, silently (newuser trial 243)
        (GPTQ | {"lm_head": True}, "gptq with lm_head true (a quantised output head"),
    ],
)
def test_an_exclusion_field_mha_does_not_read_is_refused(quant, named):
    with pytest.raises(BadInputError) as refused:
        llama_weights(quant)
    assert named in str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_mxfp4_list_that_keeps_experts_unquantised_is_refused():
    """vLLM 0.19.1's Mxfp4Config reads no list and loads every FusedMoE as MXFP4: bf16 experts cannot be priced so."""
    data = json.loads((CONFIGS / "gpt-oss-20b.json").read_text())
    quant = data["quantization_config"] | {"modules_to_not_convert": ["lm_head", "model.layers.3.mlp"]}
    with pytest.raises(BadInputError, match=r"'model\.layers\.3\.mlp' keeps model\.layers\.3\.mlp\.experts"):
        read_checkpoint_weights({**data, "quantization_config": quant}, "config.json")


def test_kv_plan_and_engine_price_the_awq_exclusion(cli, tmp_path):
    """The AWQ checkpoint keeping layer 3's MLP: kv, its engine plan and mha plan all hold the hand count."""
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(LLAMA3 | {"quantization_config": AWQ | {"modules_to_not_convert": ["model.layers.3.mlp"]}})
    )
    expected = llama_bytes(AWQ) - AWQ_MLP + 2 * MLP
    data = cli.json("kv", str(path), "--target", "h100")
    assert data["weight_bytes"] == data["engine"]["weights_bytes_per_rank"] == expected
    assert data["deployment"]["weight_scheme"]["method"] == "awq"
    plan = cli.json("plan", str(path), "--target", "h100", "--tp", "1", "--concurrency", "1")
    assert plan["memory"]["engine"]["weights_bytes_per_rank"] == expected


def test_a_refused_field_is_one_line_exit_2(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA3 | {"quantization_config": FP8 | {"exclude_modules": ["lm_head"]}}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2
    assert "quantization_config exclude_modules (vLLM 0.19.1's fp8 loader does not read it)" in result.stderr
    assert "Traceback" not in result.output


def test_lists_that_split_a_fused_layer_are_refused(cli, tmp_path):
    """AWQ keeping layer 0's q_proj but not its k_proj and v_proj: vLLM loads the three into one qkv_proj and refuses
    ("Detected some but not all shards"), so mha refuses it in one line, exit 2."""
    path = tmp_path / "config.json"
    quant = AWQ | {"modules_to_not_convert": ["model.layers.0.self_attn.q_proj"]}
    path.write_text(json.dumps(LLAMA3 | {"quantization_config": quant}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2
    assert "stores some of model.layers.0.self_attn's q_proj, k_proj, v_proj unquantised" in result.stderr
    assert "Traceback" not in result.output


W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
    "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                                       "group_size": 128}}}}  # fmt: skip
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}
FP8_GROUP = {"targets": ["re:.*q_proj$"], "format": "float-quantized",
             "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}  # fmt: skip
INT4_GROUP = W4A16["config_groups"]["group_0"] | {"format": "pack-quantized"}


@pytest.mark.parametrize(
    ("quant", "how"),
    [  # trial 382 #1: only the named formats were checked
        (W4A16 | {"ignore": ["lm_head", "model.layers.0.self_attn.q_proj"]}, "unquantised and not the others"),
        (NVFP4 | {"exclude_modules": ["lm_head", "model.layers.0.self_attn.q_proj"]}, "unquantised and not the"),
        (
            W4A16 | {"format": "mixed-precision", "config_groups": {"g0": FP8_GROUP, "g1": INT4_GROUP}},
            "in one format and the others in",
        ),
    ],
    ids=["compressed-tensors-ignore", "modelopt-exclude", "compressed-tensors-two-groups"],
)
def test_every_scheme_that_splits_a_fused_layer_is_refused(cli, tmp_path, quant, how):
    """vLLM loads q, k and v into one layer of one scheme: compressed-tensors' should_ignore_layer ("Found a different
    quantization schemes"), ModelOpt's is_layer_skipped ("Detected some but not all shards") and, for two groups,
    _match_fused_layer giving qkv_proj the Linear group's scheme, which q_proj's stored fp8 weights do not fit."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA3 | {"quantization_config": quant}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2, result.output
    assert f"model.layers.0.self_attn's q_proj, k_proj, v_proj {how}" in result.stderr
    whole = W4A16 | {"ignore": ["lm_head", "re:.*self_attn.*"]}  # the control: every shard kept alike
    path.write_text(json.dumps(LLAMA3 | {"quantization_config": whole}))
    assert cli.run("kv", str(path)).exit_code == 0


def test_deepseek_s_fused_mla_down_projections_are_one_layer(cli, tmp_path):
    """vLLM fuses q_a_proj and kv_a_proj_with_mqa into fused_qkv_a_proj where the model has a query latent
    (deepseek_v2.py, 0.29.0): an fp8 list keeping only q_a_proj in bf16 is refused, both together are priced."""
    config = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    path = tmp_path / "config.json"
    fp8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
    path.write_text(json.dumps(config | {"quantization_config": fp8 | {"modules_to_not_convert": [
        "model.layers.0.self_attn.q_a_proj"]}}))  # fmt: skip
    result = cli.run("kv", str(path))
    assert result.exit_code == 2, result.output
    assert "q_a_proj, kv_a_proj_with_mqa unquantised and not the others" in result.stderr
    both = ["model.layers.0.self_attn.q_a_proj", "model.layers.0.self_attn.kv_a_proj_with_mqa"]
    path.write_text(json.dumps(config | {"quantization_config": fp8 | {"modules_to_not_convert": both}}))
    assert cli.run("kv", str(path)).exit_code == 0
    # review 384 #1: MiniCPM3 (minicpm3.py) builds the two as separate layers: its list may keep one alone
    from mha_cli.core.named_exclusions import refuse_split_shards

    split = fp8 | {"modules_to_not_convert": ["model.layers.0.self_attn.q_a_proj"]}
    read = read_checkpoint_weights({**config, "quantization_config": split}, "config.json")
    assert read is not None and read.scheme is not None
    model = load_source(str(CONFIGS / "deepseek-v3.json")).model
    with pytest.raises(BadInputError, match="q_a_proj, kv_a_proj_with_mqa unquantised"):
        refuse_split_shards(model, read.scheme)
    refuse_split_shards(model.model_copy(update={"family": "minicpm3"}), read.scheme)  # not fused there: no refusal


def test_a_bitsandbytes_entry_naming_a_fused_layer_s_shard_is_refused():
    quant = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    with pytest.raises(BadInputError, match=r"entry 'q_proj' names a layer vLLM 0\.19\.1 fuses"):
        llama_weights(quant | {"llm_int8_skip_modules": ["q_proj"]})


def test_gptq_quantises_every_routed_expert_whatever_modules_in_block_says():
    """Qwen3-30B-A3B in GPTQ with modules_in_block_to_quantize listing only the attention: vLLM's GPTQ-Marlin MoE path
    reads no such list (get_moe_quant_method), so the experts stay int4 and, with no dense MLP, the checkpoint costs
    exactly the named format's bytes; the same list on a dense Llama keeps its MLPs in bf16 (the control)."""
    config = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    quant = GPTQ | {"modules_in_block_to_quantize": [["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
                                                     ["self_attn.o_proj"]]}  # fmt: skip
    read = read_checkpoint_weights({**config, "quantization_config": quant}, "config.json")
    assert read is not None and read.scheme is not None
    model = load_source(str(CONFIGS / "qwen3-30b-a3b.json")).model
    named = rank_weight_bytes(model, 1, "gptq-int4", vocab_padding=1)
    assert rank_checkpoint_bytes(model, 1, read.scheme, vocab_padding=1) == named
    assert llama_bytes(quant) > llama_bytes(GPTQ)


FBGEMM = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0}


def test_fbgemm_fp8_keeps_every_routed_expert_in_bf16_by_hand(tmp_path):
    """Qwen3-30B-A3B in fbgemm fp8, no list: vLLM's FBGEMMFp8Config.get_quant_method has no FusedMoE method (None),
    so from 0.11.1 its experts load unquantised. 48 layers x 128 experts x 3 matrices of 768 x 2048: 28,991,029,248
    weights at 2 B instead of fp8's 1 B + one fp32 scale a matrix: + 28,991,029,248 B - 48 x 384 x 4 B; and the
    attention's fp32 scales are one per output channel (q 4,096 + k 512 + v 512 + o 2,048 rows a layer), not one a
    matrix: + 48 x (7,168 - 4) x 4 B."""
    config = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config | {"quantization_config": FBGEMM}))
    source = load_source(str(path))
    assert source.deployment is not None and source.deployment.weight_scheme is not None
    scheme = source.deployment.weight_scheme
    experts = 48 * 128 * 3 * 768 * 2048
    assert experts == 28_991_029_248
    stored = rank_checkpoint_bytes(source.model, 1, scheme, vocab_padding=1)
    per_channel = 48 * (4096 + 512 + 512 + 2048 - 4) * 4
    assert stored - rank_weight_bytes(source.model, 1, "fp8", vocab_padding=1) == experts - 48 * 384 * 4 + per_channel
    assert "routed experts in bf16 (the loader has no FusedMoE method)" in scheme.describe()


@pytest.mark.parametrize(
    ("engine", "refused"),
    [("vllm@0.11.0", "vLLM 0.11.0"), ("vllm@0.10.1", "vLLM 0.10.1"), ("vllm-v0", "vLLM 0.7.3"), ("vllm@0.11.1", None)],
)
def test_fbgemm_fp8_experts_are_refused_where_fused_moe_asserts_a_method(cli, tmp_path, engine, refused):
    """FusedMoE.__init__ asserts the method FBGEMMFp8Config does not give before 0.11.1 (fused_moe/layer.py, read in
    0.5.5 to 0.11.0): one line naming the release and the one that loads it, exit 2; 0.11.1 falls back to
    UnquantizedFusedMoEMethod and prices it (vllm-v0: its newest release read, 0.7.3)."""
    config = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    path = tmp_path / "qwen3-fbgemm" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config | {"quantization_config": FBGEMM}))
    result = cli.run("kv", str(path), "--target", "h100-sxm", "--engine", engine)
    if refused is None:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2 and result.output.strip() == (
        f"error: {refused} cannot load qwen3-fbgemm's fbgemm_fp8 checkpoint: FBGEMMFp8Config has no method for its"
        " routed experts and FusedMoE asserts one before 0.11.1 (fused_moe/layer.py): give --engine vllm@0.11.1 or"
        " later, which loads the routed experts unquantised (bf16)"
    )
    if engine == "vllm@0.11.0":  # a format asked for prices every weight alike, not the checkpoint's own method
        assert (
            cli.run("kv", str(path), "--target", "h100-sxm", "--engine", engine, "--weight-dtype", "fp8").exit_code == 0
        )


MIXTRAL = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
           "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
           "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000, "max_position_embeddings": 32768,
           "rope_theta": 1e6, "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}  # fmt: skip
"""Mixtral-8x7B's config.json (mistralai/Mixtral-8x7B-v0.1), the fields mha reads."""


@pytest.mark.parametrize(
    ("engine", "says"),
    [("vllm@0.10.1", "loads mixtral-fbgemm's fbgemm_fp8 checkpoint as QuantMixtralForCausalLM"),
     ("vllm@0.10.1.1", "loads mixtral-fbgemm's fbgemm_fp8 checkpoint as QuantMixtralForCausalLM"),
     ("vllm@0.10.2", "cannot load mixtral-fbgemm's fbgemm_fp8 checkpoint")],
)  # fmt: skip
def test_a_mixtral_took_its_own_path_to_0_10_1(cli, tmp_path, engine, says):
    """model_loader/utils.py to 0.10.1 loads a Mixtral of a method outside mixtral_supported as
    QuantMixtralForCausalLM (fp8 experts on every rank, not priced: refused saying so); from 0.10.2 it is a FusedMoE
    and asserts like the others until 0.11.1."""
    path = tmp_path / "mixtral-fbgemm" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(MIXTRAL | {"quantization_config": FBGEMM}))
    result = cli.run("kv", str(path), "--target", "h100-sxm", "--engine", engine)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert f"error: vLLM {engine[5:]} {says}" in result.output and "--engine vllm@0.11.1 or later" in result.output


def test_fbgemm_fp8_ignore_list_still_reaches_the_linear_layers(tmp_path):
    """A list on top of the bf16 experts: layer 0's o_proj (2048 x 4096, 8,388,608 weights; a whole name, as
    is_layer_skipped compares it) joins them in bf16, + 8,388,608 B - its 2,048 fp32 scales (one an output channel)."""
    config = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config | {"quantization_config": FBGEMM | {
        "modules_to_not_convert": ["model.layers.0.self_attn.o_proj"]}}))  # fmt: skip
    listed = load_source(str(path)).deployment
    path.write_text(json.dumps(config | {"quantization_config": FBGEMM}))
    plain = load_source(str(path)).deployment
    assert listed is not None and plain is not None and listed.weight_scheme and plain.weight_scheme
    model = load_source(str(path)).model
    o_proj = 2048 * 4096
    assert o_proj == 8_388_608
    difference = rank_checkpoint_bytes(model, 1, listed.weight_scheme, vocab_padding=1) - rank_checkpoint_bytes(
        model, 1, plain.weight_scheme, vocab_padding=1
    )
    assert difference == o_proj - 2048 * 4


def test_a_dense_fbgemm_fp8_checkpoint_is_fp8_with_a_scale_per_output_channel_by_hand(tmp_path):
    """Llama-3-8B in fbgemm fp8, no list: fp8 values as the named format, but FBGEMMFp8LinearMethod's weight_scale is
    (out, 1) fp32 (vLLM 0.32.0), not one a matrix: 32 layers x (q 4,096 + k 1,024 + v 1,024 + o 4,096 + gate 14,336
    + up 14,336 + down 4,096 = 43,008 rows) x 4 B, less the named format's 7 scales a layer (priced as fp8 with one
    per matrix before, 5.5 MB short)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA3 | {"quantization_config": FBGEMM}))
    source = load_source(str(path))
    assert source.deployment is not None and source.deployment.weight_dtype == "fp8"
    scheme = source.deployment.weight_scheme
    assert scheme is not None and "an fp32 scale per output channel" in scheme.describe()
    stored = rank_checkpoint_bytes(source.model, 1, scheme, vocab_padding=1)
    named = rank_weight_bytes(source.model, 1, "fp8", vocab_padding=1)
    assert stored - named == 32 * (43_008 - 7) * 4 == 5_504_128
    assert not any("quantization_config keeps" in note for note in source.assumptions)


def test_an_mxfp4_config_on_a_dense_model_is_refused_in_the_files_words(cli, tmp_path):
    """A dense Llama with quantization_config mxfp4 was refused as "--weight-dtype mxfp4 quantises routed experts",
    a flag the user never typed (found by newuser trial 251): the refusal names the file's quantization_config; the
    flag it offers prices it."""
    path = tmp_path / "dense-mxfp4" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(LLAMA3 | {"quantization_config": {"quant_method": "mxfp4"}}))
    refused = cli.run("kv", str(path))
    assert refused.exit_code == 2 and "--weight-dtype mxfp4 quantises" not in refused.output
    assert "quantization_config quant_method mxfp4 quantises routed experts (vLLM's Mxfp4Config) and dense-mxfp4" \
        " has none" in " ".join(refused.output.split())  # fmt: skip
    assert cli.run("kv", str(path), "--weight-dtype", "mxfp4-linear").exit_code == 0


def test_a_static_fp8_checkpoint_adds_an_fp32_input_scale_per_matrix_by_hand():
    """``activation_scheme: static``: each checkpoint matrix also stores an fp32 ``input_scale`` (vLLM's
    ``Fp8LinearMethod.create_weights``, one a shard): Llama-3-8B's 32 layers x 7 matrices x 4 B = 896 B over the
    dynamic checkpoint, whose fp8 values and per-matrix fp32 weight scales are the same. An ignored layer stores none."""
    dynamic, static = llama_bytes(FP8), llama_bytes(FP8 | {"activation_scheme": "static"})
    assert static - dynamic == 32 * 7 * 4 == 896
    kept = {"activation_scheme": "static", "ignored_layers": ["model.layers.0.mlp.down_proj"]}
    # down_proj of layer 0 in bf16: 2 B a weight, no scale, no input scale, in place of 1 B a weight and 8 B of scales
    assert llama_bytes(FP8 | kept) == static + 4096 * 14336 - 8


@pytest.mark.parametrize(
    ("quant", "named"),
    [
        ({"activation_scheme": "bogus"}, "activation_scheme 'bogus'"),
        ({"activation_scheme": "static", "weight_block_size": [128, 128]}, "beside weight_block_size"),
    ],
)
def test_an_fp8_activation_scheme_vllm_refuses_is_refused_naming_it(quant, named):
    with pytest.raises(BadInputError, match=named):
        llama_weights(FP8 | quant)
