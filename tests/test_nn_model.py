"""build_model against transformers: the same config.json, the same weights, the same logits.

Each case is a scaled-down config.json of a real family. transformers builds its model from the
config (random weights, fp32, nothing downloaded); ``import_hf_config`` reads the same dict into a
``ModelSpec``; ``build_model`` builds ours, which loads transformers' state dict strictly. Logits
must agree within 1e-4 for a full prefill and for a cached decode (a k-token prefill, then one
token at a time through our caches), both compared with transformers' full forward.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers  # the reference (dev extra); a missing install fails here rather than skipping

from mha_cli.core.hf_import import import_hf_config
from mha_cli.nn import build_model
from tests.spec_paths import copy_with

TOLERANCE = 1e-4
SEQ_LEN = 12
PREFILL = 5
TINY = dict(
    hidden_size=64, num_hidden_layers=2, vocab_size=128, max_position_embeddings=256, hidden_act="silu",
    initializer_range=0.1,  # logits of order 1 and attention far from uniform, so 1e-4 is a tight bound
)  # fmt: skip

LLAMA3 = dict(
    TINY, model_type="llama", num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
    rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
    # original context 16 so that the tiny head's wavelengths (6 to ~4,000 positions) span all three bands
    rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                      original_max_position_embeddings=16),
)  # fmt: skip

QWEN2 = dict(
    TINY, model_type="qwen2", num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
    rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True,  # q/k/v biases are the family's
)  # fmt: skip

QWEN3 = dict(
    TINY, model_type="qwen3", num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
    head_dim=32,  # 4 x 32 = 128 wide attention on a 64 wide model, as Qwen3-0.6B's 16 x 128 on 1,024
    rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True,
)  # fmt: skip

MISTRAL = dict(
    TINY, model_type="mistral", num_attention_heads=4, num_key_value_heads=1, intermediate_size=128,
    rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
    sliding_window=4,  # the 12-token sequences and the 5-token prefill run past it
)  # fmt: skip

QWEN3_LOCAL_GLOBAL = dict(
    QWEN3, use_sliding_window=True, sliding_window=3, max_window_layers=2,
    layer_types=["sliding_attention", "full_attention"],  # spec.layer_pattern ["local", "global"]
)  # fmt: skip

CASES: dict[str, tuple[dict[str, Any], str]] = {
    "llama-3": (LLAMA3, "LlamaForCausalLM"),
    "qwen2": (QWEN2, "Qwen2ForCausalLM"),
    "qwen3": (QWEN3, "Qwen3ForCausalLM"),
    "mistral": (MISTRAL, "MistralForCausalLM"),
    "qwen3-local-global": (QWEN3_LOCAL_GLOBAL, "Qwen3ForCausalLM"),
}


def reference_model(config: dict[str, Any], class_name: str, seed: int = 0) -> torch.nn.Module:
    """transformers' model for ``config`` with random weights: norms and biases away from 1 and 0 too."""
    torch.manual_seed(seed)
    config_class = transformers.AutoConfig.for_model(config["model_type"]).__class__
    hf_config = config_class(**{k: v for k, v in config.items() if k != "model_type"})
    model = getattr(transformers, class_name)(hf_config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("bias"):
                param.add_(torch.randn_like(param) * 0.1)
    return model


def ours_loaded_from(reference: torch.nn.Module, config: dict[str, Any]) -> torch.nn.Module:
    spec = import_hf_config(config).model
    model = build_model(spec, dtype=torch.float32).eval()
    model.load_state_dict(reference.state_dict(), strict=True)
    return model


def tokens(seed: int = 1, batch: int = 2, length: int = SEQ_LEN) -> torch.Tensor:
    return torch.randint(0, TINY["vocab_size"], (batch, length), generator=torch.Generator().manual_seed(seed))


DECODE = [PREFILL] + [1] * (SEQ_LEN - PREFILL)
"""A k-token prefill, then one token per step."""


def max_errors(config: dict[str, Any], class_name: str, chunks: list[int] = DECODE) -> tuple[float, float]:
    """(prefill, cached decode) max abs logit differences from transformers' full forward.

    The cached run feeds the sequence in ``chunks`` (token counts) through one set of caches.
    """
    reference = reference_model(config, class_name)
    ours = ours_loaded_from(reference, config)
    ids = tokens()
    with torch.no_grad():
        expected = reference(ids).logits  # (b, s, v)
        prefill = ours(ids)  # (b, s, v)
        caches = ours.new_cache(batch=ids.shape[0], max_seq=SEQ_LEN)
        steps, pos = [], 0
        for n in chunks:
            steps.append(ours(ids[:, pos : pos + n], caches, start_pos=pos))  # (b, n, v)
            pos += n
    assert pos == SEQ_LEN
    decoded = torch.cat(steps, dim=1)  # (b, s, v)
    return (prefill - expected).abs().max().item(), (decoded - expected).abs().max().item()


@pytest.mark.parametrize("family", list(CASES))
def test_same_logits_as_transformers(family: str) -> None:
    config, class_name = CASES[family]
    prefill_error, decode_error = max_errors(config, class_name)
    assert prefill_error < TOLERANCE, f"{family} prefill: max abs error {prefill_error:.2e}"
    assert decode_error < TOLERANCE, f"{family} decode: max abs error {decode_error:.2e}"


def test_logits_differ_when_a_weight_differs() -> None:
    """The comparison can fail: one perturbed weight moves the logits well past the tolerance."""
    config, class_name = CASES["llama-3"]
    reference = reference_model(config, class_name)
    ours = ours_loaded_from(reference, config)
    with torch.no_grad():
        ours.model.layers[1].self_attn.k_proj.weight[0, 0] += 0.5
        error = (ours(tokens()) - reference(tokens()).logits).abs().max().item()
    assert error > 100 * TOLERANCE


def test_rope_scaling_matters_for_the_llama3_case() -> None:
    """Without llama3 scaling (same weights) the logits move: the test exercises the scaling."""
    config, class_name = CASES["llama-3"]
    reference = reference_model(config, class_name)
    spec = import_hf_config(config).model
    unscaled = build_model(
        copy_with(spec, {"attention.rope": spec.attention.rope.model_copy(update={"scaling": None})})
    )
    unscaled.load_state_dict(reference.state_dict(), strict=True)
    with torch.no_grad():
        error = (unscaled.eval()(tokens()) - reference(tokens()).logits).abs().max().item()
    assert error > 100 * TOLERANCE


@pytest.mark.parametrize("family", ["mistral", "qwen3-local-global"])
def test_windowed_decode_in_uneven_chunks(family: str) -> None:
    """Chunks that straddle the window edge and the ring's wrap (window 4 / 3, chunks 3, 4, 2, 1, 2)."""
    _, decode_error = max_errors(*CASES[family], chunks=[3, 4, 2, 1, 2])
    assert decode_error < TOLERANCE


@pytest.mark.parametrize("family", ["mistral", "qwen3-local-global"])
def test_window_matters(family: str) -> None:
    """The same weights without the window give other logits: the window is exercised, not idle."""
    config, class_name = CASES[family]
    reference = reference_model(config, class_name)
    spec = import_hf_config(config).model
    assert spec.layers.sliding_window is not None
    unwindowed = build_model(copy_with(spec, {"layers.sliding_window": None, "layers.pattern": None}))
    unwindowed.load_state_dict(reference.state_dict(), strict=True)
    with torch.no_grad():
        error = (unwindowed.eval()(tokens()) - reference(tokens()).logits).abs().max().item()
    assert error > 100 * TOLERANCE


def test_local_layers_cache_only_their_window() -> None:
    """qwen3-local-global: layer 0 (local, window 3) holds 3 slots, layer 1 (global) the whole max_seq."""
    config, _ = CASES["qwen3-local-global"]
    spec = import_hf_config(config).model
    assert spec.layers.pattern == ["local", "global"]
    caches = build_model(spec).new_cache(batch=2, max_seq=SEQ_LEN)
    per_token = 2 * 2 * 32 * 4  # K and V, 2 KV heads, head_dim 32, fp32 bytes
    assert [cache.nbytes for cache in caches] == [2 * 3 * per_token, 2 * SEQ_LEN * per_token]


def test_a_dropped_model_is_freed_without_the_garbage_collector():
    """No reference cycle through the model itself (its tied-head load hook is held weakly): the tp and pp checks
    build a model per stage and rely on it going when dropped. The first build of a process is left out: it leaves
    frames the collector frees (a one-time cost the checks cover with ``gc.collect``)."""
    import gc
    import weakref

    from mha_cli.core.schemas import ModelSpec

    spec = ModelSpec(d_model=32, n_layers=1, n_heads=4, vocab_size=64, d_ff=64, tied_embeddings=True)
    build_model(spec, dtype=torch.float32)
    gc.disable()
    try:
        model = build_model(spec, dtype=torch.float32)
        model.load_state_dict(model.state_dict() | {"lm_head.weight": model.model.embed_tokens.weight}, strict=True)
        dropped = weakref.ref(model)
        del model
        assert dropped() is None
    finally:
        gc.enable()
