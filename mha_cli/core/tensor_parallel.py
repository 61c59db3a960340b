"""What one tensor-parallel rank holds: its share of every weight (Megatron-style layout).

The layout (CONTRACT.md, "Tensor parallel layout") splits the matrices that carry heads or MLP
width and replicates everything else:

- attention: q (and its bias) by query heads, n_heads / tp per rank; k and v by KV heads,
  n_kv_heads / tp per rank, or one replicated head when tp > n_kv_heads; o by rows of its input
  (the rank's heads); the o bias and per-head q/k norms are replicated.
- MLA: the query and KV down projections and their norms are replicated (the latent lives whole
  on every rank); the query up projection (or the direct query projection), the KV up projection
  and o are split by heads.
- MLP (dense, every routed expert, every shared expert): gate and up by d_ff / tp columns, down
  by rows; the down bias is replicated. An MoE router (and Qwen2-MoE's shared-expert gate) is replicated.
- embeddings, learned positions, every norm and the LM head: replicated.

At tp = 1 the count equals ``core.params.count_params(model).total``. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import kv_heads_per_rank, tp_split_problem
from mha_cli.core.params import count_params, mlp_params
from mha_cli.core.schemas import ModelSpec


def width_per_rank(width: int, tp: int, what: str) -> int:
    """``width / tp``; raises ``BadInputError`` quoting the values when ``tp`` does not divide it."""
    if width % tp:
        raise BadInputError(f"{what} ({width}) must be divisible by tp ({tp}): pick a tp that divides it")
    return width // tp


def tp_shard_problem(model: ModelSpec, tp: int) -> str | None:
    """Why ``tp`` ranks cannot shard ``model`` (heads, MLP or expert widths), or ``None`` when they can."""
    problem = tp_split_problem(model.n_heads, model.kv_heads, tp)
    if problem is not None:
        return problem
    widths = {"d_ff": model.d_ff}
    if model.moe is not None:
        widths["d_ff_expert"] = model.moe.d_ff_expert
        if model.moe.n_shared_experts:
            widths["d_ff_shared"] = model.moe.d_ff_shared or model.moe.d_ff_expert
    for what, width in widths.items():
        if width % tp:
            return f"{what} ({width}) must be divisible by tp ({tp}): pick a tp that divides it"
    return None


def attention_params_per_rank(model: ModelSpec, tp: int) -> int:
    """Weights (and biases) of one attention layer on one rank."""
    d = model.d_model
    heads = width_per_rank(model.n_heads, tp, "n_heads")
    o_bias = d if model.o_bias else 0  # replicated, added once after the all-reduce
    qk_norm = 2 * model.dim_per_head if model.qk_norm else 0  # replicated
    if model.mla is not None:
        mla = model.mla
        q_out = heads * mla.qk_head_dim
        # direct projection split by heads; or a replicated down projection and norm, then a split up projection
        q = d * q_out if mla.q_lora_rank is None else d * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * q_out
        kv_down = d * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank  # replicated, with its norm
        kv_up = mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        o = heads * mla.v_head_dim * d
        q_bias = q_out if model.qkv_bias else 0
        return q + kv_down + kv_up + o + q_bias + o_bias + qk_norm
    kv_heads = kv_heads_per_rank(model, tp)
    q_width = heads * model.dim_per_head
    kv_width = kv_heads * model.dim_per_head
    weights = d * q_width + 2 * d * kv_width + q_width * d
    biases = q_width + 2 * kv_width if model.qkv_bias else 0
    return weights + biases + o_bias + qk_norm


def mlp_params_per_rank(model: ModelSpec, tp: int, moe_layer: bool) -> int:
    """One layer's MLP on one rank: a dense MLP, or every expert's share plus the replicated router."""
    d = model.d_model
    if not moe_layer:
        return mlp_params(d, width_per_rank(model.d_ff, tp, "d_ff"), model.mlp, model.mlp_bias)
    assert model.moe is not None
    moe = model.moe
    expert = mlp_params(d, width_per_rank(moe.d_ff_expert, tp, "d_ff_expert"), model.mlp, moe.expert_bias)
    shared_width = width_per_rank(moe.d_ff_shared or moe.d_ff_expert, tp, "d_ff_shared")
    shared = mlp_params(d, shared_width, model.mlp, moe.expert_bias)
    router = d * moe.n_experts + (d if moe.shared_expert_gate else 0)  # replicated, with Qwen2-MoE's shared gate
    return moe.n_experts * expert + moe.n_shared_experts * shared + router


def params_per_rank(model: ModelSpec, tp: int) -> int:
    """Every weight one rank of ``tp`` holds (replicated parts counted on every rank).

    Raises ``BadInputError`` when ``tp`` does not split the heads or the MLP widths.
    """
    problem = tp_shard_problem(model, tp)
    if problem is not None:
        raise BadInputError(problem)
    d = model.d_model
    norm = d if model.norm == "rmsnorm" else 2 * d
    n_moe = 0 if model.moe is None else max(0, model.n_layers - model.moe.n_dense_layers)
    n_dense = model.n_layers - n_moe
    per_layer = attention_params_per_rank(model, tp) + model.n_norms_per_layer * norm
    mlps = n_dense * mlp_params_per_rank(model, tp, False)
    if n_moe:
        mlps += n_moe * mlp_params_per_rank(model, tp, True)
    embeddings = model.vocab_size * d * (1 if model.tied_embeddings else 2) + model.position_embeddings * d
    return model.n_layers * per_layer + mlps + embeddings + norm


def weight_params_per_device(model: ModelSpec, tp: int) -> int:
    """Weights one device of a ``tp``-rank group holds: this layout's per-rank count (embeddings, LM head, norms,
    routers and MLA down projections whole on every rank) when ``tp`` shards the model, else (heads or widths that
    ``tp`` does not divide: a layout nobody builds) the total split evenly, rounded up."""
    if tp > 1 and tp_shard_problem(model, tp) is None:
        return params_per_rank(model, tp)
    return -(-count_params(model).total // tp)
