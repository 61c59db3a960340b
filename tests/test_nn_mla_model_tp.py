"""Tensor-parallel MLA + MoE (a tiny DeepSeek-V3): every rank in its own thread holds only its shard,
sliced here by hand following the contract (MLA heads in blocks, latent replicated; every expert split
by width, router replicated), and the ranks' logits equal the unsharded model's, prefill and decode."""

from __future__ import annotations

import pytest
import torch

from mha_cli.core.schemas import ModelSpec
from mha_cli.nn import build_model
from tests.tp_threads import run_ranks

D, HEADS, NOPE, ROPE, V_DIM, D_FF, D_EXPERT, VOCAB = 64, 4, 16, 8, 12, 96, 32, 128
SPEC = ModelSpec(
    name="tiny-deepseek-v3", d_model=D, n_layers=2, n_heads=HEADS, vocab_size=VOCAB, d_ff=D_FF, norm_eps=1e-6,
    mla=dict(kv_lora_rank=32, qk_rope_head_dim=ROPE, qk_nope_head_dim=NOPE, v_head_dim=V_DIM, q_lora_rank=24),
    moe=dict(n_experts=8, n_active_experts=2, n_shared_experts=1, d_ff_expert=D_EXPERT, n_dense_layers=1,
             scoring_func="sigmoid", topk_method="noaux_tc", n_group=2, topk_group=1, routed_scaling_factor=2.5),
    rope=dict(theta=10000.0, scaling=dict(type="yarn", factor=40.0, mscale=1.0, mscale_all_dim=1.0,
                                          original_max_position_embeddings=16)),
)  # fmt: skip


def shard(full: dict[str, torch.Tensor], name: str, rank: int, tp: int) -> torch.Tensor:
    """The contract's slice of one full tensor for ``rank``, written out independently of build_model."""
    tensor = full[name]
    heads = slice(rank * HEADS // tp, (rank + 1) * HEADS // tp)
    if name in ("model.embed_tokens.weight", "lm_head.weight"):  # vocab 128 (a multiple of 64) in blocks
        return tensor[rank * VOCAB // tp : (rank + 1) * VOCAB // tp]
    if name.endswith("q_b_proj.weight"):
        return tensor.view(HEADS, NOPE + ROPE, -1)[heads].flatten(0, 1)
    if name.endswith("kv_b_proj.weight"):
        return tensor.view(HEADS, NOPE + V_DIM, -1)[heads].flatten(0, 1)
    if name.endswith("self_attn.o_proj.weight"):
        return tensor.view(D, HEADS, V_DIM)[:, heads].flatten(1)
    if name.endswith("experts.gate_up_proj"):  # (E, 2f, d): this rank's gate rows, then its up rows
        f = D_EXPERT // tp
        gate, up = tensor.chunk(2, dim=1)
        return torch.cat([gate[:, rank * f : (rank + 1) * f], up[:, rank * f : (rank + 1) * f]], dim=1)
    if name.endswith("experts.down_proj"):  # (E, d, f)
        f = D_EXPERT // tp
        return tensor[:, :, rank * f : (rank + 1) * f]
    width = (D_FF if ".layers.0." in name else D_EXPERT) // tp  # dense MLP, or the one shared expert
    if name.endswith("gate_proj.weight") or name.endswith("up_proj.weight"):
        return tensor[rank * width : (rank + 1) * width]
    if name.endswith("mlp.down_proj.weight") or name.endswith("shared_experts.down_proj.weight"):
        return tensor[:, rank * width : (rank + 1) * width]
    return tensor  # norms, latent projections, router and its bias: replicated


@pytest.mark.parametrize(("tp", "mode"), [(2, "absorbed"), (4, "absorbed"), (2, "naive")])
def test_sharded_logits_equal_the_full_model(tp: int, mode: str) -> None:
    torch.manual_seed(0)
    full_model = build_model(SPEC, mla_mode=mode).eval()  # type: ignore[arg-type]
    with torch.no_grad():
        for tensor in full_model.state_dict().values():
            tensor.add_(torch.randn_like(tensor) * 0.1)  # the routing bias and the norms too
    full = full_model.state_dict()
    ids = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = full_model(ids)  # (b, s, v)

    def build_rank(rank: int) -> torch.nn.Module:
        return build_model(SPEC, mla_mode=mode, tp_rank=rank, tp_size=tp)  # type: ignore[arg-type]

    results, reducer = run_ranks(build_rank, shard, full, ids, tp)
    for logits in results:
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    # 6 forwards x (embedding, 2 layers x (attention, MLP/MoE), the logits' gather): one reduce each
    assert reducer.calls == [6 * (1 + 2 * 2 + 1)] * tp
