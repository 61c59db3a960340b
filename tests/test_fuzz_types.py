"""Strict types and exact integers: booleans and strings are not counts; byte counts never go through a float."""

from __future__ import annotations

import json
import time

import pytest

from mha_cli.core.config_io import parse_config
from mha_cli.core.errors import BadInputError
from mha_cli.core.weight_formats import weight_format

SMALL = {"d_model": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 100, "d_ff": 128}


@pytest.mark.parametrize(
    ("field", "value"),
    [("d_model", True), ("n_layers", False), ("n_heads", "4"), ("vocab_size", True), ("d_ff", "128"),
     ("head_dim", "16"), ("n_kv_heads", True), ("context_length", 4096.0)],
)  # fmt: skip
def test_booleans_strings_and_floats_are_not_counts(field, value):
    with pytest.raises(BadInputError) as info:
        parse_config({"model": {**SMALL, field: value}}, "c.yaml")
    assert f"model.{field}: must be a whole number (got {value!r})" in str(info.value)  # as the file says


@pytest.mark.parametrize(("field", "value"), [("batch", True), ("tp", "2"), ("seq_len", True), ("block_size", False)])
def test_deployment_counts_are_strict_too(field, value):
    with pytest.raises(BadInputError, match=f"deployment.{field}: "):
        parse_config({"model": SMALL, "deployment": {field: value}}, "c.yaml")


def test_token_counts_still_read_text():
    config = parse_config({"model": SMALL, "deployment": {"seq_len": "8k"}}, "c.yaml")
    assert config.deployment.seq_len == 8192


@pytest.mark.parametrize("section", ["n_experts", "n_active_experts", "d_ff_expert"])
def test_moe_counts_are_strict(section):
    moe = {"n_experts": 8, "n_active_experts": 2, "d_ff_expert": 64, section: True}
    with pytest.raises(BadInputError, match=f"model.moe.{section}: must be a whole number"):
        parse_config({"model": {**SMALL, "moe": moe}}, "c.yaml")


def test_an_mla_head_wider_than_16384_is_one_clear_message():
    mla = {"kv_lora_rank": 64, "qk_rope_head_dim": 64, "qk_nope_head_dim": 20_000, "v_head_dim": 64}
    with pytest.raises(BadInputError, match=r"MLA head width .* \(20,064\) must be at most 16,384"):
        parse_config({"model": {**SMALL, "mla": mla}}, "c.yaml")


@pytest.mark.parametrize(
    ("params", "dtype", "expected"),
    [
        (2**53 + 1, "bf16", 2 * (2**53 + 1)),  # past 2^53 a float product loses the last bytes
        (10**17 + 3, "fp8", 10**17 + 3 + 4),  # + its fp32 scale
        (10**17 + 3, "mxfp4", (10**17 + 4) // 2 + -(-(10**17 + 3) // 32)),  # half bytes round up; a scale per 32
        (8_030_261_248, "bf16", 16_060_522_496),  # Llama-3-8B's weights as one row
        (7, "fp32", 28),
    ],
)
def test_weight_bytes_are_exact_integers(params, dtype, expected):
    """One matrix of 1 x ``params`` weights: integer arithmetic throughout, never through a float."""
    result = weight_format(dtype).matrix_bytes(1, params)
    assert isinstance(result, int) and result == expected


@pytest.mark.parametrize(
    ("config", "field"),
    [({"vocab_size": True}, "vocab_size"), ({"head_dim": "64"}, "head_dim"),
     ({"model_type": "mixtral", "num_local_experts": True, "num_experts_per_tok": 1}, "n_experts")],
)  # fmt: skip
def test_hf_configs_refuse_booleans_and_strings_as_counts(cli, tmp_path, config, field):
    """The expert fields on Mixtral, whose class takes them (a Llama's are not read: core.families.field_defaults
    CROSS_FAMILY_GROUPS)."""
    base = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "vocab_size": 100, "intermediate_size": 128}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**base, **config}))
    result = cli.run("kv", str(path), "--json")
    assert result.exit_code == 2 and result.stdout == ""
    assert f"{field}: must be a whole number" in result.stderr and result.stderr.count("\n") == 1


