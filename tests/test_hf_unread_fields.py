"""No silent wrong answer from a config.json: a field that changes the cache or the model and that the importer
does not read is refused naming it (exit 2, one line), never priced as if it were absent; spellings of head_dim
that it does read are priced with them."""

from __future__ import annotations

import json

import pytest

from mha_cli.core.hf_import import UNREAD_FIELDS
from tests.conftest import HF_FIXTURES

BASE = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 1000}  # fmt: skip
"""head_dim 512 / 8 = 64 when no field says otherwise."""


def _kv(cli, tmp_path, **extra):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BASE, **extra}))
    return cli.run("kv", str(path), "--seq", "1024", "--json")


@pytest.mark.parametrize(
    ("field", "value"),
    [("per_layer_config", [{"num_attention_heads": 4}]), ("cross_attention_layers", [1, 3]),
     ("attn_layer_indices", [1, 3]), ("hybrid_override_pattern", "M*M*"), ("full_attn_idxs", [2]),
     ("conv_L_cache", 3), ("attention_window_size", 2048), ("index_head_dim", 128), ("index_n_heads", 64),
     ("swa_head_dim", 128), ("swa_num_key_value_heads", 16), ("prompt_length", 32)],
)  # fmt: skip
def test_a_field_that_changes_the_cache_and_is_not_read_is_refused_by_name(cli, tmp_path, field, value):
    assert field in UNREAD_FIELDS
    result = _kv(cli, tmp_path, **{field: value})
    assert result.exit_code == 2, result.output
    assert f"'{field}'" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert _kv(cli, tmp_path, **{field: None}).exit_code == 0  # a null field is an absent one


def test_encoder_decoder_configs_are_refused_saying_so(cli, tmp_path):
    result = _kv(cli, tmp_path, is_encoder_decoder=True)
    assert result.exit_code == 2 and "encoder-decoder" in result.stderr


@pytest.mark.parametrize("spelling", ["kv_channels", "dim_head"])
def test_other_spellings_of_head_dim_are_priced_with_them_in_an_unknown_family_and_said(cli, tmp_path, spelling):
    result = _kv(cli, tmp_path, model_type="megatron_gpt_like", **{spelling: 128})
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["kv"]["bytes_per_token"] == 4 * 2 * 2 * 128 * 2  # layers x (K, V) x KV heads x 128 x bf16, not x 64
    assert f"head_dim absent: {spelling} = 128 read as the head width" in data["assumptions"]


@pytest.mark.parametrize("spelling", ["kv_channels", "dim_head"])
def test_a_registered_family_whose_class_does_not_read_them_is_priced_without_them(cli, tmp_path, spelling):
    """A Llama config with kv_channels 128 was priced at head_dim 128, silently: LlamaConfig, and vLLM, take
    hidden_size / heads = 64 (found by newuser trial 235). It is named as not read."""
    result = _kv(cli, tmp_path, **{spelling: 128})
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["kv"]["bytes_per_token"] == 4 * 2 * 2 * 64 * 2
    assert any(a.startswith(f"not read: {spelling} (LlamaConfig") for a in data["assumptions"])


def test_a_value_head_unlike_the_key_head_is_refused_outside_mla(cli, tmp_path):
    """For a family mha does not register (its class unknown, the field may be read): refused. A Llama's
    LlamaConfig takes no v_head_dim, and transformers builds 64-wide values: priced so, the field named as not read
    (newuser trial 243's cross-family fields)."""
    unknown = {"model_type": "somenewlm"}
    assert _kv(cli, tmp_path, v_head_dim=64, **unknown).exit_code == 0  # the same width: priced
    result = _kv(cli, tmp_path, v_head_dim=96, **unknown)
    assert result.exit_code == 2 and "v_head_dim 96" in result.stderr
    llama = _kv(cli, tmp_path, v_head_dim=96)
    assert llama.exit_code == 0 and "not read: v_head_dim" in llama.stdout


