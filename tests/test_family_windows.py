"""A window field is read for a family exactly where its transformers model applies it (``Family.window_fields``).

The reference is the installed transformers, read as source: a field of ``WINDOW_FIELDS`` is applied when the
family's config class defines it (an attribute of its default text config) and its modeling module reads it (by
name, or through ``create_sliding_window_causal_mask`` / ``create_chunked_causal_mask``, which read
``config.sliding_window`` / ``config.attention_chunk_size`` in ``masking_utils``), or its config class derives the
layers' kinds from it (Qwen2's ``use_sliding_window`` nulls the window in ``Qwen2Config.__post_init__``). A family
that reads a field its model ignores (Llama's stray ``sliding_window`` once halved the cache), or ignores one its
model applies, fails here.
"""

import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

from mha_cli.core.families import WINDOW_FIELDS, all_families

transformers = pytest.importorskip("transformers")

MASK_READS = {
    "sliding_window": "create_sliding_window_causal_mask",
    "attention_chunk_size": "create_chunked_causal_mask",
}
"""masking_utils' mask builders that read a window field of the config they are given (transformers 5.24)."""


def _code(module_name: str) -> str:
    """A module's source without docstrings and comments."""
    source = inspect.getsource(importlib.import_module(module_name))
    source = re.sub(r'"""[\s\S]*?"""', "", source)
    return "\n".join(line.split("#")[0] for line in source.splitlines())


def _reads(code: str, field: str, *, as_attribute: bool = False) -> bool:
    if as_attribute:  # the config class's own code: a use of the field, not its declaration or its overwriting
        return re.search(rf"\bself\.{field}\b(?!\s*=[^=])", code) is not None
    return re.search(rf"\b{field}\b", code) is not None or MASK_READS.get(field, "\0") in code


def _text_config(model_type: str):
    """transformers' default config of ``model_type``'s language model; None: not in the installed transformers."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        return None
    return CONFIG_MAPPING[model_type]().get_text_config(decoder=True)


def applied_window_fields(model_type: str) -> frozenset[str] | None:
    """The window fields transformers' model of ``model_type`` applies (its text model's, in the module of the class
    transformers builds for it: EXAONE's is LlamaForCausalLM); None: not in the installed transformers."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    config = _text_config(model_type)
    if config is None:
        return None
    config_module = type(config).__module__
    causal_lm = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(config.model_type)  # EXAONE's is LlamaForCausalLM
    model_module = getattr(transformers, causal_lm).__module__ if causal_lm else None
    modeling = _code(model_module or config_module.replace(".configuration_", ".modeling_"))
    own = _code(config_module)
    return frozenset(
        field
        for field in WINDOW_FIELDS
        if field in vars(config) and (_reads(modeling, field) or _reads(own, field, as_attribute=True))
    )


def _differences() -> dict[str, tuple[list[str], list[str]]]:
    """model_type -> (fields read but ignored by transformers, fields applied but not read), where either is set."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    found = {}
    for family in all_families():
        for model_type in family.model_types:
            applied = applied_window_fields(model_type)
            if applied is None:  # not in this transformers (RWKV-5/6/7): nothing to follow
                continue
            extra, missing = family.window_fields - applied, applied - family.window_fields
            if extra or missing:
                found[model_type] = (sorted(extra), sorted(missing))
    return found


def test_every_family_reads_the_window_fields_its_transformers_model_applies_and_no_other():
    assert not _differences(), _differences()


def test_a_switched_window_is_off_by_the_config_class_default_when_the_switch_is_absent():
    """Qwen2Config, Qwen3Config, Qwen3MoeConfig, SmolLM3Config: ``use_sliding_window`` defaults to False, so a
    config.json that sets a window and leaves the switch out has none; the record's defaults carry that False."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    wrong = {}
    for family in all_families():
        if "use_sliding_window" not in family.window_fields:
            continue
        for model_type in family.model_types:
            default = CONFIG_MAPPING[model_type]().get_text_config(decoder=True).use_sliding_window
            if family.defaults.get("use_sliding_window") != default:
                wrong[model_type] = (family.defaults.get("use_sliding_window"), default)
    assert not wrong, wrong


def test_max_window_layers_is_read_only_by_families_whose_config_class_has_it():
    """Qwen2's ``max_window_layers`` (its first layers global) is read by exactly the families whose transformers
    config class defines it and derives the layer kinds from it; Qwen3-MoE's has none (every layer slides)."""
    from mha_cli.core.families.models.qwen2 import window_layers

    readers = {t for f in all_families() if f.layer_kinds is window_layers for t in f.model_types}
    applied = set()
    for family in all_families():
        for model_type in family.model_types:
            config = _text_config(model_type)
            own = _code(type(config).__module__) if config is not None else ""
            if (
                config is not None
                and "max_window_layers" in vars(config)
                and _reads(own, "max_window_layers", as_attribute=True)
            ):
                applied.add(model_type)
    assert readers == applied, (readers - applied, applied - readers)