HF_BASE = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
           "vocab_size": 100, "intermediate_size": 128}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"layer_types": 4, "sliding_window": 16}, "layer_types must be a list"),
        ({"layer_types": [1, 2, 3, 4], "sliding_window": 16}, "unknown layer type"),
        ({"model_type": "mixtral", "first_k_dense_replace": "1", "num_local_experts": 4, "num_experts_per_tok": 2},
         "first_k_dense_replace must be a positive whole number, got '1'"),
        ({"num_hidden_layers": 20_000, "layer_types": ["full_attention"] * 20_000}, "at most 10,000"),
        ({"model_type": "kimi_linear", "linear_attn_config": {"kda_layers": ["x"], "full_attn_layers": [2]}},
         "kda_layers must list 1-based layers"),
    ],
    ids=["layer-types-int", "layer-types-ints", "dense-layers-string", "20000-layers", "kimi-layer-name"],
)  # fmt: skip
def test_hf_type_confusion_is_one_line_exit_2(cli, tmp_path, config, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**HF_BASE, **config}))
    start = time.perf_counter()
    result = cli.run("kv", str(path), "--json")
    assert time.perf_counter() - start < 2  # 20,000 layer types took 32 s
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert message in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("period", [100_000, 1e11])
def test_a_sliding_window_pattern_longer_than_the_model_is_all_local(cli, tmp_path, period):
    path = tmp_path / "config.json"
    # Mistral reads sliding_window (Llama does not: transformers builds Llama without a window)
    config = {
        **HF_BASE,
        "model_type": "mistral",
        "sliding_window_pattern": period,
        "sliding_window": 16,
        "num_key_value_heads": 4,
    }  # MistralConfig's own default is 8, more than the 4 heads
    path.write_text(json.dumps(config))
    start = time.perf_counter()
    data = cli.json("kv", str(path))  # was: never returns (100,000), MemoryError (1e11)
    assert time.perf_counter() - start < 2
    # every layer holds at most the 16-token window: 4 layers x 16 tokens x 2 (K, V) x 4 heads x 16 x 2 B
    assert data["kv"]["bytes_per_sequence"] == 4 * 16 * 2 * 4 * 16 * 2


def test_the_layer_pattern_cycle_is_found_in_linear_time():
    from mha_cli.core.hf_import import _shortest_cycle

    kinds = ["local", "global"] * 5000
    kinds[-1] = "local"  # no repeat: every candidate period failed only at the end, quadratic before
    start = time.perf_counter()
    assert _shortest_cycle(kinds) == kinds[:-1]  # the last layer is layer 0 of the next cycle
    assert _shortest_cycle(["local"] * 5 + ["global"]) == ["local"] * 5 + ["global"]
    assert _shortest_cycle(["local", "global"] * 3 + ["local"]) == ["local", "global"]
    assert time.perf_counter() - start < 2.0


def test_a_whole_float_is_told_how_to_write_it():
    """'n_heads: 5.0' was refused as 'must be a whole number (got 5.0)', which read as false (trial 362 #2)."""
    with pytest.raises(BadInputError) as info:
        parse_config({"model": {**SMALL, "n_layers": 5.0}}, "c.yaml")
    assert "model.n_layers: must be a whole number (got 5.0): write it as 5, without the decimal point" in str(
        info.value
    )


def test_a_config_json_s_whole_float_context_reads_as_its_widths_do(cli, tmp_path):
    """Trial 406 #10, #9: in a config.json, hidden_size 4096.0 was read and max_position_embeddings 8192.0 refused
    as "write it as 8192"; 1e12 was told "write it as 1000000000000", which the bound then refused. A whole float
    is read as the number now; past the bound, the bound is what is said."""
    import json

    from tests.conftest import reference_hf_config

    config = json.loads(reference_hf_config("llama-3.1-8b").read_text())
    whole, huge = tmp_path / "whole.json", tmp_path / "huge.json"
    whole.write_text(json.dumps({**config, "max_position_embeddings": 8192.0}))
    huge.write_text(json.dumps({**config, "max_position_embeddings": 1e12}))
    assert cli.json("kv", str(whole))["model"]["context_length"] == 8192
    refused = cli.run("kv", str(huge))
    assert (
        refused.exit_code == 2
        and "context_length: must be at most 17,179,869,184 (got 1000000000000)" in refused.stderr
    )
