"""Every causal-LM family of the installed transformers, priced against the cache transformers really allocates
(benchmarks/family_sweep.py): no family may get a figure that differs from it with exit 0.

The families are enumerated from the installed transformers, so a new release adds its families by itself. A tiny
config per family (its own config class, shrunk), random weights, a batch of 2 x 12 tokens; `mha kv` reads the
same config's to_dict(). Refusals must say why in one line; families the sweep cannot build are transformers'.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("family_sweep", REPO / "benchmarks" / "family_sweep.py")
sweep = importlib.util.module_from_spec(_spec)
sys.modules["family_sweep"] = sweep  # dataclasses look their module up by name
_spec.loader.exec_module(sweep)

PRICED = (
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next", "gemma", "gemma2",
    "gemma3_text", "gpt2", "gpt_neo", "gpt_neox", "gptj", "falcon", "falcon_h1", "jamba", "deepseek_v2",
    "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "olmo2", "olmoe", "phi3", "starcoder2", "cohere2", "gpt_oss",
    "llama4_text", "minimax", "mpt", "xglm", "hunyuan_v1_moe", "smollm3", "glm4_moe", "minimax_m2", "bloom", "opt",
)  # fmt: skip
"""Families the sweep builds and `mha kv` prices exactly (or as the window a serving engine keeps)."""
REFUSED = {
    "bart": "encoder-decoder", "mimo_v2_flash": "twice num_key_value_heads", "zaya": "layer_types has hybrid",
    "cpmant": "prompt_length", "inkling_text": "swa_head_dim", "lfm2": "full_attn_idxs",
}  # fmt: skip
"""Families whose cache `mha kv` does not price, and what the refusal names."""


def _quiet():
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()


def test_no_family_of_the_installed_transformers_is_priced_differently_from_its_cache():
    _quiet()
    rows = [sweep.sweep_one(model_type) for model_type in sweep.causal_lm_types()]
    different = [f"{row.model_type} ({row.detail})" for row in rows if row.verdict == "different"]
    assert not different, different
    assert all(row.detail and "\n" not in row.detail for row in rows if row.verdict == "refused")
    priced = {row.model_type for row in rows if row.verdict in ("exact", "window view")}
    assert set(PRICED) <= priced, set(PRICED) - priced
    assert len(priced) >= 100  # 106 of 196 with transformers 5.24


@pytest.mark.parametrize("model_type", sorted(REFUSED))
def test_families_mha_does_not_price_are_refused_naming_why(model_type):
    _quiet()
    row = sweep.sweep_one(model_type)
    assert row.verdict == "refused" and REFUSED[model_type] in row.detail, row
