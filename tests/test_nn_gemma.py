"""Gemma, Gemma 2 and Gemma 3 against transformers: the arithmetic the spec states beyond geometry.

Each case is a tiny config of the family (its own config class), with transformers' random weights (norms moved
off their identity); ``import_hf_config`` reads the config's ``to_dict()`` and ``build_model`` loads the state
dict strictly. Logits must agree within 1e-4 for a prefill and for a cached decode. The caps and the softmax
scale are set so they bite at this scale (a soft cap of 50 is the identity on scores of order 1), and each piece
of arithmetic is shown to matter: the same weights without it give other logits.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.params import count_params
from mha_cli.core.schemas import ModelSpec
from mha_cli.nn import build_model
from tests.spec_paths import copy_with, flat_path, read_path
from tests.tp_threads import run_ranks

TOLERANCE = 1e-4
SEQ_LEN, PREFILL = 12, 5
TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            intermediate_size=96, vocab_size=128, max_position_embeddings=256, initializer_range=0.1,
            rms_norm_eps=1e-6)  # fmt: skip
LOCAL_GLOBAL = dict(layer_types=["sliding_attention", "full_attention"], sliding_window=4)  # windows run past 4
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "gemma": (dict(TINY, model_type="gemma", hidden_act="gelu"), "GemmaForCausalLM"),  # legacy "gelu": tanh
    "gemma2": (
        dict(TINY, **LOCAL_GLOBAL, model_type="gemma2", query_pre_attn_scalar=4, attn_logit_softcapping=2.0,
             final_logit_softcapping=1.5),
        "Gemma2ForCausalLM",
    ),
    "gemma3_text": (
        dict(TINY, **LOCAL_GLOBAL, model_type="gemma3_text", query_pre_attn_scalar=4, final_logit_softcapping=1.5,
             rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=10.0),
                              "full_attention": dict(rope_type="linear", rope_theta=1e4, factor=4.0)}),
        "Gemma3ForCausalLM",
    ),
}  # fmt: skip


def reference_model(family: str, seed: int = 0) -> tuple[torch.nn.Module, dict[str, Any]]:
    """transformers' model (eager attention, fp32) and its config's ``to_dict()``; norms moved off zero."""
    config, class_name = CASES[family]
    torch.manual_seed(seed)
    config_class = transformers.AutoConfig.for_model(config["model_type"]).__class__
    hf_config = config_class(**{k: v for k, v in config.items() if k != "model_type"})
    hf_config._attn_implementation = "eager"
    model = getattr(transformers, class_name)(hf_config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.add_(torch.randn_like(param) * 0.1)
    return model, hf_config.to_dict()


def tokens(seed: int = 1) -> torch.Tensor:
    return torch.randint(0, TINY["vocab_size"], (2, SEQ_LEN), generator=torch.Generator().manual_seed(seed))


def loaded(spec: ModelSpec, reference: torch.nn.Module) -> torch.nn.Module:
    model = build_model(spec, dtype=torch.float32).eval()
    model.load_state_dict(reference.state_dict(), strict=True)
    return model


def errors(ours: torch.nn.Module, reference: torch.nn.Module, chunks: list[int]) -> tuple[float, float]:
    """(prefill, cached decode in ``chunks``) max abs logit differences from transformers' full forward."""
    ids = tokens()
    with torch.no_grad():
        expected = reference(ids).logits  # (b, s, v)
        prefill = ours(ids)  # (b, s, v)
        caches = ours.new_cache(batch=2, max_seq=SEQ_LEN)
        steps, pos = [], 0
        for n in chunks:
            steps.append(ours(ids[:, pos : pos + n], caches, start_pos=pos))
            pos += n
    decoded = torch.cat(steps, dim=1)  # (b, s, v)
    return (prefill - expected).abs().max().item(), (decoded - expected).abs().max().item()


@pytest.mark.parametrize("chunks", [[PREFILL] + [1] * (SEQ_LEN - PREFILL), [3, 4, 2, 1, 2]], ids=["steps", "uneven"])
@pytest.mark.parametrize("family", list(CASES))
def test_gemma_logits_equal_transformers(family: str, chunks: list[int]) -> None:
    reference, config = reference_model(family)
    spec = import_hf_config(config).model
    assert spec.block.norm_weight_offset == 1.0 and spec.embeddings.scaled and spec.block.activation == "gelu_tanh"
    ours = loaded(spec, reference)
    assert ours.omitted == []
    prefill, decode = errors(ours, reference, chunks)
    assert prefill < TOLERANCE and decode < TOLERANCE, (prefill, decode)


OFF = {
    "norm_weight_offset": 0.0,
    "scale_embeddings": False,
    "activation": None,
    "attn_scale": None,
    "attn_logit_softcap": None,
    "final_logit_softcap": None,
    "rope_local": None,
}
"""Each field and the value that turns its arithmetic off."""
MATTERS = [("gemma2", field) for field in OFF if field != "rope_local"] + [
    ("gemma3_text", field) for field in ("attn_scale", "final_logit_softcap", "rope_local")
]


