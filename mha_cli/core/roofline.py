"""Roofline lower bounds for decode and prefill on a target, from its datasheet figures.

- Decode is memory-bound: one step reads every weight and the whole KV cache of the batch once,
  so a step takes at least (weight bytes + KV bytes) / memory bandwidth, per device under tensor
  parallelism (each device reads its shard in parallel). Its compute, 2 x active params x batch
  plus the attention over the cache, is compared and the larger time is the bound.
- Prefill is compute-bound: 2 x active params x tokens FLOPs for the projections and MLP, plus
  the causal attention, seq^2 / 2 query-key pairs per global layer (seq x window on a local layer),
  each pair costing 2 x n_heads x (qk width + v width) FLOPs. Time = FLOPs / dense bf16 TFLOP/s
  of the tensor-parallel group.

These are bounds, not predictions: real kernels reach perhaps 60-80% of either roof.
"""

from __future__ import annotations

from typing import Literal

from mha_cli.core.kv import KvFootprint
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import ResolvedTarget

Bound = Literal["memory", "compute"]


class Roofline(Record):
    """Lower bounds on time, for one tensor-parallel group of the target."""

    bandwidth_bytes_per_s: float
    """Memory bandwidth of one device."""
    dense_flops_per_s: float
    """Dense bf16 throughput of one device."""
    tp: int
    decode_bytes_per_step: int
    """Per device: its weight shard + its share of the batch's KV cache at full context."""
    decode_flops_per_step: float
    """The whole group, one token for each of the batch's sequences."""
    decode_step_s: float
    decode_bound: Bound
    decode_tokens_per_s: float
    """batch / decode_step_s: tokens the group generates per second."""
    prefill_flops: float
    """One sequence of seq_len tokens."""
    prefill_s: float
    prefill_bound: Bound
    prefill_tokens_per_s: float


def attention_pair_flops(model: ModelSpec) -> int:
    """FLOPs of one query-key pair in one layer: scores (qk width) and weighted values (v width), 2 per MAC."""
    if model.mla is not None:
        qk, v = model.mla.qk_head_dim, model.mla.v_head_dim
    else:
        qk = v = model.dim_per_head
    return 2 * model.n_heads * (qk + v)


def causal_pairs(model: ModelSpec, seq_len: int) -> int:
    """Query-key pairs a causal prefill of ``seq_len`` tokens computes, over all layers."""
    full = seq_len * (seq_len + 1) // 2
    window = model.sliding_window
    # A local layer's query i sees min(i + 1, window) keys.
    local = full if window is None or window >= seq_len else window * (window + 1) // 2 + (seq_len - window) * window
    return model.n_global_layers * full + model.n_local_layers * local


def estimate_roofline(
    model: ModelSpec,
    target: ResolvedTarget,
    *,
    active_params: int,
    weight_bytes_per_device: int,
    kv: KvFootprint,
) -> Roofline:
    """Decode and prefill lower bounds for ``model`` with the cache ``kv`` on ``target``."""
    device = target.target
    bandwidth = device.bandwidth_bytes_per_s
    flops = device.bf16_tflops_dense * 1e12
    group_flops = flops * kv.tp
    pair = attention_pair_flops(model)
    # Tokens cached over all layers for one sequence (windows and paging applied).
    layer_tokens = kv.bytes_per_sequence // kv.bytes_per_token_per_layer if kv.bytes_per_token_per_layer else 0
    # Decode: each of the batch's new tokens attends to every cached token of its sequence, in every layer.
    decode_bytes = weight_bytes_per_device + kv.total_bytes
    decode_flops = kv.batch * (2 * active_params + pair * layer_tokens)
    decode_memory_s = decode_bytes / bandwidth
    decode_compute_s = decode_flops / group_flops
    decode_s = max(decode_memory_s, decode_compute_s)
    # Prefill: one sequence of seq_len tokens, weights read once.
    prefill_flops = 2 * active_params * kv.seq_len + pair * causal_pairs(model, kv.seq_len)
    prefill_compute_s = prefill_flops / group_flops
    prefill_memory_s = (weight_bytes_per_device + kv.bytes_per_sequence_per_rank) / bandwidth
    prefill_s = max(prefill_compute_s, prefill_memory_s)
    return Roofline(
        bandwidth_bytes_per_s=bandwidth,
        dense_flops_per_s=flops,
        tp=kv.tp,
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
