"""``--weight-dtype`` overrides a config.json's quantization_config (docs/models.md), also one mha cannot read:
``mha kv config.json --weight-dtype int4`` on a checkpoint of an unknown quant_method was refused with the same line
as without it ("quant_method 'fancyquant' is not a weight format mha prices ..."), so the documented override did not
work; the refusal now names it, and running it prices every weight in the format asked for."""

import json

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT

LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 16, "vocab_size": 128256,
    "max_position_embeddings": 8192, "rope_theta": 500000.0, "torch_dtype": "bfloat16", "tie_word_embeddings": True,
}  # fmt: skip


@pytest.fixture
def configs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain.json").write_text(json.dumps(LLAMA))
    (tmp_path / "fancy.json").write_text(json.dumps(LLAMA | {"quantization_config": {"quant_method": "fancyquant"}}))


def test_the_refusal_names_weight_dtype(cli, configs):
    result = cli.run("kv", "fancy.json", "--json")
    assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
    assert "quant_method 'fancyquant' is not a weight format mha prices" in result.stderr
    assert "give --weight-dtype to price every weight in one format" in result.stderr


@pytest.mark.parametrize(
    "command",
    [["kv"], ["plan", "--target", "h100", "--tp", "1", "--closed-form"], ["check"]],
    ids=["kv", "plan", "check"],
)
def test_weight_dtype_prices_a_checkpoint_whose_quantization_mha_cannot_read(cli, configs, command):
    name, *options = command
    fancy = cli.json(name, "fancy.json", *options, "--weight-dtype", "int4")
    plain = cli.json(name, "plain.json", *options, "--weight-dtype", "int4")
    if name == "kv":
        assert fancy["weight_bytes"] == plain["weight_bytes"] and fancy["deployment"]["weight_dtype"] == "int4"
        assert any(
            "quantization_config not read (quant_method 'fancyquant'): every weight priced in int4" in line
            for line in fancy["assumptions"]
        )
    if name == "plan":
        assert fancy["memory"]["weight_bytes_per_device"] == plain["memory"]["weight_bytes_per_device"]


def test_any_unreadable_quantization_is_named_in_the_assumption(cli, configs, tmp_path):
    """The refusal's own words, without the file's name, whether it names a format (``UnpricedQuantizationError``'s
    ``what``) or says why a format's config cannot be read (an fp8 ignore list given as a regular expression)."""
    regex = LLAMA | {"quantization_config": {"quant_method": "fp8", "ignored_layers": ["re:.*lm_head"]}}
    (tmp_path / "regex.json").write_text(json.dumps(regex))
    assert cli.run("kv", "regex.json").exit_code == EXIT_BAD_INPUT
    assumptions = cli.json("kv", "regex.json", "--weight-dtype", "int4")["assumptions"]
    assert any(
        line.startswith("quantization_config not read (quantization_config ignored_layers entry 're:.*lm_head':")
        and line.endswith("every weight priced in int4 (--weight-dtype)")
        for line in assumptions
    ), assumptions


def test_a_text_models_unreadable_quantization_is_named_without_its_file(cli, tmp_path):
    """The same refusal read from text_config.quantization_config (vLLM's get_quant_config looks there too): the
    assumption drops the file and the field the reader prefixed, as for a top-level one."""
    quant = {"quant_method": "fp8", "ignored_layers": ["re:.*lm_head"]}
    nested = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "text_config": LLAMA | {"quantization_config": quant}}  # fmt: skip
    (tmp_path / "nested.json").write_text(json.dumps(LLAMA | nested))
    assumptions = cli.json("kv", str(tmp_path / "nested.json"), "--weight-dtype", "int4")["assumptions"]
    assert any(
        line.startswith("quantization_config not read (quantization_config ignored_layers entry 're:.*lm_head':")
        for line in assumptions
    ), assumptions
