"""A config.json that leaves out a field equal to its config class's default is read at that default, as transformers
and vLLM read it: ``save_pretrained`` writes only the fields that differ from the class defaults, so a DeepSeek-V3
fine-tune may carry no ``qk_rope_head_dim``. It was read as 0 (62,464 B a token) and a Mistral without
``sliding_window`` as full attention (found by newuser trial 235)."""

from __future__ import annotations

import json

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.families.field_defaults import CLASS_FIELDS, FIELD_DEFAULTS, FIELD_DEFAULTS_READ
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from tests.benchmark_modules import load_benchmark
from tests.conftest import HF_FIXTURES, reference_hf_config


def test_every_entry_is_the_installed_transformers_default_and_none_is_missing():
    """``benchmarks/field_defaults.py`` wrote the table; read afresh from transformers 5.25.0, it is the same (another
    release may add classes or change a default: the table says which it was read off)."""
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != FIELD_DEFAULTS_READ.split()[-1]:
        pytest.skip(f"the table was read off {FIELD_DEFAULTS_READ}, not {transformers.__version__}")
    assert load_benchmark("field_defaults").table() == FIELD_DEFAULTS
    assert load_benchmark("field_defaults").declared_table() == CLASS_FIELDS


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}, "kv_lora_rank"),
        ({"num_experts": 8, "num_experts_per_tok": 2}, "num_experts"),
        ({"num_local_experts": 8}, "num_local_experts"),
        ({"n_routed_experts": 64, "moe_intermediate_size": 1408}, "n_routed_experts"),
        ({"multi_query": True}, "multi_query"),
    ],
)
def test_fields_a_family_s_class_does_not_take_are_not_read_and_named(fields, named):
    """Llama-3.1-8B with DeepSeek's MLA ranks was priced as MLA (36,864 B a token), with Qwen's expert count as a
    47.5B MoE, with Falcon's multi_query as MQA; LlamaConfig takes none of them and transformers builds the plain
    8.03B GQA-8 model (newuser trial 243)."""
    config = json.loads(reference_hf_config("llama-3.1-8b").read_text())
    plain = import_hf_config(config).model
    imported = import_hf_config({**config, **fields})
    assert imported.model == plain and kv_footprint(imported.model, seq_len=1).bytes_per_token == 131_072
    assert any(a.startswith("not read: ") and named in a for a in imported.assumptions)


def test_another_spelling_of_the_kv_heads_is_not_read_where_the_class_does_not_take_it():
    """num_kv_heads: 1 on a Llama without num_key_value_heads was MQA (16,384 B a token); LlamaConfig reads neither
    that spelling nor multi_query: one KV head per query head, 32 x 128 x 2 x 2 x 32 = 524,288 B."""
    config = json.loads(reference_hf_config("llama-3.1-8b").read_text())
    del config["num_key_value_heads"]
    imported = import_hf_config({**config, "num_kv_heads": 1})
    assert imported.model.attention.n_kv_heads == 32
    assert kv_footprint(imported.model, seq_len=1).bytes_per_token == 524_288
    assert "not read: num_kv_heads" in " ".join(imported.assumptions)
    # a family whose class takes the field still reads it: DeepSeek-V3's MLA and experts are unchanged
    deepseek = import_hf_config(json.loads(reference_hf_config("deepseek-v3").read_text())).model
    assert deepseek.attention.mla is not None and deepseek.block.moe is not None


def test_deepseek_v3_without_qk_rope_head_dim_caches_its_default_64_and_says_so():
    config = json.loads(reference_hf_config("deepseek-v3").read_text())
    assert config.pop("qk_rope_head_dim") == 64
    imported = import_hf_config(config)
    # (kv_lora_rank 512 + qk_rope_head_dim 64) x 61 layers x 2 B = 70,272 B a token, as with the field
    mla = imported.model.attention.mla
    assert mla is not None and (mla.kv_lora_rank, mla.qk_rope_head_dim) == (512, 64)
    assert kv_footprint(imported.model, seq_len=1).bytes_per_token == 70_272
    assert any(a.startswith("qk_rope_head_dim absent: 64, the DeepseekV3Config") for a in imported.assumptions)


