"""config.json import: every family's published file against our presets and reference numbers."""

import json

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.presets import get_preset
from tests.conftest import reference_hf_config
from tests.spec_paths import flat_path, read_path

# config.json file -> the preset describing the same model.
SAME_MODEL = {
    "llama-3-8b": "llama-3-8b",
    "deepseek-v3": "deepseek-v3",
    "gemma-2-9b": "gemma-2-9b",
    "gpt2": "gpt2",
    "llama-2-7b": "llama-2-7b",
    "llama-3.1-8b": "llama-3.1-8b",
    "llama-3.1-70b": "llama-3.1-70b",
    "llama-3.2-1b": "llama-3.2-1b",
    "mistral-7b-v0.1": "mistral-7b-v0.1",
    "mistral-nemo-12b": "mistral-nemo-12b",
    "phi-3-mini": "phi-3-mini",
    "qwen2.5-7b": "qwen2.5-7b",
    "qwen3-0.6b": "qwen3-0.6b",
    "qwen3-8b": "qwen3-8b",
    "falcon-7b": "falcon-7b",
    "gpt-oss-20b": "gpt-oss-20b",
    "gpt-oss-120b": "gpt-oss-120b",
    "qwen3-30b-a3b": "qwen3-30b-a3b",
    "qwen3-235b-a22b-instruct-2507": "qwen3-235b-a22b-2507",
    "deepseek-v2-lite": "deepseek-v2-lite",
}


def load(name: str) -> dict:
    return json.loads(reference_hf_config(name).read_text())


@pytest.mark.parametrize("name", list(SAME_MODEL))
def test_import_equals_preset(name):
    imported = import_hf_config(load(name)).model
    preset = get_preset(SAME_MODEL[name])
    geometry = ("d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "variant", "mla", "sliding_window",
                "vocab_size", "d_ff", "tied_embeddings", "moe")  # fmt: skip
    for field in geometry:
        assert read_path(imported, flat_path(field)) == read_path(preset, flat_path(field)), field
    assert [imported.layer_kind(i) for i in range(imported.n_layers)] == [
        preset.layer_kind(i) for i in range(preset.n_layers)
    ]
    assert count_params(imported).total == count_params(preset).total
    arithmetic = ("activation", "norm_weight_offset", "scale_embeddings", "attn_scale", "attn_logit_softcap",
                  "final_logit_softcap", "rope_local")  # fmt: skip
    for field in arithmetic:
        assert read_path(imported, flat_path(field)) == read_path(preset, flat_path(field)), field


@pytest.mark.parametrize(
    ("name", "expected"), [("llama-3-8b", 131_072), ("deepseek-v3", 70_272), ("gemma-2-9b", 344_064)]
)
def test_shared_reference_files_give_published_kv(name, expected):
    model = import_hf_config(load(name)).model
    assert kv_footprint(model, seq_len=1).bytes_per_token == expected


def test_explicit_head_dim_wins():
    qwen = import_hf_config(load("qwen3-0.6b")).model  # hidden 1024 / 16 heads = 64, config says 128
    assert qwen.attention.head_dim == 128
    nemo = import_hf_config(load("mistral-nemo-12b")).model  # 5120 / 32 = 160, config says 128
    assert nemo.attention.head_dim == 128


def test_gemma2_even_layers_slide():
    gemma = import_hf_config(load("gemma-2-9b"))
    assert [gemma.model.layer_kind(i) for i in range(4)] == ["local", "global", "local", "global"]
    assert any("Gemma 2 alternates" in note for note in gemma.assumptions)


def test_layer_types_list_is_read():
    oss = import_hf_config(load("gpt-oss-20b")).model
    assert (oss.layers.sliding_window, oss.n_local_layers, oss.n_global_layers) == (128, 12, 12)


def test_use_sliding_window_false_disables_the_window():
    assert import_hf_config(load("qwen2.5-7b")).model.layers.sliding_window is None


