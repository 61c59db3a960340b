"""Gemma 4 is a registered family that ``mha kv`` refuses by name (exit 2, one line): its full-attention layers cache
K/V at their own head width and KV head count, which one ``AttentionSpec`` cannot hold. The refusal's premise is
checked against what transformers really allocates, so a release that drops the per-kind geometry fails here; the
gemma-4-31B cache and weights are pinned by hand, against transformers, for the pricing that lifts the refusal."""

from __future__ import annotations

import json
import warnings

import pytest

from mha_cli.core.families import family
from mha_cli.core.families.architectures import family_of_architectures

LAYER_TYPES_31B = (["sliding_attention"] * 5 + ["full_attention"]) * 10
TEXT_31B = {
    "model_type": "gemma4_text", "hidden_size": 5376, "intermediate_size": 21504, "num_hidden_layers": 60,
    "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 256, "global_head_dim": 512,
    "num_global_key_value_heads": 4, "attention_k_eq_v": True, "sliding_window": 1024, "layer_types": LAYER_TYPES_31B,
    "hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0, "enable_moe_block": False, "vocab_size": 262144,
    "final_logit_softcapping": 30.0, "max_position_embeddings": 262144, "tie_word_embeddings": True,
}  # fmt: skip
"""gemma-4-31B's text_config as its published descriptions give it: 60 layers, 5 sliding : 1 full, 32 heads, 16 KV
heads of 256 on sliding layers, 4 of 512 (global_head_dim) with attention_k_eq_v on full ones, window 1024
(https://huggingface.co/mlboydaisuke/Gemma-4-31B-CoreAI, "Architecture"; https://apxml.com/models/gemma-4-31b)."""
BF16 = 2


