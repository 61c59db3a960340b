"""Every fixed-state cache dtype a config.json can set is read: the sweep that would have caught Nemotron-3-Nano's
``mamba_ssm_cache_dtype: float32`` being ignored (its state priced at half, exit 0, no word).

vLLM takes the dtype of a Mamba layer's recurrent state from the config where the model says so
(``vllm/model_executor/models/config.py``, vllm-project/vllm at 1936cf3841edb9781b06c50fc4daf4bac9d3b23e:
``NemotronHForCausalLMConfig`` reads ``mamba_ssm_cache_dtype``, float32 when absent; ``Qwen3_5ForConditionalGeneration
Config`` reads ``mamba_ssm_dtype``), else keeps it in the model's dtype. The references: those rules, and state bytes
counted by hand (values x bytes per value, the conv state's ``conv_kernel - 1`` columns in bf16).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import all_families
from mha_cli.core.families.state_readers import STATE_DTYPE_FIELDS
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint, state_bytes_per_layer
from tests.benchmark_modules import load_benchmark
from tests.conftest import reference_hf_config

REPO = Path(__file__).resolve().parents[1]
STATE_DTYPE = re.compile(r"(ssm|state|mamba|recurrent).*dtype|dtype.*(ssm|state)")
"""A config field that may set a fixed state's dtype, by its name."""

NANO = "nvidia-nemotron-3-nano-30b-a3b"
NANO_MAMBA_LAYERS = 23
NANO_RECURRENT = 64 * 64 * 128  # mamba_num_heads x mamba_head_dim x ssm_state_size, one layer
NANO_CONV = (64 * 64 + 2 * 8 * 128) * 3  # x, B and C channels x (conv_kernel - 1) columns, vLLM's


def _nano(**fields) -> dict:
    config = json.loads(reference_hf_config(NANO).read_text())
    return {k: v for k, v in (config | fields).items() if v is not None}


def test_nemotron_3_nano_s_float32_state_is_priced_in_float32():
    model = import_hf_config(_nano()).model
    footprint = kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16")
    assert footprint.state_bytes_per_seq == NANO_MAMBA_LAYERS * (NANO_RECURRENT * 4 + NANO_CONV * 2) == 49_082_368
    assert footprint.total_bytes - footprint.state_bytes_per_seq == 6 * 2 * 2 * 128 * 2  # 6 attention layers' K, V


def test_a_stated_16_bit_state_is_priced_at_half_and_an_absent_one_as_vllm_defaults_it():
    """The control: bfloat16 stated halves the recurrent part; absent, vLLM's Nemotron-H default, float32, said."""
    halved = kv_footprint(import_hf_config(_nano(mamba_ssm_cache_dtype="bfloat16")).model, seq_len=1, batch=1)
    assert halved.state_bytes_per_seq == NANO_MAMBA_LAYERS * (NANO_RECURRENT * 2 + NANO_CONV * 2) == 24_965_120
    absent = import_hf_config(_nano(mamba_ssm_cache_dtype=None))
    assert kv_footprint(absent.model, seq_len=1, batch=1).state_bytes_per_seq == 49_082_368
    assert any("mamba_ssm_cache_dtype absent: float32" in line for line in absent.assumptions)
    with pytest.raises(BadInputError, match="mamba_ssm_cache_dtype 'int8' is not float32"):
        import_hf_config(_nano(mamba_ssm_cache_dtype="int8"))


def _family_sweep():
    return load_benchmark("family_sweep")


def unread_state_dtypes(fields: tuple[str, ...] = STATE_DTYPE_FIELDS) -> list[str]:
    """Each registered fixed-state family whose tiny config (its transformers class's) prices its state in another
    dtype than one of ``fields`` says (float32, then bfloat16), one line each."""
    pytest.importorskip("transformers")
    sweep = _family_sweep()
    wrong = []
    for fam in all_families():
        if fam.fixed_state is None or fam.refused is not None:
            continue
        model_type = next((t for t in fam.model_types if t.endswith("_text")), fam.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                config = sweep._tiny_config(model_type).to_dict()
            except Exception:  # no such config class in the installed transformers
                continue
        config = {k: v for k, v in config.items() if k not in STATE_DTYPE_FIELDS}  # its class's own, if any
        for field in fields:
            priced = {}
            for named in ("float32", "bfloat16"):
                model = import_hf_config({**config, field: named}, name=model_type).model
                priced[named] = state_bytes_per_layer(model, "bf16", convention="engine")
                expected = "fp32" if named == "float32" else "activation"
                if model.recurrent.state_dtype != expected:
                    wrong.append(f"{model_type}: {field} {named} priced as {model.recurrent.state_dtype}")
            if priced["float32"] - priced["bfloat16"] != 2 * model.recurrent.recurrent_values:  # 4 B - 2 B a value
                wrong.append(f"{model_type}: {field} float32 - bfloat16 = {priced['float32'] - priced['bfloat16']} B")
    return wrong


def test_every_fixed_state_family_reads_every_state_dtype_field():
    assert unread_state_dtypes() == []


def test_the_sweep_catches_a_state_dtype_field_that_is_not_read(monkeypatch):
    """The control: with Nemotron-H's field dropped from what the reader reads, the sweep names it."""
    import mha_cli.core.families.state_readers as readers

    monkeypatch.setattr(readers, "STATE_DTYPE_FIELDS", ("mamba_ssm_dtype",))
    found = unread_state_dtypes(("mamba_ssm_cache_dtype",))
    assert found and all("mamba_ssm_cache_dtype" in line for line in found)
    assert any(line.startswith("nemotron_h:") for line in found)


def test_no_config_class_of_transformers_sets_a_state_dtype_mha_does_not_read():
    """Any field of any transformers config class (text_config included) whose name says it sets a fixed state's
    dtype is one mha reads, or its family's configs are refused: a new one in a transformers release fails here."""
    transformers = pytest.importorskip("transformers")
    unread = {}
    for model_type in transformers.CONFIG_MAPPING:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                config = transformers.AutoConfig.for_model(model_type).to_dict()
            except Exception:  # a config class that needs arguments
                continue
        flat = {**config, **(config.get("text_config") or {})}
        named = sorted(k for k in flat if STATE_DTYPE.search(str(k)) and k not in STATE_DTYPE_FIELDS)
        if not named:
            continue
        try:
            import_hf_config(config, name=model_type)
        except BadInputError:
            continue  # refused: no figure ignores the field
        unread[model_type] = named
    assert unread == {}
