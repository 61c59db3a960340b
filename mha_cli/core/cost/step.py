"""The time of one forward step on a device profile: sum over operations of their roof, plus fixed costs.

    time = sum over ops of count x max(bytes / bandwidth(bytes), FLOPs / rate(rows))
           (decode attention: FLOPs x padded rows / rows / tile rate, ``core.cost.decode_tiles``;
            a weight GEMM on a prior: FLOPs x padded rows / rows / rate, ``core.cost.gemm_tiles``)
           + collectives (latency + bytes / bus bandwidth)
           + kernels x kernel overhead (an engine) or dispatched operators x dispatch overhead (eager torch)
           + the engine's step overhead

Each operation is bound by memory or by compute, never both (a kernel overlaps its loads and its math); fixed
costs add because they are serial on the device's stream. Pure Python.
"""

from typing import Literal

from mha_cli.core.cost.gemm_tiles import padded_matmul_seconds, ramp_half_rows
from mha_cli.core.cost.profile import CollectiveCost, DeviceProfile
from mha_cli.core.cost.work import COLLECTIVES, Op
from mha_cli.core.record import Record

Execution = Literal["engine", "eager"]
"""How the step is launched: a fused engine (its kernel count, its step overhead) or eager torch (dispatches)."""


class StepTime(Record):
    """One step's predicted time and where it goes, in seconds."""

    seconds: float
    memory_s: float
    """Operations whose bytes bound them."""
    compute_s: float
    """Operations whose FLOPs bound them."""
    collective_s: float
    overhead_s: float
    """Kernel launches (or eager dispatches) and the engine's step overhead."""
    bytes: float
    flops: float
    kernels: float
    bound: Literal["memory", "compute"]


def op_seconds(op: Op, profile: DeviceProfile, tp: int, scale_out: CollectiveCost | None = None) -> tuple[float, bool]:
    """(one instance's time without fixed costs, whether compute bounds it). Bandwidth is read at the instance's
    bytes, FLOP/s at its rows in the dtype it multiplies in (``Op.tokens``: a matmul's M, ``Op.compute``; an
    attention kernel's query tokens x the query heads sharing one KV head, ``core.cost.work.attention_rows``),
    except a decode attention whose kernel the profile names: its FLOPs on whole tiles of that kernel at its
    dtype's rate (``core.cost.decode_tiles``), and a tensor-core matmul on a profile that names its GEMMs' M tile:
    its FLOPs on whole tiles at its dtype's rate (``core.cost.gemm_tiles``); ``scale_out``: the link between nodes,
    which prices a
    collective whose group spans them (``Op.off_node``, ``core.cost.nodes``)."""
    if op.kind in COLLECTIVES:
        if profile.collective is None:
            return 0.0, False
        collective, ranks = profile.collective, op.ranks or tp
        if op.off_node and scale_out is not None:
            from mha_cli.core.cost.nodes import off_node_seconds

            return off_node_seconds(op, collective, scale_out, ranks), False
        if op.kind == "all_reduce":
            seconds = collective.all_reduce_s(op.bytes, ranks)
        elif op.kind == "all_to_all":
            seconds = collective.all_to_all_s(op.bytes, ranks)
        else:
            seconds = collective.all_gather_s(op.bytes, ranks)
        return seconds, False
    bandwidth = profile.cache_bandwidth if op.kind == "attention" else profile.weight_bandwidth
    memory = op.bytes / bandwidth.at(op.bytes)
    if op.flops <= 0:
        return memory, False
    padded = None
    if op.decode is not None and profile.decode_attention is not None:  # a prior's decode tiles (measured: none)
        padded = profile.decode_attention.seconds(op.flops, op.decode)
    elif op.kind == "matmul" and profile.matmul_tile is not None and op.compute != "fp32":  # tensor cores' M tiles
        rate = profile.matmul_in(op.compute).at(op.tokens)
        half_rows = ramp_half_rows(op.grouped, profile.matmul_half_rows)
        padded = padded_matmul_seconds(op.flops, op.tokens, profile.matmul_tile, rate, half_rows)
    if padded is None:
        rate = profile.attention_flops if op.kind == "attention" else profile.matmul_in(op.compute)
        compute = op.flops / rate.at(op.tokens)
    else:
        compute = padded
    return max(memory, compute), compute > memory


