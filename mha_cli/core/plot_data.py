"""The figures ``--plot`` draws for ``mha kv`` and ``mha recommend``, computed with the calculator's own functions.

Two pictures of one design under one deployment:

- ``kv_against_context``: the cache one device holds for the batch, against the context, for every projection of
  the same shape (MHA, GQA, MQA, MLA: ``variant_options``), with the room the target leaves beside the design's
  weights as the limit; for ``mha recommend``, ``alternatives_against_context``: the same for every candidate of
  its alternatives table, each as that table prices it. Curves that coincide are one line (``drawn_once``);
- ``memory_against_batch``: weights and weights + cache per device on the target, against the batch, with the
  device's usable memory as the limit.

Pure Python, no drawing: ``mha_cli.cli.plot`` draws these numbers with matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mha_cli.core.engine.release_numbers import ENGINE_NAMES
from mha_cli.core.errors import MhaError
from mha_cli.core.fit import price_deployment
from mha_cli.core.kv import comparable_kv_dtype, footprint_for
from mha_cli.core.memory import plan_memory
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.variants import variant_options

if TYPE_CHECKING:
    from mha_cli.core.fit import Priced
    from mha_cli.core.recommend.result import Alternative

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
    note: str = ""
    """Said after the label in the legend (why two coinciding curves are one line)."""
    tp: int = 1
    """The tensor-parallel degree a KV curve is priced at."""
    kv_heads_per_rank: int | None = None
    """KV heads one rank caches (a KV curve of MHA, GQA or MQA; None for MLA's latent and the memory panel)."""


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
    contexts = context_axis(deployment)
    series = []
    for option in variant_options(model):
        kv_dtype = comparable_kv_dtype(option.model, deployment.kv_dtype)
        try:
            curve = kv_curve(option.model, deployment.model_copy(update={"kv_dtype": kv_dtype}), priced.tp, contexts)
        except MhaError:  # this tp does not split this option's heads
            continue
        series.append(replace(curve, label=option.label, is_current=option.is_current))
    return _kv_panel(priced, deployment, series)


def alternatives_against_context(deployment: DeploymentSpec, alternatives: list[Alternative]) -> PlotData:
    """Cache per device against the context for every row of ``mha recommend``'s alternatives, each its own
    candidate (depth, windows) at its own tp, as the table prices it: the curve passes through the row's
    ``kv_bytes_per_device`` at the deployment's context. ``deployment`` is the recommended design's."""
    chosen = next(row for row in alternatives if row.is_recommended)
    assert chosen.model is not None, "a recommendation read back from JSON has no candidates to draw"
    priced = price_deployment(chosen.model, deployment)
    contexts = context_axis(deployment)
    series = []
    for row in alternatives:
        assert row.model is not None
        curve = kv_curve(row.model, deployment.model_copy(update={"tp": row.tp}), row.tp, contexts)
        series.append(replace(curve, label=row.label, is_current=row.is_recommended))
    return _kv_panel(priced, deployment, series)


def context_axis(deployment: DeploymentSpec) -> list[int]:
    """Powers of two from 256 tokens to 4x the deployment's context (at most 4M tokens), and that context."""
    return powers_of_two(SHORTEST_CONTEXT, min(4 * deployment.seq_len, LONGEST_CONTEXT), deployment.seq_len)


def kv_curve(model: ModelSpec, deployment: DeploymentSpec, tp: int, contexts: list[int]) -> Series:
    """The cache one device holds at each of ``contexts`` (bytes): its rank's share of the sequences one replica
    serves, ``MemoryPlan.kv_bytes_per_device`` (the batch, without a target). Unlabelled."""
    memory = price_deployment(model, deployment.model_copy(update={"tp": tp})).memory
    sequences = memory.sequences_per_replica if memory is not None else deployment.batch
    footprints = [footprint_for(model, deployment.model_copy(update={"seq_len": seq}), tp) for seq in contexts]
    heads = None if model.attention.mla is not None else footprints[0].kv_heads_per_rank
    return Series("", contexts, [sequences * kv.bytes_per_sequence_per_rank for kv in footprints], tp=tp,
                  kv_heads_per_rank=heads)  # fmt: skip


def drawn_once(series: list[Series], tp: int) -> list[Series]:
    """``series`` with curves that coincide merged into one line, its label naming them all (``GQA-8 = MQA at tp
    8``, noting ``1 KV head per rank`` when that is why); a curve priced at another tp than the panel's ``tp``
    says its own."""

    def own(s: Series) -> str:
        return s.label if s.tp == tp else f"{s.label} at tp {s.tp}"

    groups: dict[tuple[int, ...], list[Series]] = {}
    for s in series:
        groups.setdefault(tuple(s.y), []).append(s)
    merged = []
    for same in groups.values():
        first = same[0]
        tps, heads = {s.tp for s in same}, {s.kv_heads_per_rank for s in same}
        label, note = " = ".join(own(s) for s in same), ""
        if len(same) > 1 and len(tps) == 1 and first.tp > 1 and len(heads) == 1 and None not in heads:
            label = " = ".join(s.label for s in same) + f" at tp {first.tp}"
            note = f"{first.kv_heads_per_rank} KV head{'' if first.kv_heads_per_rank == 1 else 's'} per rank"
        merged.append(replace(first, label=label, note=note, is_current=any(s.is_current for s in same)))
    return merged


def _kv_panel(priced: Priced, deployment: DeploymentSpec, series: list[Series]) -> PlotData:
    """The KV panel of ``series`` (coinciding curves drawn once), limited by what ``priced``'s target leaves beside
    its weights."""
    tp, memory = priced.tp, priced.memory
    return PlotData(
        x_label="context (tokens per sequence)",
        y_label=f"KV cache per device, batch {deployment.batch}" + (f", tp {tp}" if tp > 1 else ""),
        series=drawn_once(series, tp),
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
        limit_label=f"{memory.target_id}: memory {ENGINE_NAMES[memory.engine.name]} leaves for weights and cache"
        f" ({memory.utilisation:g} of {memory.device_memory_bytes / 2**30:.2f} GiB, less activations)",
        asked_x=deployment.batch,
    )