def _kv(cli, tmp_path, config: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return cli.run("kv", str(path), "--seq", "1024", "--json")


def test_gemma4_s_model_types_and_architectures_name_its_refused_families():
    assert family("gemma4") is family("gemma4_text") is not None
    assert family("gemma4_unified") is family("gemma4_unified_text") is not None
    assert family("gemma4").refused is not None and family("gemma4_unified").refused is not None
    for architecture, model_type in [
        ("Gemma4ForConditionalGeneration", "gemma4"), ("Gemma4ForCausalLM", "gemma4"),
        ("Gemma4UnifiedForConditionalGeneration", "gemma4_unified"), ("Gemma4UnifiedForCausalLM", "gemma4_unified"),
    ]:  # fmt: skip
        assert family_of_architectures([architecture]).family is family(model_type)


def _wrapped(model_type: str, text: dict) -> dict:
    """A multimodal (or drafter) config.json around ``text`` as its text_config."""
    vision = {"model_type": "gemma4_vision", "hidden_size": 1152, "num_hidden_layers": 27}
    return {"model_type": model_type, "text_config": text, "vision_config": vision}


@pytest.mark.parametrize(
    ("config", "read_as"),
    [(TEXT_31B, "gemma4_text"), (_wrapped("gemma4", TEXT_31B), "gemma4_text"),
     (_wrapped("gemma4_assistant", TEXT_31B), "gemma4_text"),
     ({**TEXT_31B, "model_type": "gemma4_unified_text"}, "gemma4_unified_text")],
    ids=["text_config", "multimodal wrapper", "assistant wrapper", "unified"],
)  # fmt: skip
def test_a_gemma4_config_is_refused_naming_its_per_kind_head_geometry(cli, tmp_path, config, read_as):
    result = _kv(cli, tmp_path, config)
    assert result.exit_code == 2, result.output
    assert f"model_type '{read_as}': its full_attention layers cache K/V at their own head width" in result.stderr
    assert "num_global_key_value_heads" in result.stderr and "per-kind head geometry" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


def _per_kind(config) -> dict[str, tuple[int, int]]:
    """(KV heads, head width) of each layer type, as transformers' per_layer_config resolves them."""
    layers = config.per_layer_config
    return {kind: (layers[i].num_key_value_heads, layers[i].head_dim) for i, kind in enumerate(config.layer_types)}


def test_gemma4_31b_caches_901120_bytes_a_token_by_hand_not_one_geometry_s_983040():
    """By hand, bf16, under the window: 50 sliding x 16 x 256 x 2 (K, V) x 2 B + 10 full x 4 x 512 x 2 x 2 B;
    transformers' config gives the same geometry per kind, and no single (KV heads, head_dim) gives that sum."""
    transformers = pytest.importorskip("transformers")
    fields = {k: v for k, v in TEXT_31B.items() if k != "model_type"}
    config = transformers.Gemma4TextConfig(**fields)
    assert _per_kind(config) == {"sliding_attention": (16, 256), "full_attention": (4, 512)}
    by_hand = 50 * 16 * 256 * 2 * BF16 + 10 * 4 * 512 * 2 * BF16
    assert by_hand == 901_120
    per_layer = [2 * _per_kind(config)[kind][0] * _per_kind(config)[kind][1] * BF16 for kind in config.layer_types]
    assert sum(per_layer) == by_hand
    assert 60 * 16 * 256 * 2 * BF16 == 983_040 != by_hand  # the sliding layers' geometry on every layer


def test_transformers_caches_gemma4_s_full_layers_at_their_own_geometry():
    """A tiny Gemma 4 with attention_k_eq_v (full layers: 1 KV head of 16; sliding: 2 of 8) and two K/V-sharing
    layers: the prefill's cache holds each layer at its kind's geometry (K and V both, k_eq_v or not), and the
    sharing layers nothing: the per-kind sum a pricing of Gemma 4 has to reproduce."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.Gemma4TextConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=6, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, global_head_dim=16, num_global_key_value_heads=1, attention_k_eq_v=True,
        num_kv_shared_layers=2, sliding_window=16, hidden_size_per_layer_input=4, vocab_size_per_layer_input=64,
        layer_types=["sliding_attention", "full_attention"] * 3,
    )  # fmt: skip
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.Gemma4ForCausalLM(config).eval()
        with torch.no_grad():
            cache = model(torch.randint(0, 64, (2, 12)), use_cache=True).past_key_values
    held = [
        (tuple(layer.keys.shape), tuple(layer.values.shape)) if getattr(layer, "keys", None) is not None else None
        for layer in cache.layers
    ]
    sliding, full = ((2, 2, 12, 8),) * 2, ((2, 1, 12, 16),) * 2
    assert held == [sliding, full, sliding, full, None, None]
    geometry = _per_kind(config)
    values_per_token = sum(2 * geometry[kind][0] * geometry[kind][1] for kind in config.layer_types[:4])
    allocated = sum(torch.Size(k).numel() + torch.Size(v).numel() for k, v in (h for h in held if h is not None))
    assert allocated == 2 * 12 * values_per_token == 3_072  # 2 x 12 tokens x (2 x 2 x 8 x 2 + 2 x 1 x 16 x 2)


def test_gemma4_31b_text_weights_by_hand_equal_transformers_meta_build():
    """The weights a pricing of Gemma 4 has to count, by hand: full layers' q/o at 512 wide heads, their k at 4 KV
    heads of 512 and no v_proj (attention_k_eq_v: V is K), q and k norms one head wide (v_norm has no weight)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    d, ff, heads, vocab = 5376, 21504, 32, 262144
    sliding, full = 50, 10
    attention = sliding * (2 * d * heads * 256 + 2 * d * 16 * 256) + full * (2 * d * heads * 512 + d * 4 * 512)
    head_norms = sliding * 2 * 256 + full * 2 * 512
    by_hand = vocab * d + 60 * (3 * d * ff + 4 * d) + attention + head_norms + d  # tied head, final norm
    assert by_hand == 30_697_345_280
    fields = {k: v for k, v in TEXT_31B.items() if k != "model_type"}
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(**fields))
    assert sum(p.numel() for p in model.parameters()) == by_hand