def test_an_empty_string_is_an_absent_field_and_a_quoted_width_is_a_width(cli, tmp_path):
    assert _kv(cli, tmp_path, hybrid_override_pattern="").exit_code == 0
    assert _kv(cli, tmp_path, v_head_dim="64").exit_code == 0  # "64" is head_dim 64


def test_an_encoder_decoder_family_is_refused_before_its_field_names_are_read(cli, tmp_path):
    """BART's CausalLM class is its decoder alone; its config spells layers as decoder_layers: the refusal says what
    the model is, not that a count is missing."""
    result = _kv(cli, tmp_path, model_type="bart", num_hidden_layers=None, decoder_layers=4)
    assert result.exit_code == 2 and "encoder-decoder model (model_type 'bart')" in result.stderr


@pytest.mark.parametrize("layer_type", ["hybrid", "hybrid_sliding", "linear_attention", "mamba"])
def test_state_mixer_layers_of_a_family_whose_mixer_is_not_read_are_refused(cli, tmp_path, layer_type):
    """ZAYA's "hybrid" layers keep a linear-attention state beside their K/V: priced as attention alone, the figure
    was 21% low with exit 0."""
    result = _kv(cli, tmp_path, model_type="zaya", layer_types=["full_attention", layer_type] * 2, sliding_window=64)
    assert result.exit_code == 2 and f"layer_types has {layer_type} layers" in result.stderr


def test_a_family_with_per_kind_kv_heads_is_refused_by_name(cli, tmp_path):
    result = _kv(cli, tmp_path, model_type="mimo_v2_flash", sliding_window=128,
                 layer_types=["full_attention", "sliding_attention"] * 2)  # fmt: skip
    assert result.exit_code == 2 and "twice num_key_value_heads" in result.stderr


@pytest.mark.parametrize(
    ("config", "kv_heads", "layers", "per_token_per_layer"),
    [
        # MPT: n_layers / n_heads, grouped KV heads in attn_config
        ({"model_type": "mpt", "d_model": 512, "n_layers": 4, "n_heads": 8, "expansion_ratio": 4,
          "attn_config": {"kv_n_heads": 2}, "vocab_size": 1000}, 2, 4, 2 * 2 * 64 * 2),
        # XGLM: attention_heads, num_layers, ffn_dim
        ({"model_type": "xglm", "d_model": 512, "num_layers": 4, "attention_heads": 8, "ffn_dim": 2048,
          "vocab_size": 1000}, 8, 4, 2 * 8 * 64 * 2),
    ],
)  # fmt: skip
def test_older_families_spelling_counts_their_own_way_are_priced(cli, tmp_path, config, kv_heads, layers,
                                                                  per_token_per_layer):  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    data = cli.json("kv", str(path), "--seq", "1024")
    assert (data["model"]["attention"]["n_kv_heads"], data["model"]["n_layers"]) == (kv_heads, layers)
    assert data["kv"]["bytes_per_token"] == layers * per_token_per_layer


def test_gpt_neo_prices_its_local_layers_at_their_window(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt_neo", "hidden_size": 512, "num_layers": 4, "num_heads": 8,
                                "attention_layers": ["global", "local"] * 2, "window_size": 256,
                                "vocab_size": 1000}))  # fmt: skip
    data = cli.json("kv", str(path), "--seq", "1024", "--batch", "1")
    per_token = 2 * 8 * 64 * 2  # K and V, 8 heads of 64, bf16
    assert data["kv"]["total_bytes"] == 2 * 1024 * per_token + 2 * 256 * per_token  # 2 global + 2 local layers


def test_per_layer_moe_counts_must_agree(cli, tmp_path):
    varied = _kv(cli, tmp_path, model_type="hunyuan_v1_moe", num_experts=8, moe_topk=[2, 2, 1, 2])
    assert varied.exit_code == 2 and "moe_topk varies by layer" in varied.stderr
    assert _kv(cli, tmp_path, model_type="hunyuan_v1_moe", num_experts=8, moe_topk=[2] * 4).exit_code == 0