def op_totals(ops: list[Op]) -> tuple[float, float, float]:
    """(bytes, FLOPs, kernels) of the step ``ops`` describe: what its time is reported with, the same on every
    profile (``step_time``'s ``totals``, for a caller that times the same operations on several)."""
    total_bytes = total_flops = kernels = 0.0
    for op in ops:
        count = op.count
        total_bytes += count * op.bytes
        total_flops += count * op.flops
        kernels += count * op.kernels
    return total_bytes, total_flops, kernels


def step_time(
    ops: list[Op],
    profile: DeviceProfile,
    *,
    tp: int = 1,
    execution: Execution = "engine",
    dispatches: int | None = None,
    host_s: float = 0.0,
    send_s: float | None = None,
    scale_out: CollectiveCost | None = None,
    priced: dict[Op, tuple[float, bool]] | None = None,
    totals: tuple[float, float, float] | None = None,
    launch_s: float = 0.0,
) -> StepTime:
    """The time of the step ``ops`` describe on ``profile`` (one rank of ``tp``).

    ``execution="eager"`` charges ``dispatches`` operators (counted from the built model) at the profile's dispatch
    overhead and no engine step overhead (on CUDA the host runs ahead of the device, so only the dispatch time the
    device's work does not hide is added); ``"engine"`` charges the ops' kernels and the step overhead.
    ``host_s``: the engine's host time for the step's sequences, added to the overhead; ``send_s``: the sends
    between pipeline stages, added to the collectives (None: no pipeline); ``scale_out``: the link between nodes
    (``op_seconds``). ``priced``: ``op_seconds`` of operations already priced on this ``profile``, ``tp`` and
    ``scale_out``, by operation, which this call reads and adds to (a caller that times many steps on one profile
    keeps one: the same operation recurs from step to step); None: a fresh one. ``totals``: ``op_totals(ops)``,
    when the caller has it.
    """
    memory = compute = collective = 0.0
    if priced is None:
        priced = {}  # equal pipeline stages hold equal operations: each priced once
    for op in ops:
        found = priced.get(op)
        if found is None:
            found = priced[op] = op_seconds(op, profile, tp, scale_out)
        spent = op.count * found[0]
        if op.kind in COLLECTIVES:
            collective += spent
        elif found[1]:
            compute += spent
        else:
            memory += spent
    total_bytes, total_flops, kernels = op_totals(ops) if totals is None else totals
    work = memory + compute + collective
    if execution == "eager":
        counted = kernels if dispatches is None else dispatches
        overhead = counted * profile.dispatch_overhead_s
        if profile.device == "cuda":  # the host dispatches ahead of the GPU: the slower of the two sets the pace
            overhead = (
                max(0.0, overhead - work - kernels * profile.kernel_overhead_s) + kernels * profile.kernel_overhead_s
            )
    else:
        counted = kernels
        fixed = kernels * profile.kernel_overhead_s
        overhead = fixed + max(0.0, launch_s - work - fixed) + profile.step_overhead_s
    seconds = work + overhead
    if host_s:
        seconds, overhead = seconds + host_s, overhead + host_s
    if send_s is not None:
        seconds, collective = seconds + send_s, collective + send_s
    return StepTime(
        seconds=seconds, memory_s=memory, compute_s=compute,
        collective_s=collective, overhead_s=overhead, bytes=total_bytes, flops=total_flops, kernels=counted,
        bound="compute" if compute > memory else "memory",
    )  # fmt: skip