def test_the_reference_tells_a_windowed_family_from_one_that_ignores_the_field():
    """The control: the reference itself, on families whose reading is known from their modeling files."""
    assert applied_window_fields("llama") == frozenset()  # LlamaConfig defines no window; modeling_llama none
    assert applied_window_fields("gpt2") == frozenset()
    assert applied_window_fields("mistral") == {"sliding_window"}  # MistralAttention passes config.sliding_window
    assert applied_window_fields("qwen2") == {"sliding_window", "use_sliding_window"}
    assert applied_window_fields("llama4_text") == {"attention_chunk_size"}  # through create_chunked_causal_mask
    assert applied_window_fields("olmoe") == frozenset()  # getattr on a field OlmoeConfig does not define


def test_a_family_reading_a_field_its_model_ignores_is_caught(monkeypatch):
    """The control: Llama's record given Mistral's window fields differs from transformers; its own does not."""
    import mha_cli.core.families.models.llama as llama
    from mha_cli.core.families import all_families as every

    monkeypatch.setattr(llama, "FAMILY", llama.FAMILY._replace(window_fields=frozenset({"sliding_window"})))
    every.cache_clear()
    try:
        assert _differences()["llama"] == (["sliding_window"], [])
    finally:
        monkeypatch.undo()
        every.cache_clear()


@pytest.mark.parametrize(
    ("model_type", "field"),
    [
        ("gpt2", "sliding_window"),
        ("olmo", "sliding_window"),
        ("phi", "sliding_window"),
        ("mistral", "attention_chunk_size"),
    ],
)
def test_a_window_field_the_model_ignores_is_priced_without_it_and_named(cli, tmp_path, model_type, field):
    """GPT-2's, OLMo's and Phi's config classes define no window and their modeling attends globally; Mistral's
    has no chunks (transformers 5.24): the cache is the full context's, 4 layers x 4 KV heads x 16 x 2 (K, V) x 2 B
    x 1,024 tokens, and the field is named as not read."""
    config = {
        "model_type": model_type, "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 256, field: 256,
    }  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = cli.run("kv", str(path), "--seq", "1024", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["kv"]["bytes_per_sequence"] == 4 * 4 * 16 * 2 * 2 * 1024
    assert any(a.startswith("not read:") and field in a for a in data["assumptions"]), data["assumptions"]


def test_a_qwen2_window_without_its_switch_is_off_as_in_qwen2config(cli, tmp_path):
    """Qwen2Config's use_sliding_window defaults to False and its __post_init__ then nulls sliding_window: a
    config.json with a window and no switch has no sliding layer (transformers 5.24)."""
    config = {
        "model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 256, "sliding_window": 256,
        "max_window_layers": 2,
    }  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    off = json.loads(cli.run("kv", str(path), "--seq", "1024", "--json").stdout)
    assert off["kv"]["bytes_per_sequence"] == 4 * 4 * 16 * 2 * 2 * 1024
    path.write_text(json.dumps({**config, "use_sliding_window": True}))
    on = json.loads(cli.run("kv", str(path), "--seq", "1024", "--json").stdout)
    assert on["kv"]["bytes_per_sequence"] == 2 * 4 * 16 * 2 * 2 * (1024 + 256)  # layers 2 and 3 slide


def _gpt_oss_with_window(window: object) -> dict:
    config = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "gpt-oss-20b.json").read_text())
    return config | {"sliding_window": window}


def test_layers_listed_as_sliding_with_a_window_of_zero_are_refused():
    """gpt-oss's layer_types lists 12 sliding layers; a window of 0 tokens attends to nothing (transformers' mask
    keeps no key). Before: priced silently as 24 full-attention layers."""
    from mha_cli.core.errors import BadInputError
    from mha_cli.core.hf_import import import_hf_config

    with pytest.raises(BadInputError, match="12 layers are listed as sliding but sliding_window is 0") as refused:
        import_hf_config(_gpt_oss_with_window(0))
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("fixture", ["gemma-2-9b", "gemma-3-27b-it", "mistral-7b-v0.1", "phi-3-mini"])
def test_a_window_of_zero_on_a_family_that_slides_by_it_is_refused(fixture):
    """Without layer_types: Gemma's pattern, or every Mistral and Phi-3 layer, slides by the window; a window of 0
    was priced as full attention with nothing said (Gemma 3 27B at 32K: 16.6 GB, not 3.1; trial 340 #1). The
    control: Qwen2.5's 0 under use_sliding_window false is no window (the test below)."""
    from mha_cli.core.errors import BadInputError
    from mha_cli.core.hf_import import import_hf_config

    config = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / f"{fixture}.json").read_text())
    text = config.get("text_config", config)
    text["sliding_window"] = 0
    with pytest.raises(BadInputError, match="sliding_window is 0, a window of no tokens, where") as refused:
        import_hf_config(config)
    assert "\n" not in str(refused.value)
    text["sliding_window"] = None
    assert import_hf_config(config).model.n_local_layers == 0  # null: full attention, as said below


