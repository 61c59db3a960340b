"""MiniMax's lightning attention and decoder, against transformers' ``MiniMaxLightningAttention`` and
``MiniMaxForCausalLM`` on the same weights (random, from config objects; nothing downloaded).

- the mixer (``mha_cli.nn.mixers.LightningAttention``): transformers' blockwise prefill (several blocks, the last one
  partial), its token-by-token decode with the cache, and the state it leaves, equal to our recurrence's;
- the decoder: MiniMax's scaled residual around normed inputs (``normed_residual``), its full-attention layers masked
  to a ``sliding_window`` while their cache keeps every token (``masked_window``), Mixtral's MoE: logits equal for a
  prefill and a cached decode;
- the state format: the spec's (``activation``: the activations' dtype, as transformers and vLLM keep it);
- ``mha verify`` measures the lightning state it builds, byte for byte what ``mha kv`` prices.
"""

from __future__ import annotations

import pytest
import torch
from transformers import MiniMaxConfig, MiniMaxForCausalLM
from transformers.models.minimax.modeling_minimax import MiniMaxCache, MiniMaxLightningAttention

from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.schemas import ModelSpec, RecurrentSpec
from mha_cli.nn import build_model
from mha_cli.nn.hf_state_dict import load_transformers_state_dict
from mha_cli.nn.mixers import LightningAttention, build_mixer
from tests.conftest import FIXTURES

TOLERANCE = 1e-4
ALPHA = 3.5565588200778455  # MiniMax-Text-01's residual factor
TINY = dict(
    vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=256,
    layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention"], block_size=4,
)  # fmt: skip
MINIMAX = str(FIXTURES / "tiny_hybrids" / "tiny-minimax.json")


def _perturbed(module: torch.nn.Module) -> torch.nn.Module:
    """Weights drawn N(0, 0.1), norms moved off 1: a mixer or decoder that skipped one would differ."""
    torch.manual_seed(0)
    with torch.no_grad():
        for name, param in module.named_parameters():
            param.copy_(
                1 + 0.1 * torch.randn_like(param) if name.endswith("norm.weight") else 0.1 * torch.randn_like(param)
            )
    return module.eval()


@pytest.mark.parametrize("layer", [0, 2, 3])  # each layer its own decay
def test_the_mixer_equals_transformers_prefill_decode_and_state(layer):
    config = MiniMaxConfig(**TINY)
    theirs = _perturbed(MiniMaxLightningAttention(config, layer))
    ours = LightningAttention(64, n_heads=4, head_dim=16, layer=layer, n_layers=4)
    weights = {name: t for name, t in theirs.state_dict().items() if name.endswith("weight")}
    ours.load_state_dict(weights, strict=True)  # qkv_proj, output_gate, out_proj, norm: the same names and shapes
    assert torch.allclose(ours.decay, torch.exp(-theirs.slope_rate.flatten()))
    x = torch.randn(2, 13, 64, generator=torch.Generator().manual_seed(1))  # (b, s, d): 3 blocks of 4 and one token
    with torch.no_grad():
        whole, _ = theirs(x, None, None)  # blockwise prefill, no cache
        cache = MiniMaxCache()
        steps = [theirs(x[:, :9], None, None, cache=cache)[0]]
        steps += [theirs(x[:, t : t + 1], None, None, cache=cache)[0] for t in range(9, 13)]  # the recurrence
        state = ours.new_state(batch=2)
        prefill = ours(x, ours.new_state(batch=2))
        decoded = torch.cat([ours(x[:, :9], state)] + [ours(x[:, t : t + 1], state) for t in range(9, 13)], dim=1)
    assert (prefill - whole).abs().max() < TOLERANCE
    assert (decoded - torch.cat(steps, dim=1)).abs().max() < TOLERANCE
    assert state.recurrent.shape == cache.linear_cache[layer].shape == (2, 4, 16, 16)
    assert torch.allclose(state.recurrent, cache.linear_cache[layer], rtol=1e-4, atol=1e-4)


def test_a_mixer_without_its_output_norm_differs():
    """The test above can fail: a mixer that left out the norm's weights gives other outputs."""
    config = MiniMaxConfig(**TINY)
    theirs = _perturbed(MiniMaxLightningAttention(config, 1))
    ours = LightningAttention(64, n_heads=4, head_dim=16, layer=1, n_layers=4)
    ours.load_state_dict({n: t for n, t in theirs.state_dict().items() if n.endswith("weight")})
    ours.norm.init_weights()  # unit weights instead of transformers'
    x = torch.randn(1, 6, 64)
    with torch.no_grad():
        assert (ours(x, ours.new_state(1)) - theirs(x, None, None)[0]).abs().max() > TOLERANCE


def _decoder_pair(**overrides) -> tuple[MiniMaxForCausalLM, torch.nn.Module]:
    config = MiniMaxConfig(**(TINY | overrides))
    torch.manual_seed(0)
    theirs = MiniMaxForCausalLM(config).eval()
    with torch.no_grad():
        for name, tensor in theirs.state_dict().items():
            if name.endswith("norm.weight"):
                tensor.add_(torch.randn_like(tensor) * 0.1)
    spec = import_hf_config(config.to_dict(), name="tiny-minimax").model
    ours = build_model(spec, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, theirs.state_dict(), strict=True)  # decay buffers dropped, nothing else
    return theirs, ours


