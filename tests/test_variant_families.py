"""The Llama variants' own arithmetic, each against transformers' on the same tensors (random, tiny, nothing
downloaded): attention sinks, gpt-oss's clamped SwiGLU and router bias, LayerNorm1P and OLMo's weightless
LayerNorm, Kolibri's logit-biased routing; and each family made equal weighs what transformers builds.

The whole-decoder logits of these families are the decoder sweep's (``tests/test_family_sweep.py``, ``EQUAL``).
"""

from __future__ import annotations

import contextlib
import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402
from mha_cli.core.schemas import MoESpec  # noqa: E402
from mha_cli.nn.moe import MoE, TopKRouter  # noqa: E402
from mha_cli.nn.norms import LayerNorm  # noqa: E402
from mha_cli.nn.sdpa import grouped_attention  # noqa: E402
from mha_cli.nn.sinks import sink_attention  # noqa: E402
from mha_cli.nn.window_cache import window_mask  # noqa: E402


def _qkv(b=2, n_h=4, n_kv=2, s=7, t=7, h_d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, n_h, s, h_d, generator=g), torch.randn(b, n_kv, t, h_d, generator=g),
            torch.randn(b, n_kv, t, h_d, generator=g))  # fmt: skip


def _gpt_oss_eager(q, k, v, sinks, visible):
    """transformers' gpt-oss eager attention on (b, n_h, s, h_d) tensors, ``visible`` (s, t) booleans."""
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward

    module = torch.nn.Module()
    module.sinks = torch.nn.Parameter(sinks)
    module.num_key_value_groups = q.shape[1] // k.shape[1]
    additive = torch.zeros(visible.shape).masked_fill(~visible, float("-inf"))[None, None]  # (1, 1, s, t)
    out, _ = eager_attention_forward(module.eval(), q, k, v, additive, scaling=q.shape[-1] ** -0.5)
    return out.transpose(1, 2)  # (b, n_h, s, h_d)


def test_sink_attention_equals_gpt_oss_eager_attention_causal_and_windowed():
    q, k, v = _qkv()
    sinks = torch.randn(4, generator=torch.Generator().manual_seed(1)) * 2
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    ours = sink_attention(q, k, v, sinks)
    assert torch.allclose(ours, _gpt_oss_eager(q, k, v, sinks, causal), atol=1e-6)
    window = window_mask(0, 7, 0, 7, 3, q.device)  # (s, t): itself and the 2 keys before it
    windowed = sink_attention(q, k, v, sinks, mask=window)
    assert torch.allclose(windowed, _gpt_oss_eager(q, k, v, sinks, window), atol=1e-6)
    assert not torch.allclose(windowed, ours, atol=1e-3)


def test_sinks_take_weight_from_the_keys_and_vanish_at_minus_infinity():
    q, k, v = _qkv(s=3, t=9)  # a cached step: 3 new queries over 9 keys
    plain = grouped_attention(q, k, v)
    assert torch.allclose(sink_attention(q, k, v, torch.full((4,), float("-inf"))), plain, atol=1e-6)
    with_sinks = sink_attention(q, k, v, torch.full((4,), 3.0))
    assert with_sinks.norm() < plain.norm()  # the kept weights sum to less than 1
    chunked = sink_attention(q, k, v, torch.full((4,), 3.0), score_budget=1)  # one query position a chunk
    assert torch.allclose(chunked, with_sinks, atol=1e-6)


def _gpt_oss_config(**fields):
    from transformers import GptOssConfig

    return GptOssConfig(hidden_size=32, intermediate_size=16, num_local_experts=4, num_experts_per_tok=2,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=8, **fields)  # fmt: skip


