"""The figures ``--plot`` draws for ``mha kv`` and ``mha recommend``, computed with the calculator's own functions.

Two pictures of one design under one deployment:

- ``kv_against_context``: the cache one device holds for the batch, against the context, for every projection of
  the same shape (MHA, GQA, MQA, MLA: ``variant_options``), with the room the target leaves beside the design's
  weights as the limit;
- ``memory_against_batch``: weights and weights + cache per device on the target, against the batch, with the
  device's usable memory as the limit.

Pure Python, no drawing: ``mha_cli.cli.plot`` draws these numbers with matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_cli.core.engine.plan import LOG_NAMES
from mha_cli.core.errors import MhaError
from mha_cli.core.fit import price_deployment
from mha_cli.core.kv import comparable_kv_dtype, footprint_for
from mha_cli.core.memory import plan_memory
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.variants import variant_options

SHORTEST_CONTEXT = 256
LONGEST_CONTEXT = 1 << 22
"""The context axis runs over powers of two from 256 tokens to 4x the deployment's context (at most 4M tokens)."""
LARGEST_BATCH = 1 << 16


@dataclass(frozen=True)
class Series:
    """One line: ``y[i]`` bytes at ``x[i]``."""

    label: str
    x: list[int]
    y: list[int]
    is_current: bool = False


@dataclass(frozen=True)
class PlotData:
    """The lines of one picture and its limit (a horizontal line), with the point the deployment asked for."""

    x_label: str
    y_label: str
    series: list[Series]
    limit_bytes: int | None
    limit_label: str
    asked_x: int
    """The deployment's context (or batch): where the current design is marked."""


def powers_of_two(low: int, high: int, also: int) -> list[int]:
    """Powers of two from ``low`` up to the first at or beyond ``high``, with ``also`` among them, ascending."""
    points, value = {also}, low
    while True:
        points.add(value)
        if value >= high:
            break
        value *= 2
    return sorted(points)


def kv_against_context(model: ModelSpec, deployment: DeploymentSpec) -> PlotData:
    """Cache per device of the deployment's batch against the context, for each projection of ``model``'s shape.

    Per device: a rank's share (tp) of the sequences one replica serves (``MemoryPlan.sequences_per_replica``; the
    whole batch without a target). The limit is the target's usable memory less ``model``'s weights per device."""
    priced = price_deployment(model, deployment)
    tp, memory = priced.tp, priced.memory
    sequences = memory.sequences_per_replica if memory is not None else deployment.batch
    contexts = powers_of_two(SHORTEST_CONTEXT, min(4 * deployment.seq_len, LONGEST_CONTEXT), deployment.seq_len)
    series = []
    for option in variant_options(model):
        kv_dtype = comparable_kv_dtype(option.model, deployment.kv_dtype)
        try:
            per_sequence = [
                footprint_for(
                    option.model, deployment.model_copy(update={"seq_len": seq, "kv_dtype": kv_dtype}), tp
                ).bytes_per_sequence_per_rank
                for seq in contexts
            ]
        except MhaError:  # this tp does not split this option's heads
            continue
        series.append(Series(option.label, contexts, [sequences * b for b in per_sequence], option.is_current))
    return PlotData(
        x_label="context (tokens per sequence)",
        y_label=f"KV cache per device, batch {deployment.batch}" + (f", tp {tp}" if tp > 1 else ""),
        series=series,
        limit_bytes=memory.usable_bytes - memory.weight_bytes_per_device if memory is not None else None,
        limit_label=f"{memory.target_id}: usable memory beside the weights" if memory is not None else "",
        asked_x=deployment.seq_len,
    )


def memory_against_batch(model: ModelSpec, deployment: DeploymentSpec) -> PlotData | None:
    """Weights and weights + cache per device against the batch on the deployment's target (None without one),
    up to twice the batch that fits (or the asked batch, whichever is larger)."""
    priced = price_deployment(model, deployment)
    memory, target = priced.memory, priced.target
    if memory is None or target is None:
        return None
    high = min(max(2 * deployment.batch, 2 * memory.max_sequences, 2), LARGEST_BATCH)
    batches = powers_of_two(1, high, deployment.batch)
    weights, together = [], []
    for batch in batches:
        kv = footprint_for(model, priced.deployment.model_copy(update={"batch": batch}), priced.tp)
        plan = plan_memory(target, model=model, weight_dtype=deployment.weight_dtype, kv=kv, deployment=deployment)
        weights.append(plan.weight_bytes_per_device)
        together.append(plan.weight_bytes_per_device + plan.kv_bytes_per_device)
    return PlotData(
        x_label=f"batch (sequences of {deployment.seq_len:,} tokens)",
        y_label="memory per device",
        series=[
            Series(f"weights ({deployment.weight_dtype})", batches, weights),
            Series(f"weights + KV cache ({priced.kv.kv_dtype})", batches, together, is_current=True),
        ],
        limit_bytes=memory.usable_bytes,
        limit_label=f"{memory.target_id}: memory {LOG_NAMES[memory.engine.name]} leaves for weights and cache"
        f" ({memory.utilisation:g} of {memory.device_memory_bytes / 2**30:.2f} GiB, less activations)",
        asked_x=deployment.batch,
    )
