"""The memory plan on a target: weights and KV cache per device against what the device holds.

Assumptions, stated once: a serving engine may use ``utilisation`` of device memory (vLLM's
``gpu_memory_utilization`` default, 0.90); the rest is left for activations, the CUDA context
and fragmentation. Under tensor parallelism each rank holds its Megatron shard (``core.tensor_parallel``):
matrices split by heads and width, embeddings, LM head and norms whole on every rank. Devices
beyond the tensor-parallel group hold replicas (data parallel), each serving its share of the
batch: a device caches ceil(batch / replicas) sequences.
"""

from __future__ import annotations

from mha_cli.core.dtypes import storage_format
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import KvFootprint
from mha_cli.core.record import Record
from mha_cli.core.targets import ResolvedTarget

DEFAULT_UTILISATION = 0.90


class MemoryPlan(Record):
    """Bytes per device: weights + KV cache + headroom against usable device memory."""

    target_id: str
    target_name: str
    alias_note: str | None
    n_devices: int
    tp: int
    replicas: int
    """Tensor-parallel groups the devices form (n_devices / tp)."""
    device_memory_bytes: int
    utilisation: float
    usable_bytes: int
    """device_memory_bytes x utilisation."""
    weight_bytes_per_device: int
    sequences_per_replica: int
    """ceil(batch / replicas): the sequences one tensor-parallel group serves."""
    kv_bytes_per_device: int
    """The cache one device holds: its rank's share of sequences_per_replica sequences."""
    headroom_bytes: int
    """usable - weights - KV; negative when it does not fit."""
    weights_fit: bool
    fits: bool
    max_sequences: int
    """Sequences of seq_len tokens that fit beside the weights, over all replicas."""
    max_tokens_per_device: int
    """Tokens (of every layer) the free memory of one device can cache."""


def resolve_tp(tp: int | None, target: ResolvedTarget | None) -> int:
    """The tensor-parallel degree: given, or the target's device count; checked against it."""
    n_devices = target.n_devices if target else 1
    if tp is None:
        return n_devices
    if target is not None and (tp > n_devices or n_devices % tp):
        raise BadInputError(
            f"tp ({tp}) must divide the {n_devices} device(s) of target {target.spec!r}:"
            f" use e.g. --target {tp}x{target.target.id}"
        )
    return tp


def weight_bytes(total_params: int, weight_dtype: str) -> int:
    """Bytes of all weights in ``weight_dtype`` (scales of quantised weights not counted), exact: whole bits,
    rounded up to whole bytes, never through a float."""
    return -(-total_params * storage_format(weight_dtype).bits // 8)


def plan_memory(
    target: ResolvedTarget,
    *,
    weight_params: int,
    weight_dtype: str,
    kv: KvFootprint,
    utilisation: float = DEFAULT_UTILISATION,
) -> MemoryPlan:
    """Fit the weights and ``kv`` onto ``target``'s devices; ``weight_params``: the weights one device holds
    (``core.tensor_parallel.weight_params_per_device``: replicated parts counted on every rank)."""
    device = target.target.memory_bytes
    usable = int(device * utilisation)
    weights = weight_bytes(weight_params, weight_dtype)
    free_for_kv = usable - weights
    replicas = target.n_devices // kv.tp
    per_sequence = kv.bytes_per_sequence_per_rank
    sequences = -(-kv.batch // replicas)
    kv_per_device = sequences * per_sequence
    per_token = kv.bytes_per_token_per_rank
    max_per_replica = max(0, free_for_kv) // per_sequence if per_sequence else 0
    return MemoryPlan(
        target_id=target.target.id,
        target_name=target.target.name,
        alias_note=target.alias_note,
        n_devices=target.n_devices,
        tp=kv.tp,
        replicas=replicas,
        device_memory_bytes=device,
        utilisation=utilisation,
        usable_bytes=usable,
        weight_bytes_per_device=weights,
        sequences_per_replica=sequences,
        kv_bytes_per_device=kv_per_device,
        headroom_bytes=free_for_kv - kv_per_device,
        weights_fit=free_for_kv >= 0,
        fits=free_for_kv - kv_per_device >= 0,
        max_sequences=max_per_replica * replicas,
        max_tokens_per_device=max(0, free_for_kv) // per_token if per_token else 0,
    )
