"""No silent wrong answer from a config.json: a field that changes the cache or the model and that the importer
does not read is refused naming it (exit 2, one line), never priced as if it were absent; spellings of head_dim
that it does read are priced with them."""

from __future__ import annotations

import json

import pytest

from mha_cli.core.hf_import import UNREAD_FIELDS

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
     ("conv_L_cache", 3), ("attention_window_size", 2048), ("index_head_dim", 128), ("index_n_heads", 64)],
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
def test_other_spellings_of_head_dim_are_priced_with_them(cli, tmp_path, spelling):
    result = _kv(cli, tmp_path, **{spelling: 128})
    assert result.exit_code == 0, result.output
    kv = json.loads(result.stdout)["kv"]
    assert kv["bytes_per_token"] == 4 * 2 * 2 * 128 * 2  # layers x (K, V) x KV heads x 128 x bf16, not x 64


def test_a_value_head_unlike_the_key_head_is_refused_outside_mla(cli, tmp_path):
    assert _kv(cli, tmp_path, v_head_dim=64).exit_code == 0  # the same width: priced
    result = _kv(cli, tmp_path, v_head_dim=96)
    assert result.exit_code == 2 and "v_head_dim 96" in result.stderr


def test_an_empty_string_is_an_absent_field_and_a_quoted_width_is_a_width(cli, tmp_path):
    assert _kv(cli, tmp_path, hybrid_override_pattern="").exit_code == 0
    assert _kv(cli, tmp_path, v_head_dim="64").exit_code == 0  # "64" is head_dim 64
