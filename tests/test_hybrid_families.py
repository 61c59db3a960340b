"""Hybrid families' own parts against transformers' modules, on the same random weights (nothing downloaded).

Qwen3-Next's gated attention (q_proj emits each head's query then its gate; sigmoid(gate) scales the output before
o_proj) against ``Qwen3NextAttention``, and the weights the gate adds counted exactly; Qwen3.5's Gated DeltaNet
with its four split projections against ``Qwen3_5GatedDeltaNet``. The whole decoders are compared by the decoder
sweep (tests/test_family_sweep.py, ``EQUAL``).
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers import Qwen3NextConfig  # noqa: E402
from transformers.models.qwen3_next.modeling_qwen3_next import (  # noqa: E402
    Qwen3NextAttention,
    Qwen3NextRotaryEmbedding,
)

from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import attention_params, count_params  # noqa: E402
from mha_cli.nn.attention import Attention  # noqa: E402
from mha_cli.nn.mixers import MixerState, build_mixer  # noqa: E402
from mha_cli.nn.model import build_layer_attention  # noqa: E402
from mha_cli.nn.rope import RotaryEmbedding  # noqa: E402
from tests.spec_paths import copy_with  # noqa: E402

ATOL = 1e-5


def _qwen3_next_config(**fields) -> Qwen3NextConfig:
    """4 query heads of 16 over 2 KV heads, every 4th layer attends; Gated DeltaNet 2 key heads of 8, 4 value of 8."""
    base = dict(
        hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        intermediate_size=96, moe_intermediate_size=16, shared_expert_intermediate_size=16, num_experts=4,
        num_experts_per_tok=2, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
        linear_value_head_dim=8, linear_conv_kernel_dim=4, vocab_size=128,
    )  # fmt: skip
    config = Qwen3NextConfig(**(base | fields))
    config._attn_implementation = "eager"
    return config


def _randomised(module: torch.nn.Module) -> torch.nn.Module:
    torch.manual_seed(0)
    with torch.no_grad():
        for param in module.parameters():
            param.copy_(torch.randn_like(param) * 0.2)
    return module.eval()


@pytest.mark.parametrize("bias", [False, True])
def test_qwen3_next_gated_attention_equals_transformers(bias):
    config = _qwen3_next_config(attention_bias=bias)
    reference = _randomised(Qwen3NextAttention(config, layer_idx=3))
    spec = import_hf_config(config.to_dict()).model
    assert spec.attention.output_gate and spec.layer_kind(3) == "global"
    ours = build_layer_attention(spec, 3, rope=RotaryEmbedding(spec.rotary, spec.attention.head_dim))
    ours.load_state_dict(reference.state_dict(), strict=True)  # q_proj (2 n_h h_d, d): queries and gates, by name
    x = torch.randn(2, 7, config.hidden_size, generator=torch.Generator().manual_seed(1))  # (b, s, d)
    positions = torch.arange(7)[None].expand(2, -1)  # (b, s)
    causal = torch.full((7, 7), float("-inf")).triu(1)[None, None]  # (1, 1, s, s)
    with torch.no_grad():
        expected, _ = reference(x, Qwen3NextRotaryEmbedding(config)(x, positions), causal)  # (b, s, d)
        got = ours(x)  # (b, s, d)
    assert (got - expected).abs().max().item() < ATOL


def test_without_its_gate_the_attention_differs():
    """The control: the same weights with the gate left out (sigmoid(gate) not applied) do not match."""
    config = _qwen3_next_config()
    reference = _randomised(Qwen3NextAttention(config, layer_idx=3))
    spec = import_hf_config(config.to_dict()).model
    ours = build_layer_attention(spec, 3, rope=RotaryEmbedding(spec.rotary, spec.attention.head_dim))
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(1, 5, config.hidden_size)
    with torch.no_grad():
        gated = ours(x)
        ours._gated = lambda out, gate: out  # the output gate skipped
        ungated = ours(x)
    assert (gated - ungated).abs().max().item() > 1e-3


def test_the_output_gate_is_counted_as_transformers_builds_it():
    config = _qwen3_next_config()
    spec = import_hf_config(config.to_dict()).model
    gate = spec.d_model * spec.attention.n_heads * spec.attention.head_dim  # a second q_proj's worth of rows
    assert attention_params(spec) - attention_params(copy_with(spec, {"attention.output_gate": False})) == gate
    layer = Qwen3NextAttention(config, layer_idx=3)
    assert attention_params(spec) == sum(p.numel() for p in layer.parameters())
    with torch.device("meta"):
        whole = transformers.AutoModelForCausalLM.from_config(config)
    assert count_params(spec).total == sum(p.numel() for p in whole.parameters())


def test_an_ungated_attention_keeps_its_q_proj():
    plain = Attention(64, 4, 2, 16)
    gated = Attention(64, 4, 2, 16, output_gate=True)
    assert plain.q_proj.weight.shape == (64, 64) and gated.q_proj.weight.shape == (128, 64)


def test_qwen3_5_split_gated_deltanet_equals_transformers():
    from transformers import Qwen3_5TextConfig
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5GatedDeltaNet

    config = Qwen3_5TextConfig(**_qwen3_next_config().to_dict() | {"model_type": "qwen3_5_text"})
    reference = _randomised(Qwen3_5GatedDeltaNet(config, layer_idx=0))
    spec = import_hf_config(config.to_dict()).model
    assert spec.recurrent.split_projections
    ours = build_mixer(spec.recurrent, spec.d_model, eps=spec.block.norm_eps)
    ours.load_state_dict(reference.state_dict(), strict=True)  # in_proj_qkv, in_proj_z, in_proj_b, in_proj_a
    x = torch.randn(2, 6, config.hidden_size, generator=torch.Generator().manual_seed(2))  # (b, s, d)
    with torch.no_grad():
        expected = reference(x)  # (b, s, d)
        got = ours(x, ours.new_state(2))  # (b, s, d)
    assert isinstance(ours.new_state(1), MixerState)
    assert (got - expected).abs().max().item() < ATOL


def _bamba_config(**fields):
    from transformers import BambaConfig

    base = dict(
        hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
        vocab_size=128, mamba_n_heads=8, mamba_d_state=8, mamba_d_conv=4, attn_layer_indices=[1, 3],
    )  # fmt: skip
    return BambaConfig(**(base | fields))


def test_bamba_attends_on_its_listed_layers_and_weighs_what_transformers_builds():
    config = _bamba_config()
    spec = import_hf_config(config.to_dict()).model
    assert [spec.layer_kind(i) for i in range(4)] == ["linear", "global", "linear", "global"]
    with torch.device("meta"):
        whole = transformers.AutoModelForCausalLM.from_config(config)
    assert count_params(spec).total == sum(p.numel() for p in whole.parameters())


def test_bamba_layer_indices_out_of_range_are_refused():
    from mha_cli.core.errors import BadInputError

    with pytest.raises(BadInputError, match=r"attn_layer_indices must list layer numbers 0\.\.3"):
        import_hf_config(_bamba_config().to_dict() | {"attn_layer_indices": [4]})


FALCON_H1_MULTIPLIERS = dict(
    embedding_multiplier=5.66, attention_in_multiplier=1.3, attention_out_multiplier=0.94, key_multiplier=0.39,
    lm_head_multiplier=0.039, mlp_multipliers=[0.88, 0.59], ssm_in_multiplier=1.25, ssm_out_multiplier=0.24,
    ssm_multipliers=[0.35, 0.25, 0.18, 0.5, 0.35],
)  # fmt: skip
"""Falcon-H1-0.5B's multipliers, rounded: none of them 1."""


