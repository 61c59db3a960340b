"""A config.json boolean written as a string is refused in one line (``core.quoted_booleans``): ``"false"`` was read
as true by Python's truthiness, turning Qwen3's sliding window on and adding Llama's attention bias without a word
(newuser trial 299 #1)."""

import json

from mha_cli.core.errors import EXIT_BAD_INPUT
from tests.conftest import reference_hf_config


def _folder(tmp_path, name: str, **fields) -> str:
    config = json.loads(reference_hf_config(name).read_text())
    config.update(fields)
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


def test_a_real_false_turns_qwens_window_off(cli, tmp_path):
    """The control: use_sliding_window false, every one of 36 layers holds the whole 32,768 tokens, 4,096 B a token
    and layer (8 KV heads x 128 x 2 x 2 B): 36 x 32,768 x 4,096 = 4,831,838,208 B."""
    found = cli.json("kv", _folder(tmp_path, "qwen3-8b", use_sliding_window=False, sliding_window=4096,
                                   max_window_layers=28), "--seq", "32768")  # fmt: skip
    assert found["total_bytes"] == 36 * 32_768 * 4_096 == 4_831_838_208


def test_a_quoted_false_is_refused_naming_the_field(cli, tmp_path):
    result = cli.run("kv", _folder(tmp_path, "qwen3-8b", use_sliding_window="false", sliding_window=4096,
                                   max_window_layers=28), "--seq", "32768")  # fmt: skip
    assert result.exit_code == EXIT_BAD_INPUT and len(result.stderr.splitlines()) == 1
    assert "use_sliding_window is the string 'false', not a boolean: write false without quotes" in result.stderr


def test_a_quoted_boolean_deep_in_the_quantization_config_is_named_by_its_path(cli, tmp_path):
    scheme = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
              "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                  "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": "False"}}}}  # fmt: skip
    result = cli.run("kv", _folder(tmp_path, "llama-3.1-8b", quantization_config=scheme))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "quantization_config.config_groups.group_0.weights.symmetric is the string 'False'" in result.stderr
    assert "write false without quotes" in result.stderr


def test_a_classifiers_labels_are_names_not_booleans(cli, tmp_path):
    """id2label {"0": "false", "1": "true"} is a classifier's labels (review 301 #2): not refused, priced as without."""
    labelled = cli.json("kv", _folder(tmp_path, "llama-3.1-8b", id2label={"0": "false", "1": "true"},
                                      label2id={"false": 0, "true": 1}))  # fmt: skip
    assert labelled["bytes_per_token"] == 131_072


def test_a_switch_of_zero_is_off_as_transformers_reads_it(cli, tmp_path):
    """use_sliding_window 0 was priced windowed (review 301 #6); transformers' truth test reads it as off: every layer
    holds the whole context, as with false. A quoted "no" is refused as "false" is."""
    off = cli.json("kv", _folder(tmp_path, "qwen3-8b", use_sliding_window=0, sliding_window=4096,
                                 max_window_layers=28), "--seq", "32768")  # fmt: skip
    assert off["total_bytes"] == 4_831_838_208
    result = cli.run("kv", _folder(tmp_path, "qwen3-8b", use_sliding_window="no", sliding_window=4096))
    assert result.exit_code == EXIT_BAD_INPUT and "use_sliding_window is the string 'no'" in result.stderr
    assert "write false without quotes" in result.stderr
