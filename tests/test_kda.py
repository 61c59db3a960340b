"""KDA (Kimi-Linear's Kimi delta attention) against transformers' ``KimiLinearDeltaAttention``, and ``mha verify``
on a tiny Kimi-Linear.

The mixer (``mha_cli.nn.mixers.KimiDeltaAttention``) loads transformers' layer's random weights by state-dict name
(strictly) and must give its outputs: a prefill (transformers' chunked path), then one-token decode steps on
transformers' ``DynamicCache`` (its recurrent path), ending with the same conv and recurrent states. Then the
verify case: a 4-layer Kimi-Linear written by ``KimiLinearConfig`` (3 KDA layers, one NoPE MLA layer) is built and
its measured state equals the state ``mha kv`` prices, byte for byte.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import DynamicCache, KimiLinearConfig  # noqa: E402
from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention  # noqa: E402

from mha_cli.core.errors import BadInputError  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.kv import state_bytes_per_layer  # noqa: E402
from mha_cli.core.schemas import RecurrentSpec  # noqa: E402
from mha_cli.nn.mixers import KimiDeltaAttention, build_mixer  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

ATOL = 1e-5
D_MODEL = 32
KIMI = str(FIXTURES / "tiny_hybrids" / "tiny-kimi-linear.json")


def kimi_config() -> KimiLinearConfig:
    """4 KDA heads of 8, kernel 4; layers 0-2 KDA, layer 3 MLA."""
    return KimiLinearConfig(
        hidden_size=D_MODEL, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=16,
        qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, intermediate_size=64, moe_intermediate_size=16,
        num_experts=4, num_experts_per_token=2, vocab_size=128, pad_token_id=0,
        linear_attn_config={"kda_layers": [1, 2, 3], "full_attn_layers": [4], "head_dim": 8, "num_heads": 4,
                            "short_conv_kernel_size": 4},
    )  # fmt: skip


def pair(dtype=torch.float32) -> tuple[KimiLinearDeltaAttention, KimiDeltaAttention, KimiLinearConfig]:
    """(transformers' KDA layer, ours) with the same random weights (the gated norm's off 1), eval mode."""
    torch.manual_seed(0)
    config = kimi_config()
    theirs = KimiLinearDeltaAttention(config, layer_idx=0)
    ours = KimiDeltaAttention(
        D_MODEL, n_heads=config.linear_num_heads, head_dim=config.linear_head_dim,
        conv_kernel=config.linear_conv_kernel_dim, eps=config.rms_norm_eps,
    )  # fmt: skip
    with torch.no_grad():
        for name, param in theirs.named_parameters():
            if name.endswith("A_log"):
                param.uniform_(-1.0, 1.0)
            elif name.endswith("norm.weight"):
                param.copy_(1 + 0.2 * torch.randn_like(param))
            else:
                param.normal_(0.0, 0.3)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return theirs.to(dtype).eval(), ours.to(dtype).eval(), config


def test_a_prefill_gives_transformers_output():
    theirs, ours, _ = pair()
    x = torch.randn(2, 12, D_MODEL, generator=torch.Generator().manual_seed(1))  # (b, s, d)
    with torch.no_grad():
        expected = theirs(x)  # no cache: transformers' chunked KDA
        got = ours(x, ours.new_state(2))
    assert (got - expected).abs().max().item() < ATOL


def test_decode_steps_carry_transformers_state():
    """A prefill of 5, then 4 tokens one at a time on both caches: every output and the final states agree."""
    theirs, ours, config = pair()
    x = torch.randn(2, 9, D_MODEL, generator=torch.Generator().manual_seed(2))  # (b, s, d)
    cache, state = DynamicCache(config=config), ours.new_state(2)
    with torch.no_grad():
        diffs = [(theirs(x[:, :5], cache=cache) - ours(x[:, :5], state)).abs().max().item()]
        for t in range(5, 9):
            token = x[:, t : t + 1]  # (b, 1, d)
            diffs.append((theirs(token, cache=cache) - ours(token, state)).abs().max().item())
    layer = cache.layers[0]
    diffs.append((layer.conv_states[0] - state.conv).abs().max().item())
    diffs.append((layer.recurrent_states[0] - state.recurrent).abs().max().item())
    assert max(diffs) < ATOL, diffs


def test_the_gate_decays_each_key_channel_by_its_own():
    """The fine-grained gate matters: one channel's decay rate averaged over its head gives another output."""
    theirs, ours, _ = pair()
    x = torch.randn(1, 6, D_MODEL, generator=torch.Generator().manual_seed(3))  # (b, s, d)
    with torch.no_grad():
        expected = theirs(x)
        ours.forget_gate.dt_bias.copy_(
            ours.forget_gate.dt_bias.view(4, 8).mean(-1, keepdim=True).expand(4, 8).flatten()
        )
        per_head = ours(x, ours.new_state(1))
    assert (per_head - expected).abs().max().item() > 1e-3


