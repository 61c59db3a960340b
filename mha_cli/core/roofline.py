"""Roofline lower bounds for decode and prefill on a target, from its datasheet figures.

The target's devices form ``replicas`` tensor-parallel groups of ``tp`` devices (see ``memory``);
each group serves ``sequences_per_replica`` of the batch, so one device's step is that share.

- Decode is memory-bound: a step reads, per device, its shard of the weights the step touches and
  its cache (``MemoryPlan.kv_bytes_per_device``), so it takes at least those bytes / bandwidth.
  A dense model touches every weight; an MoE layer touches its shared experts and the routed
  experts its tokens pick: E x (1 - (1 - k/E)^B) of E experts in expectation for B tokens routed
  uniformly top-k. The compute, 2 x active params per token plus the attention over the cache, is
  compared and the larger time is the bound.
- Prefill is compute-bound: 2 x active params x tokens FLOPs for the projections and MLP (the output head's on the
  last token only: the engines compute a prompt's logits there), plus
  the causal attention, seq^2 / 2 query-key pairs per global layer (seq x window on a local layer).
- A query-key pair costs 2 x n_heads x (qk width + v width) FLOPs. MLA decode with the absorbed
  cache scores and sums over the latent instead: 2 x n_heads x (2 x kv_lora_rank + rope width);
  MLA prefill runs naive (decompressed K/V), as DeepSeek's inference code does.

These are bounds, not predictions: ``core.cost`` predicts (its datasheet ceiling reproduces these within 1%, and
its profiles add what real kernels reach and the fixed costs they pay).
"""

from typing import Literal

from mha_cli.core.kv import KvFootprint, tokens_held
from mha_cli.core.memory import MemoryPlan
from mha_cli.core.params import ParamBreakdown
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import ResolvedTarget
from mha_cli.core.weight_bytes import bytes_per_weight_of

Bound = Literal["memory", "compute"]


class Roofline(Record):
    """Lower bounds on time: one tensor-parallel group per replica, all replicas stepping together."""

    bandwidth_bytes_per_s: float
    """Memory bandwidth of one device."""
    dense_flops_per_s: float
    """Dense bf16 throughput of one device."""
    tp: int
    replicas: int
    """Tensor-parallel groups stepping in parallel, each over its share of the batch."""
    sequences_per_replica: int
    """Sequences one group decodes per step: ceil(batch / replicas)."""
    decode_weight_bytes_per_step: int
    """Per device: its shard of the weights one decode step touches (MoE: the experts its tokens route to)."""
    experts_read_per_layer: float | None
    """MoE only: expected distinct routed experts one decode step reads per MoE layer."""
    decode_bytes_per_step: int
    """Per device: decode_weight_bytes_per_step + its cache at full context (MemoryPlan.kv_bytes_per_device)."""
    decode_flops_per_step: float
    """One group, one token for each of its sequences_per_replica sequences."""
    decode_step_s: float
    decode_bound: Bound
    decode_tokens_per_s: float
    """batch / decode_step_s: tokens all replicas together generate per second."""
    prefill_flops: float
    """One sequence of seq_len tokens."""
    prefill_s: float
    prefill_bound: Bound
    prefill_tokens_per_s: float


def attention_pair_flops(model: ModelSpec, *, absorbed: bool = False) -> int:
    """FLOPs of one query-key pair in one layer (2 per multiply-accumulate).

    Standard and naive MLA: scores over the qk width, weighted sum over the v width. Absorbed MLA
    (``absorbed=True``): scores over latent + RoPE key, weighted sum over the latent.
    """
    if model.attention.mla is not None:
        mla = model.attention.mla
        if absorbed:
            return 2 * model.attention.n_heads * (2 * mla.kv_lora_rank + mla.qk_rope_head_dim)
        return 2 * model.attention.n_heads * (mla.qk_head_dim + mla.v_head_dim)
    return 2 * model.attention.n_heads * 2 * model.attention.head_dim


def causal_pairs(model: ModelSpec, seq_len: int) -> int:
    """Query-key pairs a causal prefill of ``seq_len`` tokens computes, over all layers."""
    full = seq_len * (seq_len + 1) // 2
    window = model.layers.sliding_window
    # A local layer's query i sees min(i + 1, window) keys.
    local = full if window is None or window >= seq_len else window * (window + 1) // 2 + (seq_len - window) * window
    chunked = 0
    if (
        model.layers.attention_chunk is not None
    ):  # query i sees the keys of its own chunk up to itself: (i mod chunk) + 1
        whole, rest = divmod(seq_len, model.layers.attention_chunk)
        chunked = (
            whole * model.layers.attention_chunk * (model.layers.attention_chunk + 1) // 2 + rest * (rest + 1) // 2
        )
    return model.n_global_layers * full + model.n_local_layers * local + model.count_layers("chunked") * chunked