def test_a_field_present_as_null_stays_null():
    """Mistral-7B-v0.2 writes ``"sliding_window": null``: full attention, not MistralConfig's 4,096."""
    base = {"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000}  # fmt: skip
    assert import_hf_config({**base, "sliding_window": None}).model.layers.sliding_window is None
    left_out = import_hf_config(base)
    assert left_out.model.layers.sliding_window == 4096
    assert "sliding_window absent: 4096" in " ".join(left_out.assumptions)


def test_a_null_kv_lora_rank_in_kimi_k2_found_by_its_architecture_is_refused_naming_it():
    """Kimi-K2's model_type is remote code's, so no class default is read: its null rank said "v_head_dim 128 differs
    from the key head_dim 112" (found by newuser trial 240)."""
    config = {**json.loads(reference_hf_config("kimi-k2-instruct").read_text()), "kv_lora_rank": None}
    with pytest.raises(BadInputError, match="kv_lora_rank is null: vLLM then runs this family's attention without"):
        import_hf_config(config)


def test_a_null_kv_lora_rank_in_an_mla_family_is_refused_naming_it():
    config = {**json.loads(reference_hf_config("deepseek-v3").read_text()), "kv_lora_rank": None}
    with pytest.raises(BadInputError, match="kv_lora_rank is null: vLLM then runs this family's attention without"):
        import_hf_config(config)


def fields_at_default(config: dict) -> tuple[dict, list[str]]:
    """A config.json's model part (its text config where it has one) and its fields equal to their class default."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    defaults = FIELD_DEFAULTS.get(str(text.get("model_type") or config.get("model_type")), {})
    return text, [key for key, value in defaults.items() if text.get(key) == value]


AT_DEFAULT = [path for path in sorted(HF_FIXTURES.glob("*.json")) if fields_at_default(json.loads(path.read_text()))[1]]
"""The fixture files with a field a ``save_pretrained`` would leave out (the others have none to leave out)."""


def test_most_fixtures_have_a_field_at_its_class_default():
    assert len(AT_DEFAULT) >= 40


@pytest.mark.parametrize("path", AT_DEFAULT, ids=lambda p: p.stem)
def test_leaving_out_every_field_at_its_class_default_prices_the_same_model(path):
    """What ``save_pretrained(use_diff=True)`` would write of each fixture reads as the whole file does."""
    config = json.loads(path.read_text())
    text, at_default = fields_at_default(config)
    whole = import_hf_config(config)
    trimmed_text = {key: value for key, value in text.items() if key not in at_default}
    trimmed = {**config, "text_config": trimmed_text} if text is not config else trimmed_text
    assert import_hf_config(trimmed).model == whole.model, at_default


def test_an_invalid_model_names_the_defaults_read_that_made_it_so_and_no_other():
    """MistralConfig's default of 8 KV heads on a 4-head config: the refusal names the field left out and read at the
    class's default, where "n_kv_heads (8)" alone pointed at nothing in the file; not sliding_window, read at its
    default too but no part of the problem (trial 340 #7: every refusal ended with "hidden_act 'silu'")."""
    config = {"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
              "vocab_size": 100, "intermediate_size": 128}  # fmt: skip
    with pytest.raises(BadInputError) as refused:
        import_hf_config(config)
    assert refused.value.message.endswith(
        "n_kv_heads (8) must not exceed n_heads (4) (left out, so read at its config class's default:"
        " num_key_value_heads 8)"
    )
    with pytest.raises(BadInputError) as refused:  # the file's own 8: no default to name, hidden_act's neither
        import_hf_config({**config, "num_key_value_heads": 8})
    assert refused.value.message.endswith("n_kv_heads (8) must not exceed n_heads (4)")