def test_gpt_oss_moe_equals_transformers_with_its_swiglu_clamped():
    """Weights scaled so that gate and up pass the limit: the clamp, the (up + 1) gating and the router bias."""
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssMLP

    from mha_cli.core.families.models.gpt_oss import WEIGHTS
    from mha_cli.nn.hf_state_dict import to_mha_state_dict

    config = _gpt_oss_config(swiglu_limit=1.5)
    torch.manual_seed(0)
    reference = GptOssMLP(config).eval()
    with torch.no_grad():
        for param in reference.parameters():
            param.normal_(0, 1.0)
    spec = MoESpec(n_experts=4, n_active_experts=2, d_ff_expert=16, expert_bias=True, router_bias=True,
                   swiglu_limit=1.5)  # fmt: skip
    ours = MoE(32, spec).eval()
    prefix = "model.layers.0.mlp."
    named = {prefix + name: tensor for name, tensor in reference.state_dict().items()}
    converted = to_mha_state_dict(named, WEIGHTS, import_hf_config(config.to_dict()).model)
    ours.load_state_dict({name.removeprefix(prefix): tensor for name, tensor in converted.items()}, strict=True)
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        expected, _ = reference(x)
        got = ours(x)
        gate_up = torch.einsum("nd,edf->nef", x.reshape(-1, 32), reference.experts.gate_up_proj)
    assert gate_up.abs().max() > 3 * 1.5  # the clamp is reached
    assert torch.allclose(got, expected, atol=1e-4), (got - expected).abs().max()
    unclamped = MoE(32, spec.model_copy(update={"swiglu_limit": None})).eval()
    unclamped.load_state_dict(ours.state_dict())
    assert not torch.allclose(unclamped(x), expected, atol=1e-2)


def test_kolibri_routing_adds_its_bias_to_the_logits_not_the_scores():
    from transformers import AutoConfig
    from transformers.models.kolibri1.modeling_kolibri1 import Kolibri1TopKRouter

    config = AutoConfig.for_model("kolibri1", hidden_size=16, num_experts=8, num_experts_per_tok=2)
    reference = Kolibri1TopKRouter(config)
    with torch.no_grad():
        reference.weight.normal_()
        reference.e_score_correction_bias.normal_(0, 2.0)
    ours = TopKRouter(16, MoESpec(n_experts=8, n_active_experts=2, d_ff_expert=4, scoring_func="sigmoid",
                                  topk_method="noaux_logits", norm_topk_prob=False))  # fmt: skip
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(32, 16)
    _, weights, indices = reference(x)
    got_weights, got_indices = ours(x)
    order, got_order = indices.sort(dim=-1), got_indices.sort(dim=-1)
    assert torch.equal(order.values, got_order.values)
    assert torch.allclose(weights.gather(1, order.indices), got_weights.gather(1, got_order.indices), atol=1e-6)
    spec = MoESpec(n_experts=8, n_active_experts=2, d_ff_expert=4, scoring_func="sigmoid", topk_method="noaux_tc")
    on_scores = TopKRouter(16, spec)
    on_scores.load_state_dict(ours.state_dict())
    assert not torch.equal(on_scores(x)[1].sort(dim=-1).values, order.values)  # the bias's place matters


def test_sparsemixer_routing_equals_phimoe_at_inference():
    from transformers.models.phimoe.modeling_phimoe import sparsemixer

    from mha_cli.nn.sparsemixer import sparsemixer_route

    logits = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    logits[:8, 1] = logits[:8, 0] * (1 - 1e-3)  # near-ties: the second expert's mask keeps more than one logit
    expected_weights, expected = sparsemixer(logits, jitter_eps=0.01, training=False)
    weights, indices = sparsemixer_route(logits, 0.01, 2)
    assert torch.equal(indices, expected)
    assert torch.allclose(weights, expected_weights, atol=1e-6)
    replayed, same = sparsemixer_route(logits, 0.01, 2, forced=indices)
    assert torch.equal(same, indices) and torch.allclose(replayed, weights)
    softmax_top2 = logits.softmax(-1).topk(2).values  # what a softmax router would weigh them by
    assert not torch.allclose(weights, softmax_top2, atol=1e-3)


