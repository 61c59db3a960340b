"""The decoder's OLMo 2 block features against transformers, on tiny configs of the families that have them:

- ``norm_placement`` post: each sublayer's output normalised inside the residual (OLMo 2, OLMo 3, EXAONE 4);
- ``qk_norm_span`` projection: q/k RMSNorms over the whole projection (OLMo 2, OLMoE, MiniMax-M2);
- ``nope_layers`` global: no RoPE on the full-attention layers (EXAONE 4 with a sliding window);
- ``qkv_clip``: q, k and v clamped (OLMoE's clip_qkv);
- sigmoid routing with a correction bias (noaux_tc) for the families that run it (GLM-4.5, MiniMax-M2);
- ``norm_bias`` false and ``logit_scale``: Cohere's bias-free LayerNorms and scaled logits (Cohere, Cohere2, whose
  local layers alone take its interleaved RoPE).

transformers builds each model (random weights, norms, biases and correction biases moved off 1 and 0, fp32);
``import_hf_config`` reads its config dict, ``build_model`` builds ours, which loads the converted state dict
strictly. Logits agree within 1e-4 for a prefill and for a cached decode.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402
from mha_cli.nn import build_model  # noqa: E402
from mha_cli.nn.hf_state_dict import load_transformers_state_dict  # noqa: E402
from tests.spec_paths import copy_with, flat_path  # noqa: E402

TOLERANCE = 1e-4
SEQ_LEN, PREFILL = 12, 5
VOCAB = 128
TINY = dict(
    hidden_size=64, num_hidden_layers=2, vocab_size=VOCAB, max_position_embeddings=256, hidden_act="silu",
    initializer_range=0.1, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96, rms_norm_eps=1e-6,
    tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2,
)  # fmt: skip
MOE = dict(num_experts_per_tok=2)  # OLMoE's, FlexOlmo's and MiniMax-M2's experts are intermediate_size wide

GLM4_MOE = dict(
    TINY, model_type="glm4_moe", n_routed_experts=8, n_group=2, topk_group=1, n_shared_experts=1,
    first_k_dense_replace=1, routed_scaling_factor=1.5, use_qk_norm=True, moe_intermediate_size=32, **MOE,
    attention_bias=True,  # q, k and v biased, o_proj not
)  # fmt: skip
"""Two groups of four experts, the best group's top 2 chosen (by score + correction bias), one shared expert."""

LAYERNORM_TINY = {key: value for key, value in TINY.items() if key != "rms_norm_eps"}  # Cohere: layer_norm_eps
COHERE2 = dict(
    LAYERNORM_TINY, model_type="cohere2", sliding_window=4, layer_types=["sliding_attention", "full_attention"]
)

CASES: dict[str, dict[str, Any]] = {
    "olmo2": dict(TINY, model_type="olmo2"),
    "olmo3": dict(TINY, model_type="olmo3", sliding_window=4, layer_types=["sliding_attention", "full_attention"]),
    "exaone4": dict(
        TINY, model_type="exaone4", sliding_window=4, layer_types=["sliding_attention", "full_attention"]
    ),  # its full-attention layer without RoPE
    "olmoe": dict(TINY, model_type="olmoe", num_experts=4, clip_qkv=0.5, **MOE),  # the clamp bites at this scale
    "flex_olmo": dict(TINY, model_type="flex_olmo", num_experts=4, **MOE),
    "glm4_moe": dict(GLM4_MOE),
    "minimax_m2": dict(TINY, model_type="minimax_m2", head_dim=16, num_local_experts=4, rotary_dim=8, **MOE),
    # Cohere's logit_scale (0.0625) shrinks the logits below the tolerance's reach: unscaled here, scaled below
    "cohere": dict(LAYERNORM_TINY, model_type="cohere", logit_scale=1.0),
    "cohere2": dict(COHERE2, logit_scale=1.0),
    "cohere2-scaled": dict(COHERE2, logit_scale=0.5),
}