@pytest.mark.parametrize(("family", "field"), MATTERS)
def test_each_piece_of_arithmetic_matters(family: str, field: str) -> None:
    reference, config = reference_model(family)
    spec = import_hf_config(config).model
    assert read_path(spec, flat_path(field)) != OFF[field]
    prefill, _ = errors(loaded(copy_with(spec, {flat_path(field): OFF[field]}), reference), reference, [SEQ_LEN])
    assert prefill > 100 * TOLERANCE, f"{field} off: {prefill:.1e}"


def test_gemma3_reads_its_layers_rope_and_drops_an_attention_cap_it_does_not_apply() -> None:
    _, config = reference_model("gemma3_text")
    imported = import_hf_config(config | {"attn_logit_softcapping": 50.0})
    spec = imported.model
    assert spec.attention.rope is not None and spec.attention.rope_local is not None
    assert (spec.attention.rope.theta, spec.attention.rope.scaling.type, spec.attention.rope_local.theta) == (
        1e4,
        "linear",
        10.0,
    )
    assert spec.attention.rope_local.scaling is None and spec.attention.logit_softcap is None
    assert any("attn_logit_softcapping: not applied" in note for note in imported.assumptions)
    older = {k: v for k, v in config.items() if k != "rope_parameters"} | {"rope_theta": 1e6}  # transformers 4
    assert import_hf_config(older | {"rope_local_base_freq": 5.0}).model.attention.rope_local.theta == 5.0
    assert import_hf_config(older).model.attention.rope_local.theta == 10_000.0  # Gemma3TextConfig's default


def test_the_arithmetic_adds_no_weight() -> None:
    for family in CASES:
        reference, config = reference_model(family)
        spec = import_hf_config(config).model
        plain = copy_with(spec, {flat_path(key): value for key, value in OFF.items()})
        assert count_params(spec).total == count_params(plain).total == sum(p.numel() for p in reference.parameters())


def test_a_fresh_offset_norm_is_the_identity() -> None:
    """build_model's own weights: Gemma's norms start at zeros ((1 + 0) x), the same logits as offset 0 at ones."""
    spec = import_hf_config(reference_model("gemma2")[1]).model
    torch.manual_seed(0)
    ours = build_model(spec).eval()
    assert all(float(p.detach().abs().max()) == 0 for n, p in ours.named_parameters() if n.endswith("norm.weight"))
    torch.manual_seed(0)
    plain = build_model(copy_with(spec, {"block.norm_weight_offset": 0.0})).eval()
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens()), plain(tokens()))


def test_bf16_scales_the_embeddings_by_the_rounded_factor() -> None:
    """transformers casts sqrt(d_model) to the activations' dtype: sqrt(3072) = 55.43 is 55.5 in bf16."""
    spec = ModelSpec(d_model=3072, n_layers=1, n_heads=24, vocab_size=8, d_ff=8, scale_embeddings=True)
    model = build_model(spec, dtype=torch.bfloat16, device="meta")
    embedding = torch.ones(1, 1, 3072, dtype=torch.bfloat16)
    model.model.embed_tokens = torch.nn.Embedding.from_pretrained(embedding[0])
    assert float(model.embed(torch.zeros(1, 1, dtype=torch.long), 0)[0, 0, 0]) == 55.5


def _shard(full: dict[str, torch.Tensor], name: str, rank: int, tp: int) -> torch.Tensor:
    from mha_cli.nn.tensor_parallel import shard_tensor

    return shard_tensor(name, full[name], SHARDED, rank, tp)


SHARDED = ModelSpec(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16, vocab_size=128, d_ff=96,
                    sliding_window=3, layer_pattern=["local", "global"], n_norms_per_layer=4, qk_norm=True,
                    tied_embeddings=True, norm_weight_offset=1.0, scale_embeddings=True, activation="gelu_tanh",
                    attn_scale=0.25, attn_logit_softcap=2.0, final_logit_softcap=1.5, rope=dict(theta=1e4),
                    rope_local=dict(theta=10.0))  # fmt: skip


@pytest.mark.parametrize("tp", [2, 4])
def test_tensor_parallel_shards_give_the_whole_models_logits(tp: int) -> None:
    torch.manual_seed(0)
    whole = build_model(SHARDED).eval()
    with torch.no_grad():
        for param in whole.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    ids = torch.randint(0, 128, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = whole(ids)  # (b, s, v)
    results, _ = run_ranks(
        lambda rank: build_model(SHARDED, tp_rank=rank, tp_size=tp), _shard, whole.state_dict(), ids, tp
    )
    for logits in results:
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("budget", [1 << 26, 40], ids=["one call", "chunked"])
def test_soft_capped_attention_is_explicit_and_held_to_the_score_budget(budget: int) -> None:
    from mha_cli.nn.sdpa import grouped_attention, record_attention_paths, reference_attention

    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 7, 8, generator=generator) * 3  # scores well past the cap
    k, v = torch.randn(2, 2, 7, 8, generator=generator) * 3, torch.randn(2, 2, 7, 8, generator=generator)
    with record_attention_paths() as seen:
        out = grouped_attention(q, k, v, scale=0.3, softcap=1.0, score_budget=budget)
    expected, _ = reference_attention(q, k, v, scale=0.3, softcap=1.0)
    torch.testing.assert_close(out, expected)
    assert seen == ["grouped: explicit" if budget > 1000 else "grouped-chunked: explicit"]
    uncapped, _ = reference_attention(q, k, v, scale=0.3)
    assert (uncapped - expected).abs().max() > 0.1
