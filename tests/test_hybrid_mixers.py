"""The torch mixers of mha_cli.nn.mixers against transformers' own modules, and their measured state against the price.

Gated DeltaNet is compared with ``Qwen3NextGatedDeltaNet`` and Mamba-2 with ``Mamba2Mixer`` (and Granite-4.0-H's
``GraniteMoeHybridMambaLayer``), all on their torch fallback paths, with the same random weights loaded by state-dict
name: prefill outputs, then one-token decode steps on transformers' ``DynamicCache``. Then the state bytes: what our
``MixerState`` allocates, what transformers' cache allocates, and what ``state_bytes_per_layer`` prices for the
model ``import_hf_config`` reads from the same config, in bf16 and fp32 activations, as exact integers.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch.nn.functional as F  # noqa: E402
from transformers import DynamicCache, FalconH1Config, GraniteMoeHybridConfig, Mamba2Config, Qwen3NextConfig  # noqa: E402
from transformers.models.falcon_h1.modeling_falcon_h1 import FalconH1Mixer  # noqa: E402
from transformers.models.granitemoehybrid.modeling_granitemoehybrid import GraniteMoeHybridMambaLayer  # noqa: E402
from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer  # noqa: E402
from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet  # noqa: E402

from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.kv import state_bytes_per_layer  # noqa: E402
from mha_cli.nn.mixers import GatedDeltaNet, Mamba2, MixerState, ShortConv, build_mixer  # noqa: E402
from mha_cli.nn.model import _init_weights  # noqa: E402

ATOL = 1e-5
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
D_MODEL = 32


def qwen3_next_config() -> Qwen3NextConfig:
    """2 key heads of 8, 4 value heads of 6 (two value heads per key head), kernel 4; layers 0-2 linear."""
    return Qwen3NextConfig(
        hidden_size=D_MODEL, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        intermediate_size=64, moe_intermediate_size=16, shared_expert_intermediate_size=16, num_experts=4,
        num_experts_per_tok=2, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
        linear_value_head_dim=6, linear_conv_kernel_dim=4, vocab_size=128,
    )  # fmt: skip


MAMBA = {"n_heads": 4, "head_dim": 16, "d_state": 8, "n_groups": 2, "conv_kernel": 4}
"""d_inner 64 = 2 * d_model, 4 heads in 2 groups (two heads share B and C), d_state 8, kernel 4."""


def mamba2_config() -> Mamba2Config:
    return Mamba2Config(
        hidden_size=D_MODEL, expand=2, num_heads=MAMBA["n_heads"], head_dim=MAMBA["head_dim"],
        state_size=MAMBA["d_state"], n_groups=MAMBA["n_groups"], conv_kernel=MAMBA["conv_kernel"],
        num_hidden_layers=1, chunk_size=4, vocab_size=128,
    )  # fmt: skip


def granite_config() -> GraniteMoeHybridConfig:
    """Granite-4.0-H with the same Mamba-2 geometry (every layer Mamba-2)."""
    return GraniteMoeHybridConfig(
        hidden_size=D_MODEL, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        shared_intermediate_size=64, num_local_experts=0, mamba_n_heads=MAMBA["n_heads"],
        mamba_d_head=MAMBA["head_dim"], mamba_d_state=MAMBA["d_state"], mamba_n_groups=MAMBA["n_groups"],
        mamba_d_conv=MAMBA["conv_kernel"], mamba_expand=2, mamba_chunk_size=4, vocab_size=128,
    )  # fmt: skip


def falcon_h1_config() -> FalconH1Config:
    """Falcon-H1 (Mamba-2 beside attention in every layer) with the same Mamba-2 geometry."""
    return FalconH1Config(
        hidden_size=D_MODEL, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        intermediate_size=64, mamba_d_ssm=64, mamba_n_heads=MAMBA["n_heads"], mamba_d_head=MAMBA["head_dim"],
        mamba_d_state=MAMBA["d_state"], mamba_n_groups=MAMBA["n_groups"], mamba_d_conv=MAMBA["conv_kernel"],
        mamba_expand=2, vocab_size=128,
    )  # fmt: skip


def ours_gdn(config: Qwen3NextConfig) -> GatedDeltaNet:
    return GatedDeltaNet(
        config.hidden_size, n_key_heads=config.linear_num_key_heads, n_value_heads=config.linear_num_value_heads,
        key_head_dim=config.linear_key_head_dim, value_head_dim=config.linear_value_head_dim,
        conv_kernel=config.linear_conv_kernel_dim, eps=config.rms_norm_eps,
    )  # fmt: skip


def ours_mamba2(eps: float) -> Mamba2:
    return Mamba2(D_MODEL, **MAMBA, eps=eps)


def pair(kind: str, dtype=torch.float32):
    """(transformers' module, ours) with the same random weights, both in ``dtype`` and eval mode."""
    torch.manual_seed(0)
    if kind == "gated_deltanet":
        config = qwen3_next_config()
        theirs, ours = Qwen3NextGatedDeltaNet(config, layer_idx=0), ours_gdn(config)
    elif kind == "mamba2":
        config = mamba2_config()
        theirs, ours = Mamba2Mixer(config, layer_idx=0), ours_mamba2(config.layer_norm_epsilon)
    else:
        config = granite_config()
        theirs, ours = GraniteMoeHybridMambaLayer(config, layer_idx=0), ours_mamba2(config.rms_norm_eps)
    with torch.no_grad():
        for name, param in theirs.named_parameters():
            if name == "A_log":
                param.uniform_(-1.0, 1.0)
            elif name.endswith("norm.weight"):
                param.copy_(1 + 0.2 * torch.randn_like(param))
            else:
                param.normal_(0.0, 0.3)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return theirs.to(dtype).eval(), ours.to(dtype).eval(), config


def their_state_bytes(cache: DynamicCache, layer_idx: int = 0) -> int:
    """Bytes transformers' cache layer allocates (its conv and recurrent state tensors)."""
    layer = cache.layers[layer_idx]
    tensors = [layer.conv_states[0], layer.recurrent_states[0]]
    return sum(t.numel() * t.element_size() for t in tensors)


def their_state(cache: DynamicCache, layer_idx: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    layer = cache.layers[layer_idx]
    return layer.conv_states[0], layer.recurrent_states[0]


def run_both(kind: str, prefill: int, steps: int, *, batch: int = 2, zero_state_after_prefill: bool = False):
    """Max abs differences of (prefill output, each decode output, final conv state, final recurrent state)."""
    theirs, ours, config = pair(kind)
    torch.manual_seed(1)
    x = torch.randn(batch, prefill + steps, D_MODEL)
    cache = DynamicCache(config=config)
    state = ours.new_state(batch)
    diffs = []
    with torch.no_grad():
        diffs.append((theirs(x[:, :prefill], cache=cache) - ours(x[:, :prefill], state)).abs().max().item())
        if zero_state_after_prefill:
            state = ours.new_state(batch)
        for t in range(prefill, prefill + steps):
            token = x[:, t : t + 1]
            diffs.append((theirs(token, cache=cache) - ours(token, state)).abs().max().item())
    conv, recurrent = their_state(cache)
    diffs.append((conv - state.conv).abs().max().item())
    diffs.append((recurrent - state.recurrent).abs().max().item())
    return diffs


# --- the short conv on its own ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bias", [False, True])
def test_short_conv_equals_a_causal_conv1d_and_its_step_equals_its_prefill(bias):
    torch.manual_seed(0)
    conv = ShortConv(6, 4, bias=bias)
    if bias:
        torch.nn.init.normal_(conv.bias)
    x = torch.randn(2, 6, 9)  # [batch, channels, seq]
    reference = F.conv1d(x, conv.weight, conv.bias, padding=3, groups=6)[..., :9]
    with torch.no_grad():
        state = conv.new_state(2, torch.float32)
        assert (conv(x[..., :5], state) - reference[..., :5]).abs().max() < 1e-6
        for t in range(5, 9):
            assert (conv.step(x[..., t], state) - reference[..., t]).abs().max() < 1e-6
        assert torch.equal(state, x[..., -4:])  # the last kernel inputs, as transformers keeps them


# --- numerics against transformers ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["gated_deltanet", "mamba2", "granite_mamba"])
@pytest.mark.parametrize("prefill", [2, 7])  # shorter than the kernel (padded conv state), and several SSD chunks
def test_mixer_equals_transformers_on_prefill_and_decode(kind, prefill):
    diffs = run_both(kind, prefill, steps=3)
    assert max(diffs) < ATOL, diffs


@pytest.mark.parametrize("kind", ["gated_deltanet", "mamba2"])
def test_mixer_agrees_with_transformers_in_bf16(kind):
    """Loosely: transformers' Mamba-2 keeps dt and its decode output in bf16 where ours stays in fp32."""
    theirs, ours, config = pair(kind, torch.bfloat16)
    torch.manual_seed(1)
    x = torch.randn(2, 10, D_MODEL, dtype=torch.bfloat16)
    cache, state = DynamicCache(config=config), ours.new_state(2)
    with torch.no_grad():
        for chunk in (x[:, :7], x[:, 7:8], x[:, 8:9], x[:, 9:]):
            expected, got = theirs(chunk, cache=cache), ours(chunk, state)
            assert ((expected - got).abs().max() / expected.abs().max()).item() < 2e-2


def test_chunked_prefill_equals_one_prefill():
    """Two prefill calls from a kept state equal one: the state carries everything the next tokens need."""
    _, ours, _ = pair("gated_deltanet")
    x = torch.randn(1, 9, D_MODEL)
    with torch.no_grad():
        whole = ours(x, ours.new_state(1))
        state = ours.new_state(1)
        parts = torch.cat([ours(x[:, :4], state), ours(x[:, 4:], state)], dim=1)
    assert (whole - parts).abs().max() < ATOL


def test_control_decoding_from_a_zero_state_is_detected():
    """A mixer that forgot its prefill state must fail the comparison the real ones pass."""
    diffs = run_both("gated_deltanet", 7, steps=3, zero_state_after_prefill=True)
    assert max(diffs[1:4]) > 1e-3, diffs
    diffs = run_both("mamba2", 7, steps=3, zero_state_after_prefill=True)
    assert max(diffs[1:4]) > 1e-3, diffs


# --- measured state bytes against the price -------------------------------------------------------------------


def measured_bytes(theirs, ours, config, dtype: torch.dtype, batch: int) -> tuple[int, int]:
    """(our MixerState's bytes per sequence, transformers' cache bytes per sequence) after a prefill in ``dtype``."""
    theirs, ours = theirs.to(dtype), ours.to(dtype)
    x = torch.randn(batch, 5, D_MODEL, dtype=dtype)
    cache = DynamicCache(config=config)
    state = ours.new_state(batch)
    with torch.no_grad():
        theirs(x, cache=cache)
        ours(x, state)
        theirs(x[:, :1], cache=cache)
        ours(x[:, :1], state)
    assert state.conv.dtype == dtype and state.recurrent.dtype == torch.float32
    return state.nbytes_per_sequence, their_state_bytes(cache) // batch


PRICED = {
    "gated_deltanet": (qwen3_next_config, {"bf16": 4 * 8 * 6 * 4 + 56 * 4 * 2, "fp32": 4 * 8 * 6 * 4 + 56 * 4 * 4}),
    "mamba2": (granite_config, {"bf16": 4 * 16 * 8 * 4 + 96 * 4 * 2, "fp32": 4 * 16 * 8 * 4 + 96 * 4 * 4}),
}
"""Each kind's priced config and the bytes worked by hand: recurrent heads x rows x cols x 4 (fp32) plus conv
channels x kernel x the activation's bytes (Qwen3-Next: 2*2*8 + 4*6 = 56 channels; Mamba-2: 64 + 2*2*8 = 96)."""


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("kind", ["gated_deltanet", "mamba2", "granite_mamba"])
@pytest.mark.parametrize("batch", [1, 3])
def test_measured_state_bytes_equal_the_price(kind, kv_dtype, batch):
    theirs, ours, config = pair(kind)
    ours_bytes, their_bytes = measured_bytes(theirs, ours, config, DTYPES[kv_dtype], batch)
    priced_config, by_hand = PRICED["gated_deltanet" if kind == "gated_deltanet" else "mamba2"]
    model = import_hf_config(priced_config().to_dict()).model
    predicted = state_bytes_per_layer(model, kv_dtype, convention="transformers")
    assert ours_bytes == their_bytes == predicted == by_hand[kv_dtype]


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("config", [qwen3_next_config, granite_config, falcon_h1_config])
def test_mixer_built_from_the_imported_spec_holds_the_priced_state(config, kv_dtype):
    """The spec ``mha kv`` prices, built in torch: its weights take transformers' state dict, its state the price."""
    model = import_hf_config(config().to_dict()).model
    mixer = build_mixer(model.recurrent, model.d_model, dtype=DTYPES[kv_dtype])
    theirs = {qwen3_next_config: lambda: Qwen3NextGatedDeltaNet(config(), 0), granite_config: lambda: Mamba2Mixer(
        mamba2_config(), 0), falcon_h1_config: lambda: FalconH1Mixer(config(), 0)}[config]()  # fmt: skip
    mixer.load_state_dict(theirs.state_dict(), strict=True)
    assert mixer.new_state(1).nbytes == state_bytes_per_layer(model, kv_dtype, convention="transformers")


@pytest.mark.parametrize("config", [qwen3_next_config, granite_config])
def test_mixers_initialise_through_build_models_meta_path(config):
    """build_model builds on meta, then ``to_empty`` and ``_init_weights``: no parameter may keep garbage."""
    model = import_hf_config(config().to_dict()).model
    mixer = build_mixer(model.recurrent, model.d_model, device="meta").to_empty(device="cpu")
    for param in mixer.parameters():
        param.data.fill_(float("nan"))
    mixer.apply(_init_weights)
    assert all(torch.isfinite(p).all() for p in mixer.parameters())
    assert torch.equal(mixer.norm.weight, torch.ones_like(mixer.norm.weight))
    with torch.no_grad():
        assert torch.isfinite(mixer(torch.randn(1, 3, model.d_model), mixer.new_state(1))).all()


def test_falcon_h1_prices_the_same_mamba2_state_as_granite():
    falcon = import_hf_config(falcon_h1_config().to_dict()).model
    granite = import_hf_config(granite_config().to_dict()).model
    state = {"kind", "n_heads", "head_dim", "state_dim", "conv_dim", "conv_kernel", "state_dtype"}
    assert falcon.recurrent.model_dump(include=state) == granite.recurrent.model_dump(include=state)


# --- controls that must lose ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp32"])
def test_control_a_kernel_minus_one_conv_state_is_unequal(kv_dtype):
    """vLLM keeps kernel - 1 conv inputs; a mixer built so holds conv_dim values fewer than the transformers price
    (the price the torch mixers are measured against)."""
    config = qwen3_next_config()
    model = import_hf_config(config.to_dict()).model
    short = GatedDeltaNet(
        D_MODEL, n_key_heads=2, n_value_heads=4, key_head_dim=8, value_head_dim=6, conv_kernel=3,
        dtype=DTYPES[kv_dtype],
    )  # fmt: skip
    measured = short.new_state(1).nbytes
    predicted = state_bytes_per_layer(model, kv_dtype, convention="transformers")
    assert measured != predicted
    assert predicted - measured == model.recurrent.conv_dim * DTYPES[kv_dtype].itemsize


@pytest.mark.parametrize("kv_dtype", ["bf16", "fp32"])
def test_control_a_price_with_the_key_head_count_is_unequal(kv_dtype):
    """Pricing Gated DeltaNet's state by key heads (2) instead of value heads (4) misses half the recurrent state."""
    theirs, ours, config = pair("gated_deltanet")
    measured, _ = measured_bytes(theirs, ours, config, DTYPES[kv_dtype], batch=1)
    model = import_hf_config(config.to_dict()).model
    wrong = model.model_copy(update={"recurrent": model.recurrent.model_copy(update={"n_heads": 2})})
    assert state_bytes_per_layer(wrong, kv_dtype, convention="transformers") != measured
    assert state_bytes_per_layer(model, kv_dtype, convention="transformers") == measured


def test_control_a_bf16_recurrent_state_is_unequal():
    """A state kept in the activation dtype instead of fp32 halves the recurrent part: the price must not match it."""
    model = import_hf_config(granite_config().to_dict()).model
    state = MixerState.zeros(
        1, conv_channels=96, conv_kernel=4, heads=4, rows=16, cols=8, dtype=torch.bfloat16, state_dtype=torch.bfloat16
    )
    assert state.nbytes != state_bytes_per_layer(model, "bf16", convention="transformers")