def test_falcon_multi_query_is_mqa():
    falcon = import_hf_config(load("falcon-7b")).model
    assert (falcon.attention.variant, falcon.attention.n_kv_heads) == ("MQA", 1)


def test_gemma3_text_config_and_pattern_field():
    config = {
        "model_type": "gemma3",
        "text_config": {"model_type": "gemma3_text", "hidden_size": 5376, "num_hidden_layers": 62,
                        "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
                        "intermediate_size": 21504, "vocab_size": 262208, "sliding_window": 1024,
                        "sliding_window_pattern": 6},
    }  # fmt: skip
    model = import_hf_config(config).model
    assert (model.n_local_layers, model.n_global_layers) == (52, 10)
    assert (
        kv_footprint(model, seq_len=1).bytes_per_token
        == kv_footprint(get_preset("gemma-3-27b"), seq_len=1).bytes_per_token
    )


def test_unknown_family_with_standard_fields_works_and_says_so():
    config = {"model_type": "brand_new", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
              "num_key_value_heads": 4, "intermediate_size": 4096, "vocab_size": 1000}  # fmt: skip
    imported = import_hf_config(config)
    assert imported.model.attention.variant == "GQA"
    assert any("not a known family" in note for note in imported.assumptions)


def test_missing_field_is_one_clear_error():
    with pytest.raises(BadInputError, match="no attention head count"):
        import_hf_config({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10})
    with pytest.raises(BadInputError, match=r"n_heads \(32\) must be divisible by n_kv_heads \(5\)"):
        import_hf_config({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
                          "num_key_value_heads": 5, "intermediate_size": 10, "vocab_size": 10})  # fmt: skip


LLAMA_LIKE = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("num_attention_heads", 0, "num_attention_heads must be a positive whole number, got 0"),
        ("num_hidden_layers", 32.5, "num_hidden_layers must be a positive whole number, got 32.5"),
        ("hidden_size", "4096", "hidden_size must be a positive whole number, got '4096'"),
        ("num_key_value_heads", True, "num_key_value_heads must be a positive whole number, got True"),
        ("head_dim", "abc", "head_dim"),
        ("vocab_size", -3, "vocab_size"),
    ],
)
def test_wrong_field_values_name_the_field_and_the_file(field, value, message):
    with pytest.raises(BadInputError, match=r"^l\.json") as info:
        import_hf_config({**LLAMA_LIKE, field: value}, origin="l.json")
    assert message in str(info.value)


def test_whole_floats_are_accepted():
    assert import_hf_config({**LLAMA_LIKE, "num_hidden_layers": 32.0}).model.n_layers == 32
    # head_dim as every count: 128.0 was refused where num_key_value_heads 8.0 was read (trial 340 #6)
    assert (
        import_hf_config({**LLAMA_LIKE, "head_dim": 128.0, "num_key_value_heads": 8.0}).model.attention.head_dim == 128
    )
    with pytest.raises(BadInputError, match=r"head_dim must be a positive whole number, got 128\.5"):
        import_hf_config({**LLAMA_LIKE, "head_dim": 128.5})


def test_a_null_kv_head_count_is_said_as_null():
    """Trial 340 #8: present as null, it was said to be absent; read the same (MHA), said as written."""
    null = import_hf_config({**LLAMA_LIKE, "num_key_value_heads": None})
    assert "num_key_value_heads null: MHA (one KV head per query head)" in null.assumptions
    left_out = import_hf_config({k: v for k, v in LLAMA_LIKE.items() if k != "num_key_value_heads"})
    assert null.model == left_out.model
    assert "num_key_value_heads absent: MHA (one KV head per query head)" in left_out.assumptions


def test_context_length_comes_from_max_position_embeddings():
    assert import_hf_config(load("llama-3.1-70b")).model.context_length == 131072
    assert import_hf_config(load("gpt2")).model.context_length == 1024


def test_unknown_family_assumes_the_transformers_tying_default():
    notes = import_hf_config({**LLAMA_LIKE, "model_type": "brand_new", "tie_word_embeddings": None}).assumptions
    assert any("tied, transformers' PretrainedConfig default" in note for note in notes)