def test_xielu_equals_transformers_with_its_learned_scalars():
    from transformers.activations import XIELUActivation

    from mha_cli.nn.xielu import XIELU

    reference = XIELUActivation(dtype=torch.float32)
    with torch.no_grad():
        reference.alpha_p.fill_(0.3)
        reference.alpha_n.fill_(-0.7)
    ours = XIELU(dtype=torch.float32)
    fresh = ours(torch.linspace(-4, 4, 101))
    ours.load_state_dict(reference.state_dict())
    x = torch.linspace(-4, 4, 101)
    assert torch.allclose(ours(x), reference._xielu_python(x), atol=1e-6)
    assert not torch.allclose(ours(x), fresh, atol=1e-3)  # the learned scalars act


def test_layernorm1p_and_olmo_layernorm_equal_transformers():
    from transformers.models.nemotron.modeling_nemotron import NemotronLayerNorm1P
    from transformers.models.olmo.modeling_olmo import OlmoLayerNorm

    x = torch.randn(3, 5, 16)
    reference = NemotronLayerNorm1P(16, eps=1e-5)
    with torch.no_grad():
        reference.weight.normal_(0, 0.3)
        reference.bias.normal_(0, 0.3)
    ours = LayerNorm(16, 1e-5, offset=1.0)
    ours.load_state_dict(reference.state_dict())
    assert torch.allclose(ours(x), reference(x), atol=1e-6)
    plain = LayerNorm(16, 1e-5, bias=False, weights=False)
    assert not list(plain.parameters())
    assert torch.allclose(plain(x.bfloat16()).float(), OlmoLayerNorm(16)(x.bfloat16()).float(), atol=1e-2)
    assert torch.allclose(plain(x), OlmoLayerNorm(16)(x), atol=1e-6)


SMALL = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 512, "vocab_size": 512}  # fmt: skip


def _counts(model_type: str) -> tuple[int, int]:
    """(transformers' parameters, ours) for ``model_type``'s config class at small widths, on the meta device."""
    config = transformers.AutoConfig.for_model(model_type)
    for field, value in SMALL.items():
        if hasattr(config, field):  # Nemotron's num_key_value_heads defaults to None: set too
            setattr(config, field, value)
    if (config.pad_token_id or 0) >= SMALL["vocab_size"]:  # GLM's pad token sits past the small vocabulary
        config.pad_token_id = None
    for listed in ("layer_types", "mlp_layer_types"):  # per-layer lists the class filled for its default depth
        if isinstance(getattr(config, listed, None), list):
            with contextlib.suppress(AttributeError):
                setattr(config, listed, getattr(config, listed)[: SMALL["num_hidden_layers"]])
    if getattr(config, "num_attention_heads_per_layer", None):  # Laguna's, filled at its default head count
        config.num_attention_heads_per_layer = [SMALL["num_attention_heads"]] * SMALL["num_hidden_layers"]
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters()), count_params(import_hf_config(config.to_dict()).model).total


@pytest.mark.parametrize(
    "model_type",
    ["glm4_moe_lite", "gpt_oss", "flint", "granite_swa", "granitemoe_swa", "nemotron", "jais2", "olmo", "arcee",
     "glm", "glm4", "kolibri1", "vaultgemma", "hy_v3", "axk1", "hyperclovax", "cohere2_moe",
     "deepseek_v32", "glm_moe_dsa", "phimoe", "apertus"],
)  # fmt: skip
def test_the_variant_families_weigh_what_transformers_builds(model_type):
    reference, ours = _counts(model_type)
    assert ours == reference


@pytest.mark.parametrize("model_type", ["ernie4_5_moe", "laguna"])
def test_a_correction_bias_stored_as_a_parameter_is_what_the_count_leaves_out(model_type):
    """ERNIE 4.5 MoE and Laguna keep the router's correction bias as a parameter (not a buffer, as DeepSeek-V3
    does): it is the count's only difference, one value per expert of each MoE layer."""
    reference, ours = _counts(model_type)
    config = transformers.AutoConfig.for_model(model_type)
    n_experts = getattr(config, "moe_num_experts", None) or config.num_experts
    moe_layers = {"ernie4_5_moe": SMALL["num_hidden_layers"] - 1, "laguna": SMALL["num_hidden_layers"] - 1}
    assert reference - ours == moe_layers[model_type] * n_experts