def experts_touched(n_experts: int, top_k: int, tokens: int) -> float:
    """Expected distinct experts ``tokens`` tokens route to, each picking ``top_k`` of ``n_experts`` uniformly."""
    return n_experts * (1 - (1 - top_k / n_experts) ** tokens)


def params_read(model: ModelSpec, params: ParamBreakdown, tokens: int) -> tuple[float, float | None]:
    """(weights a forward pass over ``tokens`` tokens reads, routed experts read per MoE layer or None).

    Lookup tables (input embedding, learned positions) give only the rows of these tokens; an MoE
    layer reads its shared experts and the routed experts its tokens pick; a vision tower is not read by text tokens.
    """
    lookup_rows = min(tokens, model.embeddings.vocab_size) * model.d_model if params.lookup_tables else 0
    dense_read = params.total - params.vision_tower - params.lookup_tables + min(lookup_rows, params.lookup_tables)
    moe = model.block.moe
    if moe is None or params.n_moe_layers == 0:
        return float(dense_read), None
    per_expert = params.expert_params
    touched = experts_touched(moe.n_experts, moe.n_active_experts, tokens)
    untouched = params.n_moe_layers * (moe.n_experts - touched) * per_expert
    return dense_read - untouched, touched


def attended_tokens(model: ModelSpec, seq_len: int) -> int:
    """Cached tokens one new token attends to, over all layers: windows and chunks applied, no paging padding.
    Linear-attention and state-space layers attend to no cached token (their fixed state is in the bytes read)."""
    local = tokens_held(seq_len, model.layers.sliding_window) if model.layers.sliding_window else 0
    chunked = (
        tokens_held(seq_len, model.layers.attention_chunk) if model.layers.attention_chunk else 0
    )  # as core.kv holds them
    return model.n_global_layers * seq_len + model.n_local_layers * local + model.count_layers("chunked") * chunked


def estimate_roofline(
    model: ModelSpec,
    target: ResolvedTarget,
    *,
    params: ParamBreakdown,
    weight_dtype: str,
    kv: KvFootprint,
    plan: MemoryPlan,
) -> Roofline:
    """Decode and prefill lower bounds for ``model`` with the cache ``kv`` laid out by ``plan`` on ``target``."""
    device = target.target
    bandwidth = device.bandwidth_bytes_per_s
    flops = device.bf16_tflops_dense * 1e12
    group_flops = flops * plan.tp
    sequences = plan.sequences_per_replica
    layer_tokens = attended_tokens(model, kv.seq_len)

    # Decode: each of the group's new tokens attends to every cached token of its sequence, in every layer.
    decode_params, experts = params_read(model, params, sequences)
    per_weight = bytes_per_weight_of(model, weight_dtype)  # the format's average, bf16 parts and scales included
    decode_weights = -(-round(decode_params * per_weight) // plan.tp)
    decode_bytes = decode_weights + plan.kv_bytes_per_device
    decode_pair = attention_pair_flops(model, absorbed=kv.mla_cache == "absorbed")
    decode_flops = sequences * (2 * params.active + decode_pair * layer_tokens)
    decode_memory_s = decode_bytes / bandwidth
    decode_compute_s = decode_flops / group_flops
    decode_s = max(decode_memory_s, decode_compute_s)

    # Prefill: one sequence of seq_len tokens on one group, weights read once, attention naive.
    prefill_params, _ = params_read(model, params, kv.seq_len)
    prefill_weights = -(-round(prefill_params * per_weight) // plan.tp)
    head = params.embeddings - params.lookup_tables  # the output head (and an embedding norm): the last token only,
    # as the engines compute a prompt's logits (the cost model's prefill_shape, all_logits False)
    prefill_flops = 2 * (params.active - head) * kv.seq_len + 2 * head
    prefill_flops += attention_pair_flops(model) * causal_pairs(model, kv.seq_len)
    prefill_compute_s = prefill_flops / group_flops
    prefill_memory_s = (prefill_weights + kv.bytes_per_sequence_per_rank) / bandwidth
    prefill_s = max(prefill_compute_s, prefill_memory_s)
    return Roofline(
        bandwidth_bytes_per_s=bandwidth,
        dense_flops_per_s=flops,
        tp=plan.tp,
        replicas=plan.replicas,
        sequences_per_replica=sequences,
        decode_weight_bytes_per_step=decode_weights,
        experts_read_per_layer=experts,
        decode_bytes_per_step=decode_bytes,
        decode_flops_per_step=decode_flops,
        decode_step_s=decode_s,
        decode_bound="memory" if decode_memory_s >= decode_compute_s else "compute",
        decode_tokens_per_s=kv.batch / decode_s,
        prefill_flops=prefill_flops,
        prefill_s=prefill_s,
        prefill_bound="compute" if prefill_compute_s >= prefill_memory_s else "memory",
        prefill_tokens_per_s=kv.seq_len / prefill_s,
    )
