"""MoE: the same weights give the same outputs as transformers' DeepSeek-V2/V3, Qwen2/Qwen3-MoE and
Mixtral blocks (loaded strictly by name), routing picks what the rules say, and a tensor-parallel
split sums back to the whole layer."""

from __future__ import annotations

import pytest
import torch

from mha_cli.core.schemas import MoESpec
from mha_cli.nn.moe import MoE, TopKRouter

transformers = pytest.importorskip("transformers")

D_MODEL = 16


def _randomise(module: torch.nn.Module, seed: int = 0) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in list(module.parameters()) + list(module.buffers()):
            tensor.copy_(torch.randn(tensor.shape, generator=generator) * 0.3)


def _tokens(n: int = 24) -> torch.Tensor:
    return torch.randn(2, n // 2, D_MODEL, generator=torch.Generator().manual_seed(7))  # (b, s, d)


def _deepseek_v3():
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3MoE

    config = DeepseekV3Config(hidden_size=D_MODEL, num_attention_heads=4, num_key_value_heads=4, moe_intermediate_size=8, n_routed_experts=8, num_experts_per_tok=2,
                              n_shared_experts=2, n_group=4, topk_group=2, routed_scaling_factor=2.5, norm_topk_prob=True)  # fmt: skip
    spec = MoESpec(n_experts=8, n_active_experts=2, n_shared_experts=2, d_ff_expert=8, scoring_func="sigmoid",
                   topk_method="noaux_tc", n_group=4, topk_group=2, routed_scaling_factor=2.5, norm_topk_prob=True)  # fmt: skip
    return DeepseekV3MoE(config), spec


def _deepseek_v2():
    from transformers import DeepseekV2Config
    from transformers.models.deepseek_v2.modeling_deepseek_v2 import DeepseekV2Moe

    config = DeepseekV2Config(hidden_size=D_MODEL, num_attention_heads=4, num_key_value_heads=4, moe_intermediate_size=8, n_routed_experts=8, num_experts_per_tok=3,
                              n_shared_experts=1, n_group=4, topk_group=2, topk_method="group_limited_greedy",
                              routed_scaling_factor=1.5)  # fmt: skip
    spec = MoESpec(n_experts=8, n_active_experts=3, n_shared_experts=1, d_ff_expert=8, topk_method="group_limited_greedy",
                   n_group=4, topk_group=2, routed_scaling_factor=1.5, norm_topk_prob=False)  # fmt: skip
    return DeepseekV2Moe(config), spec


def _qwen3_moe():
    from transformers import Qwen3MoeConfig
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

    config = Qwen3MoeConfig(hidden_size=D_MODEL, num_attention_heads=4, num_key_value_heads=4, moe_intermediate_size=8, num_experts=8, num_experts_per_tok=2,
                            norm_topk_prob=True)  # fmt: skip
    return Qwen3MoeSparseMoeBlock(config), MoESpec(n_experts=8, n_active_experts=2, d_ff_expert=8, norm_topk_prob=True)


def _qwen2_moe():
    from transformers import Qwen2MoeConfig
    from transformers.models.qwen2_moe.modeling_qwen2_moe import Qwen2MoeSparseMoeBlock

    config = Qwen2MoeConfig(hidden_size=D_MODEL, num_attention_heads=4, num_key_value_heads=4, moe_intermediate_size=8, num_experts=8, num_experts_per_tok=4,
                            shared_expert_intermediate_size=12, norm_topk_prob=False)  # fmt: skip
    spec = MoESpec(n_experts=8, n_active_experts=4, n_shared_experts=1, d_ff_expert=8, d_ff_shared=12,
                   shared_expert_gate=True, norm_topk_prob=False)  # fmt: skip
    return Qwen2MoeSparseMoeBlock(config), spec


def _mixtral():
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    config = MixtralConfig(
        hidden_size=D_MODEL,
        num_attention_heads=4,
        num_key_value_heads=4,
        intermediate_size=8,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    return MixtralSparseMoeBlock(config), MoESpec(n_experts=4, n_active_experts=2, d_ff_expert=8)


FAMILIES = {"deepseek-v3": _deepseek_v3, "deepseek-v2": _deepseek_v2, "qwen3-moe": _qwen3_moe,
            "qwen2-moe": _qwen2_moe, "mixtral": _mixtral}  # fmt: skip


@pytest.mark.parametrize("family", FAMILIES)
def test_moe_block_equals_transformers(family: str) -> None:
    theirs, spec = FAMILIES[family]()
    _randomise(theirs)
    ours = MoE(D_MODEL, spec)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    x = _tokens()
    with torch.no_grad():
        expected = theirs(x)
        got = ours(x)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_deepseek_v3_names_and_the_bias_buffer() -> None:
    ours = MoE(D_MODEL, _deepseek_v3()[1])
    shapes = {name: tuple(t.shape) for name, t in ours.state_dict().items()}
    assert shapes == {
        "gate.weight": (8, 16),
        "gate.e_score_correction_bias": (8,),
        "experts.gate_up_proj": (8, 2 * 8, 16),
        "experts.down_proj": (8, 16, 8),
        "shared_experts.gate_proj.weight": (2 * 8, 16),
        "shared_experts.up_proj.weight": (2 * 8, 16),
        "shared_experts.down_proj.weight": (16, 2 * 8),
    }
    # The correction bias is a buffer, as in transformers: not a parameter, so not in parameter counts.
    assert "gate.e_score_correction_bias" not in dict(ours.named_parameters())


def test_group_limited_routing_by_hand() -> None:
    """8 experts in 4 groups of 2, sigmoid scores, topk_group 1, k 2: both experts from the best group."""
    spec = MoESpec(n_experts=8, n_active_experts=2, d_ff_expert=4, scoring_func="sigmoid", topk_method="noaux_tc",
                   n_group=4, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.0)  # fmt: skip
    router = TopKRouter(2, spec)
    with torch.no_grad():
        router.weight.zero_()
        router.weight[:, 0] = torch.tensor([3.0, -3.0, 2.0, 2.0, 0.0, 0.0, -1.0, 2.5])
        router.e_score_correction_bias.zero_()
    weights, indices = router(torch.tensor([[1.0, 0.0]]))
    # Group sums of the two best sigmoids: g0 s(3)+s(-3) = 1.0, g1 2 s(2) = 1.76, g2 1.0, g3 s(-1)+s(2.5) = 1.19.
    assert sorted(indices[0].tolist()) == [2, 3]  # expert 0 (the best single score) is in a losing group
    torch.testing.assert_close(weights, torch.tensor([[1.0, 1.0]]))  # equal scores, normalised, times 2
    with torch.no_grad():
        router.e_score_correction_bias[0] = 1.0  # group 0 now sums s(3) + 1 + s(-3) = 2.0 and wins
    _, indices = router(torch.tensor([[1.0, 0.0]]))
    assert sorted(indices[0].tolist()) == [0, 1]


def test_tensor_parallel_shards_sum_to_the_whole_layer() -> None:
    spec = _deepseek_v3()[1]
    whole = MoE(D_MODEL, spec)
    _randomise(whole)
    full = whole.state_dict()
    tp, f, shared = 2, spec.d_ff_expert, 2 * spec.d_ff_expert
    x = _tokens()
    partials = []
    for rank in range(tp):
        part = MoE(D_MODEL, spec, tp_size=tp)
        block, shared_block = (
            slice(rank * f // tp, (rank + 1) * f // tp),
            slice(rank * shared // tp, (rank + 1) * shared // tp),
        )
        gate_up = full["experts.gate_up_proj"]  # (E, 2f, d): gate rows then up rows
        sliced = {
            "gate.weight": full["gate.weight"],
            "gate.e_score_correction_bias": full["gate.e_score_correction_bias"],
            "experts.gate_up_proj": torch.cat([gate_up[:, :f][:, block], gate_up[:, f:][:, block]], dim=1),
            "experts.down_proj": full["experts.down_proj"][:, :, block],
            "shared_experts.gate_proj.weight": full["shared_experts.gate_proj.weight"][shared_block],
            "shared_experts.up_proj.weight": full["shared_experts.up_proj.weight"][shared_block],
            "shared_experts.down_proj.weight": full["shared_experts.down_proj.weight"][:, shared_block],
        }
        part.load_state_dict(sliced, strict=True)
        with torch.no_grad():
            partials.append(part(x))
    with torch.no_grad():
        torch.testing.assert_close(sum(partials), whole(x), atol=1e-5, rtol=1e-5)


def test_routing_fields_are_checked() -> None:
    with pytest.raises(ValueError, match="divisible by n_group"):
        MoESpec(n_experts=8, n_active_experts=2, d_ff_expert=4, n_group=3)
    with pytest.raises(ValueError, match="cannot hold"):
        MoESpec(n_experts=8, n_active_experts=4, d_ff_expert=4, n_group=4, topk_group=1, topk_method="noaux_tc")


def test_parameter_count_matches_the_built_layer() -> None:
    """core.params counts what MoE builds (Qwen2-MoE's shared-expert gate included); buffers are not parameters."""
    from mha_cli.core.params import count_params
    from mha_cli.core.schemas import ModelSpec

    for make in (_deepseek_v3, _qwen2_moe, _qwen3_moe):
        spec = make()[1]
        model = ModelSpec(d_model=D_MODEL, n_layers=1, n_heads=4, vocab_size=10, d_ff=32, moe=spec)
        built = sum(p.numel() for p in MoE(D_MODEL, spec).parameters())
        assert count_params(model).mlp_moe_per_layer == built
    qwen2 = ModelSpec(d_model=D_MODEL, n_layers=1, n_heads=4, vocab_size=10, d_ff=32, moe=_qwen2_moe()[1])
    assert (
        count_params(qwen2).mlp_moe_per_layer == 8 * 3 * 16 * 8 + 3 * 16 * 12 + 8 * 16 + 16
    )  # experts, shared, router, gate


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v2-lite", "gpt-oss-20b", "gpt-oss-120b", "qwen3-30b-a3b"])
def test_moe_presets_build_their_counted_parameters(name: str) -> None:
    """The whole MoE model on the meta device (nothing allocated): parameters equal core.params' total."""
    from mha_cli.core.params import count_params
    from mha_cli.core.presets import get_preset
    from mha_cli.nn import build_model

    spec = get_preset(name)
    model = build_model(spec, device="meta")
    assert sum(p.numel() for p in model.parameters()) == count_params(spec).total


def test_a_routing_tape_replays_the_recorded_experts_and_counts_what_would_differ() -> None:
    """The replaying pass uses the recorded choices even where its own inputs would route elsewhere."""
    from mha_cli.nn.moe import replayed_routing

    torch.manual_seed(0)
    layer = MoE(16, MoESpec(n_experts=16, n_active_experts=2, d_ff_expert=8))
    x = torch.randn(2, 5, 16)  # (b, s, d)
    other = torch.randn(2, 5, 16)  # inputs that route differently
    own_choice = layer.gate(other.reshape(-1, 16))[1]  # (n, k)
    with replayed_routing(layer) as (tape,):
        layer(x)  # records
        recorded = tape.recorded.clone()  # (b, s, k)
        tape.replaying = True
        first = layer(other[:, :3])  # positions 0-2 replayed
        second = layer(other[:, 3:])  # positions 3-4 replayed
    assert layer.routing_tape is None  # removed after the block
    replayed = torch.cat([first, second], dim=1)
    weights, indices = layer.gate(other.reshape(-1, 16), recorded.reshape(-1, 2))
    expected = layer.experts(other.reshape(-1, 16), weights, indices).reshape(2, 5, 16)
    torch.testing.assert_close(replayed, expected)
    would_differ = (own_choice.sort(-1).values != recorded.reshape(-1, 2).sort(-1).values).any(-1).sum().item()
    assert tape.differing == would_differ > 0