def test_falcon_without_multi_query_uses_the_falcon_default():
    config = {k: v for k, v in load("falcon-7b").items() if k != "multi_query"}
    imported = import_hf_config(config)
    assert imported.model.attention.n_kv_heads == 1
    assert any("multi_query absent" in note for note in imported.assumptions)


def test_qwen2_moe_shared_expert_has_its_own_width():
    # Qwen1.5-MoE-A2.7B's published shape; the model card gives 14.3B parameters in total.
    config = {"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
              "num_key_value_heads": 16, "intermediate_size": 5632, "moe_intermediate_size": 1408,
              "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
              "vocab_size": 151936, "tie_word_embeddings": False}  # fmt: skip
    model = import_hf_config(config).model
    assert (model.block.moe.n_shared_experts, model.block.moe.d_ff_shared) == (1, 5632)
    assert count_params(model).total / 1e9 == pytest.approx(14.3, rel=0.01)


def test_a_family_cycle_longer_than_the_model_takes_its_first_layers():
    """Gemma 3's 5 local : 1 global cycle on a 2-layer config: both layers slide (transformers' layer_types)."""
    config = dict(model_type="gemma3_text", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=32, vocab_size=8, intermediate_size=8, sliding_window=16)  # fmt: skip
    model = import_hf_config(config).model
    assert [model.layer_kind(i) for i in range(2)] == ["local", "local"]
    assert model.n_global_layers == 0


@pytest.mark.parametrize("use_bias", [True, False])
def test_starcoder2_weights_equal_transformers(use_bias):
    """StarCoder2's MLP is plain (c_fc, c_proj) under LayerNorm with biases: priced as a gated Llama MLP it was
    80,448 parameters where transformers builds 65,152."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from mha_cli.core.hf_import import import_hf_config
    from mha_cli.core.params import count_params

    config = transformers.Starcoder2Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                           num_key_value_heads=2, intermediate_size=128, vocab_size=100,
                                           use_bias=use_bias, bos_token_id=0, eos_token_id=0)  # fmt: skip
    with torch.device("meta"):
        reference = transformers.AutoModelForCausalLM.from_config(config)
    assert count_params(import_hf_config(config.to_dict()).model).total == sum(
        p.numel() for p in reference.parameters()
    )


@pytest.mark.parametrize("eps", ["abc", 0, -1e-5, True])
def test_a_norm_epsilon_that_is_no_positive_number_is_named(eps):
    """A string rms_norm_eps read "a field of this config.json has an unexpected type or shape (ValueError: could not
    convert string to float)", naming no field (trial 266 #5)."""
    config = json.loads(reference_hf_config("llama-3-8b").read_text())
    with pytest.raises(BadInputError, match=rf"rms_norm_eps must be a positive number, got {eps!r}"):
        import_hf_config({**config, "rms_norm_eps": eps}, origin="config.json")


@pytest.mark.parametrize("theta", [float("inf"), float("nan"), "10000", 0])
def test_a_rope_theta_that_is_no_positive_finite_number_is_named(theta):
    """rope_theta: Infinity passed, exit 0, its JSON theta null, while a NaN rope factor was refused (trial 266 #6)."""
    config = json.loads(reference_hf_config("llama-3-8b").read_text())
    with pytest.raises(BadInputError, match="rope_theta must be a positive finite number"):
        import_hf_config({**config, "rope_theta": theta}, origin="config.json")


@pytest.mark.parametrize(("field", "value"), [("rope_scaling", [8.0, 1.0]), ("rope_scaling", "llama3"),
                                              ("rope_parameters", 500000.0)])  # fmt: skip
def test_a_rope_block_that_is_no_object_is_named(field, value):
    """``rope_scaling: [1, 2]`` was dropped unread with exit 0 and no note, where a dict is read field by field
    (trial 299 #5); null stays the unscaled default."""
    config = json.loads(reference_hf_config("llama-3-8b").read_text())
    with pytest.raises(
        BadInputError, match=rf"config.json: {field} is (a list|a string|a number|a float), not an object"
    ):
        import_hf_config({**config, field: value}, origin="config.json")
    assert import_hf_config({**config, field: None}, origin="config.json").model.attention.rope.scaling is None