def test_layers_listed_as_sliding_without_a_window_are_full_attention_and_said():
    """A null window: vLLM builds those layers without one (full attention); the import says so."""
    from mha_cli.core.hf_import import import_hf_config

    imported = import_hf_config(_gpt_oss_with_window(None))
    assert imported.model.n_global_layers == 24 and imported.model.n_local_layers == 0
    assert any("12 layers listed as sliding have no window (sliding_window null)" in a for a in imported.assumptions)
    windowed = import_hf_config(_gpt_oss_with_window(128))
    assert not any("listed as sliding" in a for a in windowed.assumptions)


def test_a_null_window_on_a_patterned_family_is_full_attention_and_said():
    """Gemma 3 27B with sliding_window null: its pattern's 52 sliding layers are priced full (10 x 32,768 x 8,192 +
    52 x 1,024 x 8,192 B became 62 x 32,768 x 8,192, 5.3x) and nothing said so (newuser trial 299 #2); the control,
    the published config, says nothing of it."""
    from mha_cli.core.hf_import import import_hf_config

    config = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "gemma-3-27b-it.json").read_text())
    published = import_hf_config(config)
    assert published.model.n_local_layers == 52
    assert not any("sliding_window null" in a for a in published.assumptions)
    nulled = import_hf_config({**config, "text_config": {**config["text_config"], "sliding_window": None}})
    assert nulled.model.n_local_layers == 0 and nulled.model.n_global_layers == 62
    assert any(
        a.startswith("sliding_window null: the layers gemma3's pattern makes sliding are priced as full attention")
        for a in nulled.assumptions
    )
    qwen = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "qwen3-8b.json").read_text())
    qwen = {key: value for key, value in qwen.items() if key != "use_sliding_window"}  # its default: off
    unswitched = import_hf_config({**qwen, "sliding_window": None})
    assert not any("sliding_window null" in a for a in unswitched.assumptions)  # no layer slides (review 301 #3)


def test_a_window_the_family_does_not_apply_is_named_with_its_value_not_as_null():
    """A Llama with layer_types and sliding_window 4096 was said to have "sliding_window null" (newuser trial 243):
    LlamaConfig's model does not apply the window (priced at full attention), and vLLM's llama.py does."""
    from mha_cli.core.hf_import import import_hf_config

    config = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "llama-3.1-8b.json").read_text())
    kinds = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(config["num_hidden_layers"])]
    imported = import_hf_config({**config, "sliding_window": 4096, "layer_types": kinds})
    said = " ".join(imported.assumptions)
    assert imported.model.n_local_layers == 0 and "sliding_window (4096, not read)" in said
    assert "vLLM's llama.py applies it from 0.10.1" in said and "null" not in said


def test_a_zero_window_switched_off_is_no_window_not_a_refusal():
    """Qwen2Config sets the window to None under use_sliding_window false, whatever it says: a 0 there is no
    window, not a window of no tokens (the review of this change)."""
    from mha_cli.core.hf_import import import_hf_config

    config = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "qwen2.5-1.5b-instruct.json").read_text())
    kinds = ["sliding_attention"] * 4 + ["full_attention"] * (config["num_hidden_layers"] - 4)
    imported = import_hf_config({**config, "use_sliding_window": False, "sliding_window": 0, "layer_types": kinds})
    assert imported.model.n_local_layers == 0
    assert "4 layers listed as sliding have no window (use_sliding_window false)" in " ".join(imported.assumptions)


def test_qwens_max_window_layers_zero_slides_every_layer():
    """Qwen3Config takes max_window_layers 0: every layer from 0 on slides (layer_types: sliding where i >= it); it
    was refused as not positive (newuser trial 299 #7). -1 stays refused."""
    from mha_cli.core.errors import BadInputError
    from mha_cli.core.hf_import import import_hf_config

    config = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "qwen3-8b.json").read_text())
    windowed = {**config, "use_sliding_window": True, "sliding_window": 4096}
    every = import_hf_config({**windowed, "max_window_layers": 0}).model
    assert every.n_local_layers == 36 and every.n_global_layers == 0
    assert import_hf_config({**windowed, "max_window_layers": 28}).model.n_local_layers == 8
    with pytest.raises(BadInputError, match="max_window_layers must be a whole number of 0 or more, got -1"):
        import_hf_config({**windowed, "max_window_layers": -1})