def _falcon_h1(**fields):
    from transformers import FalconH1Config

    base = dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
        vocab_size=128, mamba_n_heads=8, mamba_d_ssm=64, mamba_d_head=8, mamba_d_state=8, mamba_n_groups=2,
        mamba_chunk_size=4,
    )  # fmt: skip
    config = FalconH1Config(**(base | fields))
    torch.manual_seed(0)
    reference = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, tensor in reference.state_dict().items():
            if name.endswith("norm.weight") or name.endswith("bias") or name.endswith("dt_bias"):
                tensor.add_(torch.randn_like(tensor) * 0.1)
    return config, reference


@pytest.mark.parametrize(
    "fields",
    [FALCON_H1_MULTIPLIERS, FALCON_H1_MULTIPLIERS | {"mamba_rms_norm": True},
     FALCON_H1_MULTIPLIERS | {"mamba_rms_norm": True, "mamba_norm_before_gate": False}],
    ids=["no_mixer_norm", "norm_then_gate", "gate_then_norm"],
)  # fmt: skip
def test_falcon_h1_with_its_multipliers_gives_transformers_logits(fields):
    from mha_cli.nn import build_model
    from mha_cli.nn.hf_state_dict import load_transformers_state_dict

    config, reference = _falcon_h1(**fields)
    spec = import_hf_config(config.to_dict()).model
    assert spec.block.multipliers is not None and spec.embeddings.logit_scale == pytest.approx(0.039)
    ours = build_model(spec, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, reference.state_dict())  # strict: every name and shape
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = reference(input_ids=ids).logits  # (b, s, v)
        prefill = ours(ids)  # (b, s, v)
        caches = ours.new_cache(batch=2, max_seq=8)
        steps = [ours(ids[:, :5], caches)] + [ours(ids[:, p : p + 1], caches, start_pos=p) for p in range(5, 8)]
    assert (prefill - expected).abs().max().item() < 1e-4
    assert (torch.cat(steps, dim=1) - expected).abs().max().item() < 1e-4