def _reference(config: dict[str, Any]) -> torch.nn.Module:
    torch.manual_seed(0)
    hf_config = transformers.AutoConfig.for_model(**config)
    model = transformers.AutoModelForCausalLM.from_config(hf_config, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, tensor in model.state_dict().items():  # buffers too: the routers' correction biases
            if name.endswith("norm.weight") or name.endswith("bias"):
                tensor.add_(torch.randn_like(tensor) * 0.1)
    return model


def _ours(reference: torch.nn.Module) -> torch.nn.Module:
    spec = import_hf_config(reference.config.to_dict()).model
    ours = build_model(spec, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, reference.state_dict())  # strict
    return ours


def _errors(reference: torch.nn.Module, ours: torch.nn.Module) -> tuple[float, float]:
    ids = torch.randint(0, VOCAB, (2, SEQ_LEN), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(input_ids=ids).logits  # (b, s, v)
        prefill = ours(ids)  # (b, s, v)
        caches = ours.new_cache(batch=2, max_seq=SEQ_LEN)
        steps = [ours(ids[:, :PREFILL], caches, start_pos=0)]
        steps += [ours(ids[:, p : p + 1], caches, start_pos=p) for p in range(PREFILL, SEQ_LEN)]
    decoded = torch.cat(steps, dim=1)  # (b, s, v)
    return (prefill - expected).abs().max().item(), (decoded - expected).abs().max().item()


@pytest.mark.parametrize("case", list(CASES))
def test_same_logits_as_transformers(case: str) -> None:
    reference = _reference(CASES[case])
    ours = _ours(reference)
    prefill, decode = _errors(reference, ours)
    assert prefill < TOLERANCE and decode < TOLERANCE, (prefill, decode)
    assert count_params(ours.spec).total == sum(p.numel() for p in reference.parameters())


def test_the_features_are_read_from_the_families():
    specs = {t: import_hf_config(transformers.AutoConfig.for_model(**c).to_dict()).model for t, c in CASES.items()}
    assert specs["olmo2"].block.norm_placement == "post" and specs["olmo2"].attention.qk_norm_span == "projection"
    assert specs["exaone4"].block.norm_placement == "post" and specs["exaone4"].attention.qk_norm_span == "head"
    assert specs["exaone4"].attention.nope_layers == "global" and specs["olmo3"].attention.nope_layers == "none"
    assert specs["olmoe"].block.norm_placement == "pre" and specs["olmoe"].attention.qkv_clip == 0.5
    glm, minimax = specs["glm4_moe"].block.moe, specs["minimax_m2"].block.moe
    assert (glm.scoring_func, glm.topk_method, glm.n_group, glm.routed_scaling_factor) == (
        "sigmoid",
        "noaux_tc",
        2,
        1.5,
    )
    assert (minimax.scoring_func, minimax.topk_method, minimax.norm_topk_prob) == ("sigmoid", "noaux_tc", True)
    assert specs["minimax_m2"].rotary.partial_rotary_factor == 0.5  # rotary_dim 8 of head_dim 16
    dumped = specs["olmo2"].model_dump()
    assert dumped["block"]["norm_placement"] == "post" and "norm_placement" not in specs["olmoe"].model_dump()["block"]
    assert specs["cohere2"].attention.nope_layers == "global" and not specs["cohere"].block.norm_bias
    assert specs["cohere2-scaled"].embeddings.logit_scale == 0.5 and specs["cohere2"].rotary.interleaved
    new = {"norm_placement", "qk_norm_span", "nope_layers", "qkv_clip", "norm_bias", "logit_scale"}
    assert not new & set(import_hf_config(TINY).model.model_dump())  # a Llama spec written out as before


@pytest.mark.parametrize("case", ["olmo2", "exaone4", "olmoe", "cohere2", "cohere2-scaled"])
def test_each_feature_matters(case: str) -> None:
    """The control: each family's logits move when its feature is switched off (the test would catch its loss)."""
    reference = _reference(CASES[case])
    spec = _ours(reference).spec
    undone = {
        "olmo2": {"qk_norm": False, "qk_norm_span": "head"},
        "exaone4": {"nope_layers": "none"},
        "olmoe": {"qkv_clip": None},
        "cohere2": {"nope_layers": "none"},
        "cohere2-scaled": {"logit_scale": 1.0},
    }[case]
    other = build_model(
        copy_with(spec, {flat_path(key): value for key, value in undone.items()}), dtype=torch.float32
    ).eval()
    result = load_transformers_state_dict(other, reference.state_dict(), strict=False)
    assert not result.missing_keys
    assert _errors(reference, other)[0] > 1e-3


def test_a_whole_projection_qk_norm_is_refused_under_tensor_parallelism():
    spec = import_hf_config(transformers.AutoConfig.for_model(**CASES["olmo2"]).to_dict()).model
    with pytest.raises(ValueError, match="whole projection"):
        build_model(spec, tp_rank=0, tp_size=2, device="meta")
    per_head = copy_with(spec, {"attention.qk_norm_span": "head"})
    build_model(per_head, tp_rank=0, tp_size=2, device="meta")  # per-head norms shard with their heads


def test_post_norms_need_two_norms_a_block_and_a_projection_span_needs_qk_norm():
    from pydantic import ValidationError

    from mha_cli.core.schemas import ModelSpec

    base = dict(d_model=64, n_layers=2, n_heads=4, vocab_size=128, d_ff=96)
    with pytest.raises(ValidationError, match="two norms"):
        ModelSpec(**base, norm_placement="post", n_norms_per_layer=4)
    with pytest.raises(ValidationError, match="needs qk_norm"):
        ModelSpec(**base, qk_norm_span="projection")
    spec = ModelSpec(**base, qk_norm=True, qk_norm_span="projection", n_kv_heads=2)
    assert count_params(spec).total - count_params(copy_with(spec, {"attention.qk_norm_span": "head"})).total == 2 * (
        (4 + 2) * 16 - 2 * 16
    )
