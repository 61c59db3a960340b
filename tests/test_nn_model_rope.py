"""RoPE frequencies against transformers' own functions, the rope/eps fields config.json fills, and the
sliding-window ring cache on its own."""

from __future__ import annotations

import json
import math

import pytest
import torch
from pydantic import ValidationError

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.schemas import ModelSpec, RopeSpec
from mha_cli.nn.rope import RotaryEmbedding, inverse_frequencies
from mha_cli.nn.window_cache import SlidingWindowCache
from tests.conftest import reference_hf_config

HEAD_DIM = 32

SCALINGS = {
    "none": dict(rope_type="default", rope_theta=10000.0),
    "linear": dict(rope_type="linear", rope_theta=10000.0, factor=4.0),
    "llama3": dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                   original_max_position_embeddings=64),
    "llama3-llama4-no-band": dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
                                  high_freq_factor=1.0, original_max_position_embeddings=64),
    "yarn": dict(rope_type="yarn", rope_theta=10000.0, factor=32.0, original_max_position_embeddings=128),
    "yarn-deepseek-mscale": dict(rope_type="yarn", rope_theta=10000.0, factor=32.0, original_max_position_embeddings=128,
                                 mscale=0.707, mscale_all_dim=1.0, beta_fast=32, beta_slow=1),
    "yarn-gpt-oss-untruncated": dict(rope_type="yarn", rope_theta=150000.0, factor=32.0,
                                     original_max_position_embeddings=128, truncate=False),
    "partial-half": dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.5),
    "dynamic-within-the-trained-context": dict(rope_type="dynamic", rope_theta=10000.0, factor=2.0),
}  # fmt: skip


def our_rope(params: dict) -> RopeSpec:
    """The same parameters through our importer (config.json's transformers-5 ``rope_parameters`` layout)."""
    config = dict(model_type="llama", hidden_size=64, num_hidden_layers=1, num_attention_heads=2, head_dim=HEAD_DIM,
                  vocab_size=8, intermediate_size=8, max_position_embeddings=128 * 32, rope_parameters=params)  # fmt: skip
    rope = import_hf_config(config).model.attention.rope
    assert rope is not None
    return rope


@pytest.mark.parametrize("case", list(SCALINGS))
def test_frequencies_equal_transformers(case: str) -> None:
    import transformers  # imported here: the rest of the module runs without its ~4 s import
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = SCALINGS[case]
    hf_config = transformers.LlamaConfig(
        hidden_size=64, num_attention_heads=2, head_dim=HEAD_DIM, max_position_embeddings=128 * 32,
        rope_parameters=dict(params),
    )  # fmt: skip
    kind = params["rope_type"]
    if kind == "default":
        width = int(HEAD_DIM * params.get("partial_rotary_factor", 1.0))
        expected = 1.0 / params["rope_theta"] ** (torch.arange(0, width, 2).float() / width)
        expected_factor = 1.0
    else:
        expected, expected_factor = ROPE_INIT_FUNCTIONS[kind](hf_config, "cpu")
    rotary = RotaryEmbedding(our_rope(params), HEAD_DIM)
    torch.testing.assert_close(rotary.inv_freq, expected.float(), rtol=1e-6, atol=0)
    assert rotary.attention_factor == pytest.approx(expected_factor, rel=1e-12)


def test_yarn_attention_factor_by_hand() -> None:
    """0.1 ln(32) + 1 = 1.3466; DeepSeek's ratio with mscale 0.707 over mscale_all_dim 1.0."""
    _, plain = inverse_frequencies(our_rope(SCALINGS["yarn"]), HEAD_DIM)
    _, ratio = inverse_frequencies(our_rope(SCALINGS["yarn-deepseek-mscale"]), HEAD_DIM)
    assert plain == pytest.approx(0.1 * math.log(32) + 1)
    assert ratio == pytest.approx((0.0707 * math.log(32) + 1) / (0.1 * math.log(32) + 1))


def test_cos_sin_carry_the_attention_factor() -> None:
    rotary = RotaryEmbedding(our_rope(SCALINGS["yarn"]), HEAD_DIM)
    cos, _ = rotary.cos_sin(torch.arange(5))
    assert cos.shape == (5, HEAD_DIM)
    torch.testing.assert_close(cos[0], torch.full((HEAD_DIM,), rotary.attention_factor))  # position 0: cos 1


# config.json -> rope and norm_eps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "theta", "scaling", "eps"),
    [
        ("llama-3-8b", 500000.0, None, 1e-5),
        ("llama-3.1-70b", 500000.0, dict(type="llama3", factor=8.0, original_max_position_embeddings=8192), 1e-5),
        ("qwen3-8b", 1e6, None, 1e-6),
        ("mistral-7b-v0.1", 10000.0, None, 1e-5),
        ("gpt-oss-20b", 150000.0, dict(type="yarn", factor=32.0, original_max_position_embeddings=4096, truncate=False), 1e-5),
        ("deepseek-v3", 10000.0, dict(type="yarn", factor=40.0, mscale=1.0, mscale_all_dim=1.0), 1e-6),
    ],
)  # fmt: skip
def test_published_configs_import_their_rope(fixture: str, theta: float, scaling: dict | None, eps: float) -> None:
    spec = import_hf_config(json.loads(reference_hf_config(fixture).read_text())).model
    assert spec.attention.rope is not None and spec.attention.rope.theta == theta
    assert spec.block.norm_eps == eps
    if scaling is None:
        assert spec.attention.rope.scaling is None
    else:
        assert spec.attention.rope.scaling is not None
        assert spec.attention.rope.scaling.model_dump(include=set(scaling)) == scaling


