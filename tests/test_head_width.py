"""A ``head_dim`` is read only by the families whose model reads it (``core.families.head_width``): each family of
``HEAD_WIDTH_DERIVED`` is built in transformers with ``head_dim`` 8 where hidden_size / num_attention_heads is 16,
and its cache is 16 wide (or the model cannot run with it at all); mha prices the same config at 16 and names the
field as not read. Families that read it are the control: their cache is 8 wide, and so is mha's."""

from __future__ import annotations

import warnings

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.utils import logging as transformers_logging

from mha_cli.core.families.head_width import HEAD_WIDTH_DERIVED
from mha_cli.core.hf_import import import_hf_config

TINY = dict(
    hidden_size=64, num_attention_heads=4, num_hidden_layers=2, n_embd=64, n_head=4, n_layer=2, d_model=64,
    num_heads=4, num_layers=2, n_heads=4, n_layers=2, attention_heads=4, intermediate_size=128, ffn_dim=128, n_inner=128,
    ffn_hidden_size=128, d_ff=128, vocab_size=128, num_key_value_heads=4, max_position_embeddings=64, n_positions=64,
    rotary_dim=8, attention_types=[[["global", "local"], 1]],
)  # fmt: skip
"""Tiny dimensions under every spelling the families use: 4 heads of 64 / 4 = 16."""
ENCODERS_AS_DECODERS = {"bert", "bert-generation", "big_bird", "camembert", "data2vec-text", "electra", "ernie",
                        "megatron-bert", "rembert", "roberta", "roberta-prelayernorm", "roformer", "xlm-roberta",
                        "xlm-roberta-xl"}  # fmt: skip
"""Built as transformers builds them for causal LM, ``is_decoder`` set."""


def _tiny_config(model_type: str) -> dict:
    defaults = AutoConfig.for_model(model_type).to_dict()
    config = {key: value for key, value in TINY.items() if key in defaults}
    if "pad_token_id" in defaults:
        config["pad_token_id"] = 0
    if model_type in ENCODERS_AS_DECODERS:
        config["is_decoder"] = True
    return {**config, "head_dim": 8}


def _transformers_cache_width(model_type: str, config: dict) -> int | None:
    """The last dimension of the first layer's cached keys, or None where transformers cannot build or run the model
    with this ``head_dim`` (GPT-J, Persimmon: the rotary embedding takes it, the heads do not)."""
    transformers_logging.set_verbosity_error()
    try:
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **config)).eval()
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cache = model(torch.tensor([[1, 2, 3]]), use_cache=True).past_key_values
    except (AttributeError, RuntimeError, ValueError):  # FalconConfig.head_dim has no setter; shapes that disagree
        return None
    layer = cache.self_attention_cache.layers[0] if hasattr(cache, "self_attention_cache") else cache.layers[0]
    return layer.keys.shape[-1]


@pytest.mark.parametrize("model_type", sorted(HEAD_WIDTH_DERIVED))
def test_a_family_that_derives_its_head_width_is_priced_at_the_quotient(model_type):
    config = _tiny_config(model_type)
    assert _transformers_cache_width(model_type, config) in (16, None)
    imported = import_hf_config({**config, "model_type": model_type, "architectures": None})
    assert imported.model.attention.head_dim == 16
    assert any("head_dim not read" in line for line in imported.assumptions)


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "phi3", "gemma"])
def test_a_family_that_reads_head_dim_is_priced_at_it(model_type):
    """The control: the same config, in families whose attention reads ``head_dim``."""
    config = _tiny_config(model_type)
    assert _transformers_cache_width(model_type, config) == 8
    imported = import_hf_config({**config, "model_type": model_type})
    assert imported.model.attention.head_dim == 8