@pytest.mark.parametrize(
    "overrides",
    [{}, dict(full_attn_alpha_factor=ALPHA, linear_attn_alpha_factor=ALPHA, mlp_alpha_factor=ALPHA,
              linear_attn_beta_factor=0.8, mlp_beta_factor=1.3, sliding_window=5)],
    ids=["unit-factors", "minimax-text-01-factors-and-a-window"],
)  # fmt: skip
def test_the_decoder_equals_transformers(overrides):
    theirs, ours = _decoder_pair(**overrides)
    ids = torch.randint(0, 256, (2, 11), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = theirs(input_ids=ids).logits  # (b, s, v)
        prefill = ours(ids)
        caches = ours.new_cache(batch=2, max_seq=11)
        steps = [ours(ids[:, :6], caches)] + [ours(ids[:, p : p + 1], caches, start_pos=p) for p in range(6, 11)]
    assert ours.omitted == []
    assert (prefill - expected).abs().max() < TOLERANCE
    assert (torch.cat(steps, dim=1) - expected).abs().max() < TOLERANCE


def test_the_importer_reads_both_spellings_of_the_residual_factors():
    theirs = import_hf_config({"model_type": "minimax", **TINY, "mlp_beta_factor": 0.5}).model
    remote = dict(TINY, model_type="minimax_text_01", layernorm_mlp_alpha=ALPHA, layernorm_full_attention_beta=2.0)
    remote["attn_type_list"] = [0, 1, 0, 0]
    del remote["layer_types"]
    old = import_hf_config(remote).model
    assert theirs.block.normed_residual.mlp == (1.0, 0.5) and theirs.block.normed_residual.attention == (1.0, 1.0)
    assert old.block.normed_residual.mlp == (ALPHA, 1.0) and old.block.normed_residual.attention == (1.0, 2.0)
    assert theirs.attention.masked_window is None and old.layers.pattern == theirs.layers.pattern
    with pytest.raises(BadInputError, match="mlp_alpha_factor must be a positive number"):
        import_hf_config({"model_type": "minimax", **TINY, "mlp_alpha_factor": "big"})


def test_the_new_fields_are_left_out_of_a_spec_that_does_not_set_them():
    dumped = ModelSpec(name="llama-ish", d_model=64, n_layers=2, n_heads=4, vocab_size=256, d_ff=128).model_dump()
    assert "normed_residual" not in dumped and "masked_window" not in dumped
    spec = import_hf_config({"model_type": "minimax", **TINY, "sliding_window": 5}).model
    assert (
        spec.attention.masked_window == 5 and spec.layers.sliding_window is None
    )  # the mask's window, not the cache's
    assert ModelSpec.model_validate(spec.model_dump()) == spec


@pytest.mark.parametrize(("state_dtype", "expected"), [("activation", torch.bfloat16), ("fp32", torch.float32)])
def test_the_state_is_kept_in_the_format_the_spec_says(state_dtype, expected):
    spec = RecurrentSpec(kind="lightning", n_heads=4, head_dim=16, state_dim=16, state_dtype=state_dtype)
    mixer = build_mixer(spec, 64, layer=1, n_layers=4, dtype=torch.bfloat16)
    state = mixer.new_state(batch=3)
    assert state.recurrent.dtype == expected and state.conv.numel() == 0
    assert state.nbytes_per_sequence == 4 * 16 * 16 * expected.itemsize
    mixer(torch.randn(3, 5, 64, dtype=torch.bfloat16), state)
    assert state.recurrent.dtype == expected and state.recurrent.abs().sum() > 0


def test_an_activation_dtype_state_is_still_refused_for_the_other_mixers():
    spec = RecurrentSpec(kind="mamba2", n_heads=8, head_dim=16, state_dim=8, conv_dim=160, conv_kernel=4,
                         state_dtype="activation")  # fmt: skip
    with pytest.raises(BadInputError, match="activation-dtype recurrent state is not built"):
        build_mixer(spec, 64)


def test_verify_measures_the_lightning_state_core_predicts(cli):
    report = cli.json(
        "verify", MINIMAX, "--device", "cpu", "--seq", "16", "--layers", "4", "--reps", "1"
    )  # 3 lightning
    kv = cli.json("kv", MINIMAX, "--seq", "16", "--state-convention", "transformers")
    per_layer = kv["kv"]["state_bytes_per_layer"]
    assert per_layer == 4 * 16 * 16 * 2  # heads x head_dim x head_dim in bf16 (the activation dtype), no conv
    assert report["measured_state_bytes"] == report["predicted_state_bytes"] == 3 * per_layer
    assert report["measured_cache_bytes"] == report["predicted_cache_bytes"] == kv["total_bytes"]
    assert report["measured_weight_bytes"] == report["predicted_weight_bytes"]
    assert all(report["checks"].values()) and report["passed"]
