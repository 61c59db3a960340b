import os

import pytest

from mha_cli.core.config_io import config_to_yaml, parse_config, read_mapping, write_text_atomic
from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import DeploymentSpec, MhaConfig, ModelSpec


def test_yaml_round_trip(tmp_path):
    config = MhaConfig(model=ModelSpec(d_model=256, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=100, d_ff=512),
                       deployment=DeploymentSpec(seq_len="4k", batch=2))  # fmt: skip
    path = tmp_path / "c.yaml"
    write_text_atomic(path, config_to_yaml(config, header="made by a test"))
    assert path.read_text().startswith("# made by a test\n")
    assert path.stat().st_mode & 0o777 == 0o666 & ~current_umask()  # not mkstemp's private 0600
    assert parse_config(read_mapping(path), str(path)) == config


def test_existing_file_is_not_overwritten_without_force(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("keep me")
    with pytest.raises(BadInputError, match="exists: pass --force"):
        write_text_atomic(path, "new")
    assert path.read_text() == "keep me"
    write_text_atomic(path, "new", force=True)
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.yaml", "model: [unclosed", "malformed YAML at line"),
        ("bad.json", '{"model": ', "malformed JSON at line 1"),
        ("list.yaml", "- 1\n- 2\n", "expected a mapping"),
        ("empty.yaml", "", "found empty"),
        ("unsafe.yaml", "model: !!python/object/apply:os.system ['echo hi']", "malformed YAML"),
    ],
)
def test_malformed_files_fail_with_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(BadInputError, match=message) as info:
        read_mapping(path)
    assert "\n" not in str(info.value)


def test_schema_errors_name_every_field(tmp_path):
    with pytest.raises(BadInputError) as info:
        parse_config({"model": {"d_model": 64, "n_layers": 0, "n_heads": 3}}, "c.yaml")
    text = str(info.value)
    assert "model.n_layers" in text and "model.vocab_size: missing" in text and "\n" not in text


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_folder_is_not_a_file_to_write(tmp_path):
    with pytest.raises(BadInputError, match="is a folder"):
        write_text_atomic(tmp_path, "x", force=True)


def test_non_mla_configs_do_not_carry_the_mla_cache_mode():
    gqa = MhaConfig(model=ModelSpec(d_model=64, n_layers=1, n_heads=4, n_kv_heads=2, vocab_size=10, d_ff=10))
    assert "mla_cache" not in config_to_yaml(gqa)
    mla = MhaConfig(model=ModelSpec(d_model=64, n_layers=1, n_heads=4, vocab_size=10, d_ff=10,
                                    mla=dict(kv_lora_rank=32, qk_rope_head_dim=8)))  # fmt: skip
    assert "mla_cache: absorbed" in config_to_yaml(mla)


def test_validation_messages_are_plain_words_with_the_value():
    with pytest.raises(BadInputError) as info:
        parse_config({"model": {"d_model": 0, "n_layers": "x", "n_heads": 8, "vocab_size": 10, "d_ff": 10,
                                "mlp": "relu"}}, "c.yaml")  # fmt: skip
    text = str(info.value)
    assert "model.d_model: must be greater than 0 (got 0)" in text
    assert "model.n_layers: must be a whole number (got 'x')" in text
    assert "model.mlp: must be one of 'gated' or 'plain' (got 'relu')" in text
