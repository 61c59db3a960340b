"""The Mamba-1 mixer (``mha_cli.nn.mixers.Mamba1``) and the Jamba decoder against transformers.

The mixer is compared with transformers' ``MambaMixer`` (no norms), ``JambaMambaMixer`` (RMSNorms on dt, B and
C) and ``FalconMambaMixer`` (the same norms without weights), on their torch fallback paths, with the same random weights loaded by state-dict name: prefill outputs, then
one-token decode steps on transformers' ``DynamicCache``, then the conv and recurrent states both keep. The state
ours allocates is what ``state_bytes_per_layer`` prices under the transformers convention, as exact integers. The
whole Jamba decoder (Mamba-1, attention without RoPE, MoE every other layer) loads transformers' state dict
strictly and gives its logits, prefill and cached decode.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import DynamicCache, FalconMambaConfig, JambaConfig, JambaForCausalLM, MambaConfig  # noqa: E402
from transformers.models.falcon_mamba.modeling_falcon_mamba import FalconMambaMixer  # noqa: E402
from transformers.models.jamba.modeling_jamba import JambaMambaMixer  # noqa: E402
from transformers.models.mamba.modeling_mamba import MambaMixer  # noqa: E402

from mha_cli.core.errors import BadInputError  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.kv import state_bytes_per_layer  # noqa: E402
from mha_cli.nn import build_model  # noqa: E402
from mha_cli.nn.hf_state_dict import load_transformers_state_dict  # noqa: E402
from mha_cli.nn.mixers import Mamba1, build_mixer  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

ATOL = 1e-5
D_MODEL, D_INNER, D_STATE, DT_RANK, KERNEL = 32, 64, 8, 4, 4
JAMBA = FIXTURES / "tiny_hybrids" / "tiny-jamba.json"


def mamba_config(config_class=MambaConfig) -> MambaConfig:
    return config_class(
        hidden_size=D_MODEL, intermediate_size=D_INNER, state_size=D_STATE, time_step_rank=DT_RANK,
        conv_kernel=KERNEL, num_hidden_layers=1, vocab_size=128,
    )  # fmt: skip


def jamba_config(**overrides) -> JambaConfig:
    """Layer 0 is a Mamba layer (attention at offset 4 of 8)."""
    fields = dict(
        hidden_size=D_MODEL, mamba_expand=D_INNER // D_MODEL, mamba_d_state=D_STATE, mamba_dt_rank=DT_RANK,
        mamba_d_conv=KERNEL, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=64, num_experts=1, vocab_size=128,
    )  # fmt: skip
    return JambaConfig(**(fields | overrides))


def pair(kind: str):
    """(transformers' mixer, ours, config) with the same random weights, fp32, eval mode."""
    torch.manual_seed(0)
    weightless = kind == "falcon_mamba"
    if kind == "mamba":
        config = mamba_config()
        theirs, norms = MambaMixer(config, layer_idx=0), False
    elif weightless:
        config = mamba_config(FalconMambaConfig)
        # transformers 5.24 initialises its weights before it creates the norms: every weight is drawn below
        theirs, norms = FalconMambaMixer(config, layer_idx=0, initialize_mixer_weights=False), True
    else:
        config = jamba_config(mamba_proj_bias=kind == "jamba_biased")
        theirs, norms = JambaMambaMixer(config, layer_idx=0), True
    biased = kind == "jamba_biased"
    ours = Mamba1(
        D_MODEL, d_inner=D_INNER, d_state=D_STATE, dt_rank=DT_RANK, conv_kernel=KERNEL, in_proj_bias=biased,
        out_proj_bias=biased, bcdt_norms=norms, norm_weights=not weightless,
        eps=getattr(config, "mixer_rms_eps", None) or getattr(config, "rms_norm_eps", 1e-6),
    )  # fmt: skip
    std = (
        0.3 if norms and not weightless else 0.2
    )  # without Jamba's norms the outputs grow fast with the weights (0.3: of order 100)
    with torch.no_grad():
        for name, param in theirs.named_parameters():
            if name == "A_log":
                param.uniform_(-1.0, 1.5)
            elif name.endswith("layernorm.weight"):
                param.copy_(1 + 0.2 * torch.randn_like(param))
            else:
                param.normal_(0.0, std)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return theirs.eval(), ours.eval(), config


def run_both(kind: str, prefill: int, steps: int, batch: int = 2, forget_prefill: bool = False) -> list[float]:
    """Max abs differences of (prefill output, each decode output, final conv state, final recurrent state)."""
    theirs, ours, config = pair(kind)
    torch.manual_seed(1)
    x = torch.randn(batch, prefill + steps, D_MODEL)
    cache, state = DynamicCache(config=config), ours.new_state(batch)
    diffs = []
    with torch.no_grad():
        diffs.append((theirs(x[:, :prefill], cache=cache) - ours(x[:, :prefill], state)).abs().max().item())
        if forget_prefill:
            state = ours.new_state(batch)
        for t in range(prefill, prefill + steps):
            token = x[:, t : t + 1]
            diffs.append((theirs(token, cache=cache) - ours(token, state)).abs().max().item())
    layer = cache.layers[0]
    diffs.append((layer.conv_states[0] - state.conv).abs().max().item())
    diffs.append((layer.recurrent_states[0] - state.recurrent[:, :, 0]).abs().max().item())
    return diffs


@pytest.mark.parametrize("kind", ["mamba", "jamba", "jamba_biased", "falcon_mamba"])
@pytest.mark.parametrize("prefill", [2, 7])  # shorter than the kernel (padded conv state), and longer
def test_mixer_equals_transformers_on_prefill_and_decode(kind, prefill):
    diffs = run_both(kind, prefill, steps=3)
    assert max(diffs) < ATOL, diffs


def test_control_decoding_from_a_zero_state_is_detected():
    """A mixer that forgot its prefill state must fail the comparison the real one passes."""
    diffs = run_both("jamba", 7, steps=3, forget_prefill=True)
    assert max(diffs[1:4]) > 1e-3, diffs


def test_control_skipping_jambas_norms_is_detected():
    theirs, ours, _ = pair("jamba")
    ours.bcdt_norms = False
    x = torch.randn(1, 5, D_MODEL)
    with torch.no_grad():
        assert (theirs(x) - ours(x, ours.new_state(1))).abs().max() > 1e-3


def test_chunked_prefill_equals_one_prefill():
    _, ours, _ = pair("jamba")
    x = torch.randn(1, 9, D_MODEL)
    with torch.no_grad():
        whole = ours(x, ours.new_state(1))
        state = ours.new_state(1)
        parts = torch.cat([ours(x[:, :4], state), ours(x[:, 4:], state)], dim=1)
    assert (whole - parts).abs().max() < ATOL


@pytest.mark.parametrize(("dtype", "kv_dtype"), [(torch.bfloat16, "bf16"), (torch.float32, "fp32")])
def test_the_state_is_what_kv_prices_for_jamba(dtype, kv_dtype):
    """conv d_inner x kernel in the activation dtype + d_inner x d_state in fp32, byte for byte."""
    model = import_hf_config(json.loads(JAMBA.read_text())).model
    mixer = build_mixer(model.recurrent, model.d_model, eps=model.block.norm_eps)
    state = mixer.new_state(3, dtype=dtype)
    assert tuple(state.recurrent.shape) == (3, 128, 1, 16) and state.recurrent.dtype == torch.float32
    priced = state_bytes_per_layer(model, kv_dtype, convention="transformers")
    assert state.nbytes_per_sequence == priced == 128 * 16 * 4 + 128 * 4 * dtype.itemsize


def test_build_mixer_refuses_a_mamba_block_with_heads():
    model = import_hf_config(json.loads(JAMBA.read_text())).model
    with pytest.raises(BadInputError, match="one state vector per channel"):
        build_mixer(model.recurrent.model_copy(update={"head_dim": 2}), model.d_model)


def test_jamba_decoder_equals_transformers():
    """The tiny fixture: 3 Mamba layers then attention, MoE on layers 1 and 3; transformers' weights, strictly."""
    config = JambaConfig.from_dict(json.loads(JAMBA.read_text()))
    torch.manual_seed(0)
    theirs = JambaForCausalLM(config).eval()
    with torch.no_grad():
        for name, param in theirs.named_parameters():
            if name.endswith("layernorm.weight"):
                param.add_(0.2 * torch.randn_like(param))
    ours = build_model(import_hf_config(config.to_dict()).model).eval()
    load_transformers_state_dict(ours, theirs.state_dict())
    ids = torch.randint(0, config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = theirs(input_ids=ids).logits  # (b, s, v)
        caches = ours.new_cache(batch=2, max_seq=9)
        steps = [ours(ids[:, :5], caches)] + [ours(ids[:, p : p + 1], caches, start_pos=p) for p in range(5, 9)]
        assert (ours(ids) - expected).abs().max() < 1e-4
    assert (torch.cat(steps, dim=1) - expected).abs().max() < 1e-4


def test_mixer_agrees_with_transformers_in_bf16():
    """Loosely: transformers keeps dt and the scan's output in bf16 where ours computes them in fp32."""
    theirs, ours, config = pair("jamba")
    theirs, ours = theirs.to(torch.bfloat16), ours.to(torch.bfloat16)
    torch.manual_seed(1)
    x = torch.randn(2, 10, D_MODEL, dtype=torch.bfloat16)
    cache, state = DynamicCache(config=config), ours.new_state(2)
    assert state.conv.dtype == torch.bfloat16 and state.recurrent.dtype == torch.float32
    with torch.no_grad():
        for chunk in (x[:, :7], x[:, 7:8], x[:, 8:9], x[:, 9:]):
            expected, got = theirs(chunk, cache=cache), ours(chunk, state)
            assert got.dtype == torch.bfloat16
            assert ((expected - got).abs().max() / expected.abs().max()).item() < 2e-2