def test_falcon_h1_without_its_multipliers_differs():
    """The control: the same weights read as if every multiplier were 1 give other logits."""
    from mha_cli.nn import build_model
    from mha_cli.nn.hf_state_dict import load_transformers_state_dict

    config, reference = _falcon_h1(**FALCON_H1_MULTIPLIERS)
    spec = import_hf_config(config.to_dict()).model
    spec = copy_with(spec, {"block.multipliers": None, "embeddings.logit_scale": 1.0})
    ours = build_model(spec, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, reference.state_dict())
    ids = torch.randint(0, 128, (1, 6))
    with torch.no_grad():
        assert (ours(ids) - reference(input_ids=ids).logits).abs().max().item() > 1e-3


def _logits_both_ways(config, *, seq: int = 8):
    """(transformers' logits, our prefill's, our cached decode's) for one random batch, on the same weights."""
    from mha_cli.nn import build_model
    from mha_cli.nn.hf_state_dict import load_transformers_state_dict

    torch.manual_seed(0)
    reference = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, tensor in reference.state_dict().items():
            if name.endswith("norm.weight") or name.endswith("bias"):
                tensor.add_(torch.randn_like(tensor) * 0.1)
    ours = build_model(import_hf_config(config.to_dict()).model, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, reference.state_dict())  # strict
    ids = torch.randint(0, config.vocab_size, (2, seq), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        caches = ours.new_cache(batch=2, max_seq=seq)
        steps = [ours(ids[:, :5], caches)] + [ours(ids[:, p : p + 1], caches, start_pos=p) for p in range(5, seq)]
        return reference(input_ids=ids).logits, ours(ids), torch.cat(steps, dim=1)


@pytest.mark.parametrize("positions", [None, "rope"])
def test_granite_4_h_with_its_scalars_gives_transformers_logits(positions):
    from transformers import GraniteMoeHybridConfig

    config = GraniteMoeHybridConfig(
        hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, intermediate_size=32,
        shared_intermediate_size=48, num_local_experts=4, num_experts_per_tok=2, vocab_size=128, mamba_n_heads=8,
        mamba_d_state=8, mamba_chunk_size=4, layer_types=["mamba", "attention", "mamba", "attention"],
        embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125, logits_scaling=8.0,
        position_embedding_type=positions,
    )  # fmt: skip
    expected, prefill, decoded = _logits_both_ways(config)
    assert (prefill - expected).abs().max().item() < 1e-4
    assert (decoded - expected).abs().max().item() < 1e-4


def test_nemotron_h_is_priced_by_its_mixer_blocks():
    """Its MLP and MoE blocks hold no cache: the layers priced are its Mamba-2 and attention blocks, in order, the
    same whether the config lists them (layers_block_type) or spells the older hybrid_override_pattern."""
    from transformers import NemotronHConfig

    from mha_cli.core.kv import kv_footprint

    listed = NemotronHConfig(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
        mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=8, n_groups=2, n_routed_experts=4,
        moe_intermediate_size=32, layers_block_type=["linear_attention", "mlp", "linear_attention", "full_attention",
                                                     "mlp", "linear_attention", "moe"],
    ).to_dict()  # fmt: skip
    imported = import_hf_config(listed)
    spec = imported.model
    assert spec.n_layers == 4 and [spec.layer_kind(i) for i in range(4)] == ["linear", "linear", "global", "linear"]
    # trial 375 #4: "d_model x layers 64 x 4" beside a config of 7 blocks is said
    assert (
        "layers: the config's 7 blocks read as 4 layers, each a Mamba-2 or attention block (3 Mamba-2, 1 attention)"
        " with the feed-forward block after it where one follows (1 MoE and 2 MLP); the weights and the cache are the"
        " blocks'"
    ) in imported.assumptions
    assert spec.recurrent.n_heads == 8 and spec.recurrent.conv_dim == 8 * 16 + 2 * 2 * 8
    spelled = {k: v for k, v in listed.items() if k != "layers_block_type"} | {"hybrid_override_pattern": "M-M*-ME"}
    assert import_hf_config(spelled).model == spec
    kv = kv_footprint(spec, seq_len=10, batch=1, kv_dtype="fp32", state_convention="transformers")
    per_state = 4 * (8 * 16 * 8 + (8 * 16 + 2 * 2 * 8) * 4)  # fp32 state + conv columns, one Mamba-2 block
    assert kv.total_bytes == 2 * 2 * 16 * 10 * 4 + 3 * per_state  # one attention block's K and V, three states


def _nemotron_h_state_dict(reference: torch.nn.Module, pattern: str) -> dict[str, torch.Tensor]:
    """transformers' Nemotron-H weights under our names: block b's mixer is layer i's ``self_attn`` (its norm the
    input norm), the feed-forward block after it layer i's ``mlp`` (its norm the post-attention norm)."""
    layer, places = -1, {}
    for block, letter in enumerate(pattern):
        layer += letter in "M*"
        places[block] = (layer, "self_attn" if letter in "M*" else "mlp")
    renamed = {"model.embeddings.weight": "model.embed_tokens.weight", "model.norm_f.weight": "model.norm.weight"}
    ours = {}
    for name, tensor in reference.state_dict().items():
        block = re.match(r"model\.layers\.(\d+)\.(norm|mixer)\.(.*)", name)
        if block is None:
            ours[renamed.get(name, name)] = tensor
            continue
        i, part = places[int(block.group(1))]
        norm = "input_layernorm" if part == "self_attn" else "post_attention_layernorm"
        key = f"{norm}.weight" if block.group(2) == "norm" else f"{part}.{block.group(3)}"
        ours[f"model.layers.{i}.{key}"] = tensor
    return ours


@pytest.mark.parametrize("pattern", ["MEM*EM-M", "M-M*E*"])
def test_nemotron_h_gives_transformers_logits_with_each_feed_forward_block_after_its_mixer(pattern):
    """Its blocks as our layers: a Mamba-2 block another mixer follows is a layer without an MLP, its experts plain
    (up, down) with squared ReLU behind a sigmoid router with a correction bias, its attention without RoPE. On the
    same weights (renamed), prefill and cached decode equal transformers' logits."""
    from transformers import NemotronHConfig

    from mha_cli.nn import build_model

    config = NemotronHConfig(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128, mamba_num_heads=8,
        mamba_head_dim=16, ssm_state_size=8, n_groups=2, n_routed_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=32, moe_shared_expert_intermediate_size=48, intermediate_size=40, chunk_size=4,
        hybrid_override_pattern=pattern, use_mamba_kernels=False,
    )  # fmt: skip
    config._attn_implementation = "eager"
    reference = _randomised(transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32))
    with torch.no_grad():
        for name, buffer in reference.named_buffers():
            if name.endswith("e_score_correction_bias"):
                buffer.copy_(torch.randn_like(buffer))
    spec = import_hf_config(config.to_dict()).model
    ours = build_model(spec, dtype=torch.float32).eval()
    ours.load_state_dict(_nemotron_h_state_dict(reference, pattern), strict=True)
    seq = 8
    ids = torch.randint(0, config.vocab_size, (2, seq), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = reference(input_ids=ids).logits
        caches = ours.new_cache(batch=2, max_seq=seq)
        steps = [ours(ids[:, :5], caches)] + [ours(ids[:, p : p + 1], caches, start_pos=p) for p in range(5, seq)]
        assert (ours(ids) - expected).abs().max().item() < 1e-4
        assert (torch.cat(steps, dim=1) - expected).abs().max().item() < 1e-4


def test_a_nemotron_h_pattern_of_other_letters_is_refused():
    from mha_cli.core.errors import BadInputError

    with pytest.raises(BadInputError, match="hybrid_override_pattern must be a string of M"):
        import_hf_config({"model_type": "nemotron_h", "hidden_size": 64, "num_attention_heads": 4,
                          "hybrid_override_pattern": "M-X*"})  # fmt: skip


def test_nemotron_h_block_names_before_transformers_5_read_as_transformers_remaps_them():
    """Trial 348 #6: ``layers_block_type`` with "mamba" and "attention" (configs before transformers 5) was refused,
    where transformers' ``remap_legacy_layer_types`` builds the same model as the pattern: the same figures now, and
    transformers' own config lists the same blocks; a name neither knows is still refused (the control)."""
    from transformers import NemotronHConfig

    from mha_cli.core.errors import BadInputError
    from mha_cli.core.kv import kv_footprint

    base = {"model_type": "nemotron_h", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "mamba_num_heads": 8, "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 16,
            "intermediate_size": 128, "vocab_size": 128}  # fmt: skip
    legacy = ["mamba", "mlp", "attention", "mlp"]
    by_pattern = import_hf_config({**base, "hybrid_override_pattern": "M-*-", "num_hidden_layers": 4}).model
    by_names = import_hf_config({**base, "layers_block_type": legacy}).model
    assert NemotronHConfig(
        **{k: v for k, v in base.items() if k != "model_type"}, layers_block_type=legacy
    ).layer_types == ["linear_attention", "mlp", "full_attention", "mlp"]
    assert count_params(by_names).total == count_params(by_pattern).total
    assert kv_footprint(by_names, seq_len=64).total_bytes == kv_footprint(by_pattern, seq_len=64).total_bytes
    with pytest.raises(BadInputError, match="layers_block_type must list"):
        import_hf_config({**base, "layers_block_type": ["mamba", "mlp", "conv", "mlp"]})
    # review 349 #5: both fields, agreeing, read alike; disagreeing, refused (transformers takes the list, an older
    # vLLM the pattern)
    both = import_hf_config({**base, "layers_block_type": legacy, "hybrid_override_pattern": "M-*-"}).model
    assert count_params(both).total == count_params(by_pattern).total
    with pytest.raises(BadInputError, match="list different blocks"):
        import_hf_config({**base, "layers_block_type": legacy, "hybrid_override_pattern": "M-M-M-"})


def _lfm2(**fields):
    from transformers import Lfm2Config

    base = dict(
        hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, intermediate_size=192,
        vocab_size=128, block_multiple_of=32, full_attn_idxs=[1],
    )  # fmt: skip
    return Lfm2Config(**(base | fields))


@pytest.mark.parametrize("bias", [False, True])
def test_lfm2_gives_transformers_logits_and_weighs_what_it_builds(bias):
    config = _lfm2(conv_bias=bias)
    spec = import_hf_config(config.to_dict() | {"layer_types": None}).model  # its layers from full_attn_idxs
    assert [spec.layer_kind(i) for i in range(4)] == ["linear", "global", "linear", "linear"]
    with torch.device("meta"):
        whole = transformers.AutoModelForCausalLM.from_config(config)
    assert count_params(spec).total == sum(p.numel() for p in whole.parameters())  # MLP 2/3 wide, rounded up
    expected, prefill, decoded = _logits_both_ways(config)
    assert (prefill - expected).abs().max().item() < 1e-4
    assert (decoded - expected).abs().max().item() < 1e-4


def test_lfm2_keeps_its_conv_inputs_as_state():
    """Transformers' cache keeps conv_L_cache inputs of d_model channels a conv layer (vLLM one fewer); no
    recurrent state."""
    from mha_cli.core.kv import state_bytes_per_layer

    spec = import_hf_config(_lfm2(conv_L_cache=3).to_dict()).model
    assert state_bytes_per_layer(spec, "bf16", convention="transformers") == 64 * 3 * 2
    assert state_bytes_per_layer(spec, "bf16", convention="engine") == 64 * 2 * 2