@pytest.mark.parametrize("field", ["sliding_window", "attention_chunk_size"])
def test_a_window_on_llama_is_not_read_as_transformers_ignores_it(cli, tmp_path, field):
    """LlamaConfig has neither field and modeling_llama attends globally on every layer (transformers 5.24): the
    cache is the full context's, 4 layers x 2 KV heads x 64 x 2 (K, V) x 2 B x 1,024 tokens, and the field is named."""
    result = _kv(cli, tmp_path, **{field: 256})
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["kv"]["bytes_per_sequence"] == 4 * 2 * 64 * 2 * 2 * 1024 == 2_097_152
    assert data["kv"]["n_local_layers"] == 0 and data["kv"]["n_chunked_layers"] == 0
    assert any(a.startswith(f"not read: {field} (LlamaConfig") for a in data["assumptions"])
    mistral = _kv(cli, tmp_path, model_type="mistral", sliding_window=256)  # MistralConfig's window is read
    assert json.loads(mistral.stdout)["kv"]["bytes_per_sequence"] == 4 * 2 * 64 * 2 * 2 * 256


def test_moe_fields_a_class_does_not_take_are_not_read():
    """Qwen3MoeConfig takes mlp_only_layers and decoder_sparse_step, not first_k_dense_replace, and no shared expert
    (transformers 5.25 modeling_qwen3_moe.py; vLLM's qwen3_moe.py has none either). Read generically, a
    first_k_dense_replace of 3 made 3 dense layers and dropped mlp_only_layers [10] (28.83B, not 29.97B), and a
    shared_expert_intermediate_size of 4,096 priced a shared expert (31.74B, not 30.53B) (trial 266 #1, #2)."""
    import json

    from mha_cli.core.hf_import import import_hf_config
    from mha_cli.core.params import count_params
    from tests.conftest import reference_hf_config

    base = json.loads(reference_hf_config("qwen3-30b-a3b").read_text())
    assert count_params(import_hf_config(base).model).total == 30_532_122_624
    mixed = import_hf_config({**base, "first_k_dense_replace": 3, "mlp_only_layers": [10]})
    assert count_params(mixed.model).total == 30_532_122_624 - 566_493_184 == 29_965_629_440  # layer 10 dense
    assert any(note.startswith("not read: first_k_dense_replace") for note in mixed.assumptions)
    shared = import_hf_config({**base, "shared_expert_intermediate_size": 4096})
    assert count_params(shared.model).total == 30_532_122_624 and shared.model.block.moe.n_shared_experts == 0
    assert any(note.startswith("not read: shared_expert_intermediate_size") for note in shared.assumptions)
    deepseek = json.loads(reference_hf_config("deepseek-v3").read_text())  # its class takes both: read as before
    assert import_hf_config(deepseek).model.block.moe.n_dense_layers == 3


@pytest.mark.parametrize("fixture", ["deepseek-v3", "kimi-k2-instruct", "glm-5", "kimi-linear-48b-a3b"])
def test_a_moe_layer_freq_other_than_1_is_refused_on_deepseek_s_code(cli, tmp_path, fixture):
    """vLLM's DeepSeek layers are MoE where ``layer_idx % moe_layer_freq == 0``; transformers' classes do not read the
    field. The published configs carry 1 and are priced; 2 (every other layer dense in the engine) was priced as 1,
    exit 0 (trial 316): it is refused by name."""
    config = json.loads((HF_FIXTURES / f"{fixture}.json").read_text())
    assert config["moe_layer_freq"] == 1
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert cli.run("kv", str(path)).exit_code == 0
    path.write_text(json.dumps({**config, "moe_layer_freq": 2}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2
    assert "moe_layer_freq = 2 (mha builds 1)" in result.stderr and len(result.stderr.strip().splitlines()) == 1