def test_a_per_layer_width_list_of_another_length_is_refused():
    """``intermediate_size: [1000]`` on a 32-layer Llama was priced at 1,000 for every layer (trial 299 #5); a list is
    one width a layer (Gemma-3n), as transformers' Gemma3nTextConfig checks."""
    config = json.loads(reference_hf_config("llama-3-8b").read_text())
    with pytest.raises(BadInputError, match="intermediate_size has 1 entries for 32 layers"):
        import_hf_config({**config, "intermediate_size": [1000]}, origin="config.json")
    listed = import_hf_config({**config, "intermediate_size": [14336] * 32}, origin="config.json").model
    assert listed.block.d_ff == 14336


@pytest.mark.parametrize(
    ("first_dense", "mtp_layers", "moe_kept"),
    [(3, 1, True), (61, 1, True), (62, 1, False), (61, 0, False)],
)  # fmt: skip
def test_experts_no_layer_uses_are_not_built_but_an_mtp_layer_can_use_them(first_dense, mtp_layers, moe_kept):
    """DeepSeek-V3's 61 layers with first_k_dense_replace 61 and no MTP layer (mha's own dense MLA config.json):
    dense, said in a note, as transformers and vLLM build no expert (trial 311 #3: its fused-MoE workspace cost 3
    sequences on an H100). With an MTP layer it stays MoE: vLLM builds the MTP layer as layer 61, MoE from
    first_k_dense_replace on (review 312 #3: its drafter was priced dense, 0.29 GB against 1.66 GB a device)."""
    config = load("deepseek-v3") | {"first_k_dense_replace": first_dense, "num_nextn_predict_layers": mtp_layers}
    imported = import_hf_config(config)
    assert (imported.model.block.moe is not None) == moe_kept
    said = [a for a in imported.assumptions if "256 routed experts declared, every layer dense" in a]
    assert len(said) == (0 if moe_kept else 1)


@pytest.mark.parametrize("activation", ["silu", "gelu", "relu"])
def test_a_llama_keeps_its_gate_whatever_its_activation(activation):
    """transformers' LlamaMLP builds gate_proj, up_proj and down_proj and applies ``hidden_act`` to the gate: a
    Llama-3.1-70B with gelu or relu weighs what the silu one does, 70,553,706,496 (the plain-MLP reading dropped 80
    layers x 8,192 x 28,672 = 18,790,481,920 gate weights, exit 0: trial 316), with the activation it names."""
    config = json.loads(reference_hf_config("llama-3.1-70b").read_text())
    imported = import_hf_config({**config, "hidden_act": activation}, name="llama-3.1-70b")
    assert count_params(imported.model).total == 70_553_706_496
    assert imported.model.block.mlp == "gated"
    assert (imported.model.block.activation or "silu") == activation


def test_a_family_found_by_its_architectures_keeps_its_mlp_and_a_null_activation_is_said():
    """A Llama-3.1-70B whose model_type mha does not know, found by ``architectures: LlamaForCausalLM``, with gelu:
    vLLM serves it with its LlamaMLP (gate, up, down), 70,553,706,496 weights; the family's config class is not read
    there, and the plain-MLP reading came back (review 317 #1). A null hidden_act is said, not silently built."""
    config = json.loads(reference_hf_config("llama-3.1-70b").read_text())
    renamed = {**config, "model_type": "my_llama", "architectures": ["LlamaForCausalLM"], "hidden_act": "gelu"}
    imported = import_hf_config(renamed, name="my-llama")
    assert count_params(imported.model).total == 70_553_706_496 and imported.model.block.mlp == "gated"
    nulled = import_hf_config({**config, "hidden_act": None}, name="llama-3.1-70b")
    assert "hidden_act null: the gated MLP's own activation built (review 317)" in nulled.assumptions