def test_the_state_is_what_core_prices():
    """Our state and transformers' cache for one KDA layer both hold what ``state_bytes_per_layer`` prices."""
    theirs, ours, config = pair()
    model = import_hf_config(config.to_dict()).model
    cache = DynamicCache(config=config)
    with torch.no_grad():
        theirs(torch.randn(1, 3, D_MODEL), cache=cache)
    layer = cache.layers[0]
    their_bytes = sum(t.numel() * t.element_size() for t in (layer.conv_states[0], layer.recurrent_states[0]))
    priced = state_bytes_per_layer(model, "fp32", convention="transformers")
    assert ours.new_state(1).nbytes_per_sequence == their_bytes == priced > 0


def test_the_config_class_fields_and_cycle_are_read_without_linear_attn_config():
    """KimiLinearConfig's to_dict() spells the KDA widths linear_num_heads / linear_head_dim and its default layer
    cycle (every 4th layer from the 5th MLA) in layer_types; a config.json without either gets the same cycle."""
    config = KimiLinearConfig(num_hidden_layers=9, linear_num_heads=6, linear_head_dim=16, linear_conv_kernel_dim=3)
    model = import_hf_config(config.to_dict()).model
    assert (model.recurrent.n_heads, model.recurrent.head_dim, model.recurrent.conv_kernel) == (6, 16, 3)
    expected = ["global" if t == "full_attention" else "linear" for t in config.layer_types]
    assert [model.layer_kind(i) for i in range(9)] == expected
    bare = {k: v for k, v in config.to_dict().items() if k != "layer_types"}
    assert [import_hf_config(bare).model.layer_kind(i) for i in range(9)] == expected


def test_a_kda_spec_the_mixer_cannot_build_is_refused():
    spec = RecurrentSpec(kind="kda", n_heads=4, head_dim=8, state_dim=8, conv_dim=64, conv_kernel=4)
    with pytest.raises(BadInputError, match="conv_dim 96"):
        build_mixer(spec, D_MODEL)
    assert isinstance(build_mixer(spec.model_copy(update={"conv_dim": 96}), D_MODEL), KimiDeltaAttention)


def test_verify_measures_the_state_core_predicts(cli):
    report = cli.json("verify", KIMI, "--device", "cpu", "--seq", "16", "--layers", "4")  # 3 KDA, 1 MLA
    kv = cli.json("kv", KIMI, "--seq", "16", "--state-convention", "transformers")  # what torch holds
    assert (
        report["measured_state_bytes"] == report["predicted_state_bytes"] == 3 * kv["kv"]["state_bytes_per_layer"] > 0
    )
    assert report["measured_cache_bytes"] == report["predicted_cache_bytes"] == kv["total_bytes"]
    assert report["measured_weight_bytes"] == report["predicted_weight_bytes"] and not report["weights_approximate"]
    assert all(report["checks"].values()) and report["passed"]


def test_the_output_norm_is_kimi_linears_in_bf16():
    """Normalised, weighted and gated in fp32, cast once at the end (a bf16 weight product would round twice)."""
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearRMSNormGated

    from mha_cli.nn.mixers import GatedRMSNorm

    theirs = KimiLinearRMSNormGated(8, eps=1e-5)
    ours = GatedRMSNorm(8, 1e-5, norm_before_gate=True, gate_activation="sigmoid", weight_in_fp32=True)
    with torch.no_grad():
        theirs.weight.copy_(1 + 0.2 * torch.randn(8, generator=torch.Generator().manual_seed(4)))
    ours.load_state_dict(theirs.state_dict())
    x, gate = torch.randn(2, 2, 64, 4, 8, generator=torch.Generator().manual_seed(5)).bfloat16()  # (b, s, h, d) each
    assert torch.equal(ours(x, gate), theirs(x, gate))
