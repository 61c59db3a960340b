"""Goodput, the most requests/s served within the latency targets: a prefill worker's from its M/D/1 queue, and an
aggregated replica's (prefill and decode together) found by bisection over its closed-form plan at a rate.

A queue at full load never drains, so every pool and replica is loaded to at most ``MAX_LOAD`` of its capacity (that
load when there is no target). Pure Python.
"""

from __future__ import annotations

import math

from mha_cli.core.cost.plan import ServingPlan, plan_at_rate
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.dp_attention import a2a_backend_on
from mha_cli.core.errors import MhaError
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.targets import ResolvedTarget

MAX_LOAD = 0.9
"""The share of a pool's (or a replica's) capacity it is loaded to at most: an M/D/1 queue at 0.9 waits 4.5 services."""
BISECTIONS = 30
"""Halvings of the aggregated goodput search (2^-30 of the capacity)."""


class AggregatedLayout(Record):
    """One aggregated replica of tp x dp GPUs (prefill and decode together, chunked prefill), on the same footing."""

    tp: int
    dp: int = 1
    """DP attention ranks sharing the experts (1: a tensor-parallel replica)."""
    replicas: int
    """Replicas priced: all the target's GPUs, or as many as --rate needs."""
    capacity_rps: float
    goodput_rps: float
    """Per replica: the most requests/s it serves within the targets (at most MAX_LOAD x capacity)."""
    rate_rps: float
    """Per replica, the load priced."""
    ttft_ms: float
    """At ``rate_rps``; where ``saturated``, once a request is admitted (its wait has no steady value)."""
    itl_ms: float
    output_tokens_per_s_per_gpu: float
    """Of the requests it serves (``served_rps``), not the load offered, whether or not it meets the targets (as the
    splits' rows; ``meets_targets`` says which)."""
    meets_targets: bool
    served_rps: float | None = None
    """Per replica, the requests/s it serves: the load, or, where the load is more than it serves (``saturated``),
    its capacity; None only in records written before it was kept."""
    saturated: bool = False
    """The load is more than the replica serves: its queue grows without bound (the splits' rows say so too)."""

    @property
    def gpus(self) -> int:
        """GPUs of one replica."""
        return self.tp * self.dp

    @property
    def layout(self) -> str:
        """``tp 8`` or ``dp 16`` (DP attention ranks of tp 1)."""
        return f"tp {self.tp}" if self.dp == 1 else f"dp {self.dp}" + (f" x tp {self.tp}" if self.tp > 1 else "")


def mdl_wait(load: float, capacity_rps: float) -> float:
    """An M/D/1 queue's mean wait (s) at ``load`` (rho, < 1) with service 1 / ``capacity_rps``."""
    return load / (2 * (1 - load)) / capacity_rps


def prefill_goodput(capacity_rps: float, fixed_s: float, ttft_s: float | None) -> float:
    """One prefill worker's requests/s within ``ttft_s``, when a request's TTFT is its M/D/1 wait + ``fixed_s``
    (its prefill, transfer and first decode step): rho / (2 (1 - rho)) / c <= ttft - fixed gives
    rho <= 2 x c / (1 + 2 x c) with x = ttft - fixed; at most MAX_LOAD."""
    if ttft_s is None:
        return MAX_LOAD * capacity_rps
    slack = ttft_s - fixed_s
    if slack <= 0:
        return 0.0
    load = 2 * slack * capacity_rps / (1 + 2 * slack * capacity_rps)
    return min(load, MAX_LOAD) * capacity_rps


def aggregated_layout(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, profiles: tuple[DeviceProfile, DeviceProfile],
    tp: int, *, isl: int, osl: int, rate: float | None, targets: tuple[float | None, float | None], dp: int = 1,
) -> AggregatedLayout | None:  # fmt: skip
    """One aggregated replica of ``tp`` GPUs (or ``dp`` > 1 DP attention ranks of tp GPUs, the experts spread over
    them) at the most requests/s within the targets (bisection over ``plan_at_rate``), its replicas filling the
    target (or as many as ``rate`` needs)."""
    gpus = tp * dp
    one = target.model_copy(update={"n_devices": gpus, "spec": f"{gpus}x{target.target.id}"})
    if dp > 1:  # the dispatch the disaggregated DP workers are priced with (DeepEP on NVIDIA), so the two compare alike
        backend = a2a_backend_on(target.target.vendor)
        deployment = deployment.model_copy(update={"dp": dp, "expert_parallel": True, "moe_a2a_backend": backend})
    ttft_ms, itl_ms = targets

    def at(rps: float) -> ServingPlan:
        return plan_at_rate(model, one, deployment, *profiles, isl=isl, osl=osl, rate=rps, tp=tp)

    def meets(rps: float) -> bool:
        plan = at(rps)
        return (
            not plan.saturated
            and (ttft_ms is None or plan.ttft_ms <= ttft_ms)
            and (itl_ms is None or plan.itl_ms <= itl_ms)
        )

    try:
        capacity = at(1e8).output_tokens_per_s / osl
    except MhaError:
        return None
    top = MAX_LOAD * capacity
    if meets(top):
        goodput = top
    else:
        low, high = 0.0, top
        for _ in range(BISECTIONS):
            middle = (low + high) / 2
            low, high = (middle, high) if meets(middle) else (low, middle)
        goodput = low
    replicas = target.n_devices // gpus
    if rate is not None and goodput > 0:
        replicas = max(1, min(replicas, math.ceil(rate / goodput * (1 - 1e-9))))
    per_replica = goodput if rate is None else rate / replicas
    plan = at(max(per_replica, 1e-9))
    ok = goodput > 0 and (rate is None or per_replica <= goodput * (1 + 1e-9))
    served = min(per_replica, capacity) if plan.saturated else per_replica  # trial 289 #2: not the load offered
    return AggregatedLayout(
        tp=tp, dp=dp, replicas=replicas, capacity_rps=capacity, goodput_rps=goodput, rate_rps=per_replica,
        ttft_ms=plan.ttft_ms, itl_ms=plan.itl_ms,
        output_tokens_per_s_per_gpu=served * osl / gpus,  # as a split's row: what it serves, met or not
        meets_targets=ok, served_rps=served, saturated=plan.saturated,  # ok: within its goodput, so not saturated
    )  # fmt: skip
