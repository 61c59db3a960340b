"""A config.json without max_position_embeddings takes its config class's default context, as transformers builds
it, named among the assumptions: Falcon-7B's config has none, and it was priced at mha's 8,192-token fallback where
``FalconConfig`` and the falcon-7b preset say 2,048 (found by newuser trial 231)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from mha_cli.core.families.context_defaults import CONTEXT_DEFAULTS
from tests.conftest import reference_hf_config

transformers = pytest.importorskip("transformers")


def test_every_entry_is_the_installed_transformers_config_class_default():
    from transformers import CONFIG_MAPPING

    for model_type, context in CONTEXT_DEFAULTS.items():
        config = CONFIG_MAPPING[model_type]()
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        default = getattr(text, "max_position_embeddings", None) or getattr(text, "n_positions", None)
        assert default == context, model_type


def test_every_family_whose_config_class_has_a_default_is_listed():
    """Complete: a family transformers gives a context default to is here, or carries it in its own defaults."""
    from transformers import CONFIG_MAPPING

    import mha_cli.core.families.models as models

    missing = []
    for module in pkgutil.iter_modules(models.__path__):
        family = getattr(importlib.import_module(f"{models.__name__}.{module.name}"), "FAMILY", None)
        for model_type in () if family is None else family.model_types:
            if model_type not in CONFIG_MAPPING or "max_position_embeddings" in family.defaults:
                continue
            try:
                config = CONFIG_MAPPING[model_type]()
            except Exception:  # a class that cannot be built with no arguments names no default here
                continue
            text = config.get_text_config() if hasattr(config, "get_text_config") else config
            if getattr(text, "max_position_embeddings", None) or getattr(text, "n_positions", None):
                missing += [] if model_type in CONTEXT_DEFAULTS else [model_type]
    assert missing == []


def test_falcon_7b_is_priced_at_its_config_classs_context_and_says_so(cli):
    data = cli.json("kv", str(reference_hf_config("falcon-7b")))
    # 2,048 tokens x 32 layers x 1 KV head x 64 x 2 (K, V) x 2 B: the falcon-7b preset's figure
    assert (data["deployment"]["seq_len"], data["total_bytes"]) == (2048, 16_777_216)
    assert (
        "max_position_embeddings absent: 2,048, the FalconConfig default (transformers 5.25.0)" in data["assumptions"]
    )
    assert cli.json("kv", "falcon-7b")["total_bytes"] == data["total_bytes"]
