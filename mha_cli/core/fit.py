"""Ways out of a plan that does not fit its target, as the flags that would make it fit.

Shared by ``mha recommend`` (MHA025/MHA026 in its trace) and ``mha check`` (the same rules as
findings), so both name the same concrete fixes: ``--target NxTARGET``, ``--weight-dtype fp8``,
``--batch N``, ``--kv-dtype fp8``, ``--seq N``. Flag values are written as the options parse them:
no thousands separators.
"""

from __future__ import annotations

from mha_cli.core.dtypes import bytes_per_weight, storage_format
from mha_cli.core.errors import MhaError
from mha_cli.core.kv import KvFootprint, kv_footprint
from mha_cli.core.memory import MemoryPlan, plan_memory, weight_bytes
from mha_cli.core.quantities import format_bytes
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.targets import ResolvedTarget, resolve_target

MAX_DEVICES_TRIED = 4096
SMALLER_WEIGHT_DTYPES = ("fp8", "int4")


def devices_that_fit(
    model: ModelSpec, target: ResolvedTarget, deployment: DeploymentSpec, total_params: int
) -> int | None:
    """The smallest power-of-two tensor-parallel group of ``target``'s device that holds weights and cache."""
    devices = 2
    while devices <= MAX_DEVICES_TRIED:
        group = resolve_target(f"{devices}x{target.target.id}")
        try:
            kv = kv_footprint(
                model, seq_len=deployment.seq_len, batch=deployment.batch, kv_dtype=deployment.kv_dtype, tp=devices,
                block_size=deployment.block_size, mla_cache=deployment.mla_cache,
            )  # fmt: skip
        except MhaError:  # this tp does not split the heads
            devices *= 2
            continue
        if plan_memory(group, total_params=total_params, weight_dtype=deployment.weight_dtype, kv=kv).fits:
            return devices
        devices *= 2
    return None


def ways_out(
    model: ModelSpec,
    target: ResolvedTarget,
    deployment: DeploymentSpec,
    plan: MemoryPlan,
    kv: KvFootprint,
    total_params: int,
) -> list[str]:
    """What would make ``plan`` fit, most general first; empty when it fits."""
    if plan.fits:
        return []
    devices = devices_that_fit(model, target, deployment, total_params)
    ways = [f"--target {devices}x{target.target.id} (tensor parallel over {devices} devices)"] if devices else []
    if not plan.weights_fit:
        current = bytes_per_weight(deployment.weight_dtype)
        for dtype in SMALLER_WEIGHT_DTYPES:
            per_device = -(-weight_bytes(total_params, dtype) // plan.tp)
            if bytes_per_weight(dtype) < current and per_device < plan.usable_bytes:
                ways.append(f"--weight-dtype {dtype} (weights {format_bytes(per_device)} per device)")
                break
        return ways
    if plan.max_sequences > 0:  # the batch is shared by the replicas, so the total is what fits
        ways.append(f"--batch {plan.max_sequences}")
    kv_bits = storage_format(deployment.kv_dtype).bits
    if kv_bits > 8:
        share = {16: "half", 32: "a quarter"}.get(kv_bits, f"{8 / kv_bits:g}")
        ways.append(f"--kv-dtype fp8 ({share} of the cache of a {kv_bits}-bit one)")
    seq = plan.max_tokens_per_device // plan.sequences_per_replica
    if deployment.block_size:
        seq = seq // deployment.block_size * deployment.block_size
    if 0 < seq < kv.seq_len:
        ways.append(f"--seq {seq} (the context this batch fits)")
    return ways