def test_learned_positions_have_no_rope() -> None:
    spec = import_hf_config(json.loads(reference_hf_config("gpt2").read_text())).model
    assert spec.attention.rope is None and spec.rotary is None


def test_unknown_scaling_is_an_assumption_not_an_error() -> None:
    config = dict(model_type="phi3", hidden_size=64, num_hidden_layers=1, num_attention_heads=2, vocab_size=8,
                  rope_theta=10000.0, rope_scaling=dict(type="longrope", short_factor=[1.0], long_factor=[1.0]))  # fmt: skip
    imported = import_hf_config(config)
    assert imported.model.attention.rope is not None and imported.model.attention.rope.scaling is None
    assert any("longrope" in note for note in imported.assumptions)


def test_new_fields_are_optional_and_not_written_at_their_defaults() -> None:
    spec = ModelSpec(d_model=64, n_layers=1, n_heads=4, vocab_size=8, d_ff=8)
    assert spec.rotary == RopeSpec() and spec.block.norm_eps == 1e-5
    assert "rope" not in spec.model_dump() and "norm_eps" not in spec.model_dump()
    with pytest.raises(ValidationError, match="original_max_position_embeddings"):
        RopeSpec(scaling=dict(type="yarn", factor=4.0))


# The sliding-window ring ------------------------------------------------------------------------


def test_ring_holds_the_window_and_returns_the_keys_each_step_sees() -> None:
    """Window 3 over 7 positions: 3 slots; a query at position p gets keys p-2 .. p (values = positions),
    in position order for several new tokens, in slot order (a rotation) for one."""
    cache = SlidingWindowCache(batch=1, max_seq=7, n_kv_heads=1, head_dim=1, window=3)
    assert cache.k.shape == (1, 1, 3, 1) and cache.nbytes == 2 * 3 * 4

    def at(positions: range) -> torch.Tensor:
        return torch.tensor([float(p) for p in positions]).view(1, 1, -1, 1)  # (b, n_kv, s, 1)

    keys, _, first = cache.update(0, at(range(0, 4)), at(range(0, 4)))  # a prefill longer than the window
    assert first == 0 and keys.flatten().tolist() == [0, 1, 2, 3]
    keys, values, first = cache.update(4, at(range(4, 5)), at(range(4, 5)))  # decode: the ring itself, no copy
    assert first == 2 and keys.flatten().tolist() == [3, 4, 2] and values.flatten().tolist() == [3, 4, 2]
    assert keys.data_ptr() == cache.k.data_ptr()
    keys, _, first = cache.update(5, at(range(5, 7)), at(range(5, 7)))  # two at once: keys from 3 on
    assert first == 3 and keys.flatten().tolist() == [3, 4, 5, 6]
    with pytest.raises(ValueError, match="max_seq"):
        cache.update(7, at(range(7, 8)), at(range(7, 8)))


def test_ring_never_exceeds_max_seq() -> None:
    assert SlidingWindowCache(batch=2, max_seq=5, n_kv_heads=2, head_dim=4, window=4096).k.shape == (2, 2, 5, 4)


def test_decode_before_the_ring_fills_sees_the_filled_prefix() -> None:
    cache = SlidingWindowCache(batch=1, max_seq=8, n_kv_heads=1, head_dim=1, window=4)
    for pos in range(3):
        keys, _, first = cache.update(pos, torch.full((1, 1, 1, 1), float(pos)), torch.zeros(1, 1, 1, 1))
        assert first == 0 and keys.flatten().tolist() == [float(p) for p in range(pos + 1)]


def test_rope_parameters_per_layer_type_give_each_kind_its_own() -> None:
    """transformers 5 writes Gemma 3's RoPE per layer type: the full-attention one is ``rope``, the sliding one
    ``rope_local`` (Gemma3TextConfig's default window makes the layers local)."""
    config = dict(model_type="gemma3_text", hidden_size=64, num_hidden_layers=2, num_attention_heads=2, head_dim=32,
                  num_key_value_heads=1,  # without it, Gemma3TextConfig's default (4) applies
                  vocab_size=8, intermediate_size=8, rms_norm_eps=1e-6,
                  rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=10000.0),
                                   "full_attention": dict(rope_type="linear", rope_theta=1e6, factor=8.0)})  # fmt: skip
    imported = import_hf_config(config)
    rope = imported.model.attention.rope
    assert rope is not None and rope.theta == 1e6
    assert rope.scaling is not None and (rope.scaling.type, rope.scaling.factor) == ("linear", 8.0)
    local = imported.model.attention.rope_local
    assert local is not None and (local.theta, local.scaling) == (10000.0, None)
    assert not any("full_attention" in note for note in imported.assumptions)
