"""build_model's tensor-parallel shards: the contract's shapes, the parameter total, and the same logits.

The logits test runs every rank in its own thread on the CPU, each holding only its shard (sliced
here by hand from a full model, following the contract's layout) and summing partial outputs through
an ``all_reduce`` that waits for all ranks; the result must equal the unsharded model's.
"""

from __future__ import annotations

import pytest
import torch

from mha_cli.core.schemas import ModelSpec
from mha_cli.nn import build_model
from tests.tp_threads import run_ranks

D, HEADS, KV, HEAD_DIM, D_FF, VOCAB = 64, 8, 2, 8, 96, 128


def spec(**extra: object) -> ModelSpec:
    fields = dict(d_model=D, n_layers=2, n_heads=HEADS, n_kv_heads=KV, head_dim=HEAD_DIM, d_ff=D_FF, vocab_size=VOCAB)
    return ModelSpec(**(fields | extra))


def shapes(tp: int, rank: int, **extra: object) -> dict[str, tuple[int, ...]]:
    model = build_model(spec(**extra), device="meta", tp_rank=rank, tp_size=tp)
    return {name: tuple(p.shape) for name, p in model.named_parameters() if name.startswith("model.layers.0.")}


@pytest.mark.parametrize(("tp", "q_heads", "kv_heads"), [(1, 8, 2), (2, 4, 1), (4, 2, 1), (8, 1, 1)])
def test_shard_shapes(tp: int, q_heads: int, kv_heads: int) -> None:
    """Query heads split in blocks; KV heads split while tp <= n_kv, one replicated head beyond; d_ff split."""
    layer = shapes(tp, rank=tp - 1, qkv_bias=True, o_bias=True, mlp_bias=True)
    prefix = "model.layers.0."
    assert layer[prefix + "self_attn.q_proj.weight"] == (q_heads * HEAD_DIM, D)
    assert layer[prefix + "self_attn.q_proj.bias"] == (q_heads * HEAD_DIM,)
    assert layer[prefix + "self_attn.k_proj.weight"] == (kv_heads * HEAD_DIM, D)
    assert layer[prefix + "self_attn.v_proj.bias"] == (kv_heads * HEAD_DIM,)
    assert layer[prefix + "self_attn.o_proj.weight"] == (D, q_heads * HEAD_DIM)
    assert layer[prefix + "self_attn.o_proj.bias"] == (D,)  # replicated, added once after the reduce
    assert layer[prefix + "mlp.gate_proj.weight"] == (D_FF // tp, D)
    assert layer[prefix + "mlp.up_proj.bias"] == (D_FF // tp,)
    assert layer[prefix + "mlp.down_proj.weight"] == (D, D_FF // tp)
    assert layer[prefix + "input_layernorm.weight"] == (D,)
    whole = {name: tuple(p.shape) for name, p in build_model(spec(vocab_size=100), device="meta", tp_size=tp,
             tp_rank=tp - 1).named_parameters()}  # fmt: skip
    rows = 100 if tp == 1 else 128 // tp  # split: vocab 100 padded to 128, a multiple of 64
    assert whole["model.embed_tokens.weight"] == whole["lm_head.weight"] == (rows, D)


def test_rank_local_head_counts() -> None:
    model = build_model(spec(), device="meta", tp_rank=1, tp_size=4)
    attention = model.model.layers[0].self_attn
    assert (attention.n_heads, attention.n_kv_heads) == (2, 1)
    assert model.new_cache(batch=1, max_seq=16)[0].k.shape == (1, 1, 16, HEAD_DIM)


@pytest.mark.parametrize("tp", [2, 4])
def test_shards_sum_to_the_full_model(tp: int) -> None:
    """Sum over ranks = full model + (tp - 1) x the replicated parts + the copies of replicated KV heads."""
    full = sum(p.numel() for p in build_model(spec(), device="meta").parameters())
    shards = sum(
        p.numel()
        for rank in range(tp)
        for p in build_model(spec(), device="meta", tp_rank=rank, tp_size=tp).parameters()
    )
    replicated = D + 2 * (2 * D)  # final norm; 2 layers x 2 norms (embedding and head: 128 rows split, unpadded)
    kv_params = 2 * 2 * KV * HEAD_DIM * D  # 2 layers x (k, v)
    kv_copies = kv_params * (tp // KV - 1) if tp > KV else 0  # each KV head held by tp / n_kv ranks
    assert shards == full + (tp - 1) * replicated + kv_copies


def test_bad_splits_are_refused() -> None:
    with pytest.raises(ValueError, match="divisible by tp"):
        build_model(spec(), device="meta", tp_size=3)
    with pytest.raises(ValueError, match="d_ff"):
        build_model(spec(d_ff=100), device="meta", tp_size=8)
    with pytest.raises(ValueError, match="tp_rank"):
        build_model(spec(), device="meta", tp_rank=2, tp_size=2)


# Running the shards -----------------------------------------------------------------------------


def shard(full: dict[str, torch.Tensor], name: str, rank: int, tp: int) -> torch.Tensor:
    """The contract's slice of one full tensor for ``rank``, written out independently of build_model."""
    tensor = full[name]
    if name in ("model.embed_tokens.weight", "lm_head.weight"):  # vLLM: pad the vocabulary to 64k rows, then split
        padded = torch.zeros(-(-tensor.shape[0] // 64) * 64, D)
        padded[: tensor.shape[0]] = tensor
        rows = padded.shape[0] // tp
        return padded[rank * rows : (rank + 1) * rows]
    q_rows, kv_rows = HEADS * HEAD_DIM // tp, max(1, KV // tp) * HEAD_DIM
    kv_head = rank * KV // tp if tp <= KV else rank // (tp // KV)
    if ".q_proj." in name:
        return tensor[rank * q_rows : (rank + 1) * q_rows]
    if ".k_proj." in name or ".v_proj." in name:
        start = rank * kv_rows if tp <= KV else kv_head * HEAD_DIM
        return tensor[start : start + kv_rows]
    if ".o_proj.weight" in name:
        return tensor[:, rank * q_rows : (rank + 1) * q_rows]
    ff = D_FF // tp
    if ".gate_proj." in name or ".up_proj." in name:
        return tensor[rank * ff : (rank + 1) * ff]
    if ".down_proj.weight" in name:
        return tensor[:, rank * ff : (rank + 1) * ff]
    return tensor  # norms, o/down biases: replicated


@pytest.mark.parametrize("vocab", [VOCAB, 100], ids=["vocab128", "vocab100-padded"])
@pytest.mark.parametrize("tp", [2, 4])
def test_sharded_logits_equal_the_full_model(tp: int, vocab: int) -> None:
    """qkv/o/MLP biases included (each added once); tp 4 > 2 KV heads replicates them; cached decode too; the
    vocabulary split over the ranks (padded when 64 does not divide it)."""
    the_spec = spec(qkv_bias=True, o_bias=True, mlp_bias=True, mlp="gated", qk_norm=True, vocab_size=vocab)
    torch.manual_seed(0)
    full_model = build_model(the_spec).eval()
    with torch.no_grad():
        for param in full_model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    full = full_model.state_dict()
    ids = torch.randint(0, vocab, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = full_model(ids)  # (b, s, v)

    results, reducer = run_ranks(lambda rank: build_model(the_spec, tp_rank=rank, tp_size=tp), shard, full, ids, tp)
    # 6 forwards x (the embedding's lookup, 2 layers x (o_proj, down_proj), the logits' gather): one reduce each
    assert reducer.calls == [6 * (1 + 2 * 2 + 1)] * tp
    for logits in results:
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)


def test_every_row_parallel_layer_calls_all_reduce() -> None:
    """o_proj and down_proj of each layer: 2 calls per layer per forward, through the replaceable attribute."""
    model = build_model(spec(), tp_rank=0, tp_size=2)
    calls: list[tuple[int, ...]] = []

    def counting(x: torch.Tensor) -> torch.Tensor:
        calls.append(tuple(x.shape))
        return x

    model.all_reduce = counting
    with torch.no_grad():
        model(torch.zeros(1, 3, dtype=torch.long))
    assert calls == [(1, 3, D)] * 5 + [(1, 3, VOCAB)]  # embedding, 2 x 2 row-parallel layers, the logits' gather


@pytest.mark.parametrize(
    "extra",
    [
        dict(norm_placement="post", qk_norm=True, nope_layers="global", sliding_window=4,
             layer_pattern=["local", "global"], qkv_clip=0.5),  # OLMo 2's block, EXAONE 4's NoPE layers, a clamp
        dict(norm="layernorm", norm_bias=False, n_norms_per_layer=1, logit_scale=0.5),  # Cohere's
    ],
    ids=["post-norm", "cohere"],
)  # fmt: skip
def test_sharded_logits_equal_the_full_model_for_the_block_variants(extra: dict) -> None:
    """Post-norms, NoPE global layers, a q/k/v clamp, bias-free LayerNorms and scaled logits shard as the rest:
    norms replicated, the clamp and the scale elementwise."""
    the_spec = spec(vocab_size=VOCAB, **extra)
    torch.manual_seed(0)
    full_model = build_model(the_spec).eval()
    with torch.no_grad():
        for param in full_model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    ids = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = full_model(ids)  # (b, s, v)
    results, _ = run_ranks(
        lambda rank: build_model(the_spec, tp_rank=rank, tp_size=2), shard, full_model.state_dict(), ids, 2
    )
    for logits in results:
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
