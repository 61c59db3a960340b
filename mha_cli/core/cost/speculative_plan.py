"""Speculative decoding against plain decoding on the same deployment: the figures side by side, and the load from
which it stops paying.

Both plans run the same layout (``core.cost.plan.LayoutPlans``) at the same users: with the drafter (its weights and
cache in the memory plan, k drafts and a verification of k + 1 per step, T tokens out) and without. At a few users a
step reads the weights once whatever it computes, so T tokens cost little more than one; as the batch grows the
verification turns compute-bound and its k + 1 tokens per sequence cost about k + 1 decodes, while the drafter's
cache leaves fewer requests room in the pool. ``loses_from``: the first load, of 1, 2, 4, ... up to twice what the
pool admits, at which the deployment's output tokens/s with speculative decoding fall below those without. Pure
Python.
"""

from mha_cli.core.cost.plan import LayoutPlans
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.speculative import SpeculativeComparison, SpeculativePoint
from mha_cli.core.errors import NotPricedError
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.speculative import drafter_weight_bytes
from mha_cli.core.targets import ResolvedTarget

MAX_POINTS_USERS = 4096
"""The load curve goes up to this many users at most."""


def compare_speculative(
    model: ModelSpec,
    target: ResolvedTarget,
    deployment: DeploymentSpec,
    profile: DeviceProfile,
    ceiling: DeviceProfile,
    *,
    isl: int,
    osl: int,
    concurrency: int,
    tp: int | None = None,
    pp: int = 1,
) -> SpeculativeComparison:
    """``deployment`` (with its ``speculative``) against the same without it (see the module docstring)."""
    spec = deployment.speculative
    assert spec is not None, "nothing to compare without speculative decoding"
    plain = deployment.model_copy(update={"speculative": None})
    common = {"isl": isl, "osl": osl, "tp": tp, "pp": pp}
    with_plans = LayoutPlans(model, target, deployment, profile, ceiling, **common)
    at = with_plans.at(concurrency)
    try:  # the same deployment without a drafter may run a mode mha does not price (vLLM 0.20-0.21's Mamba 'all')
        without_plans = LayoutPlans(model, target, plain, profile, ceiling, **common)
        at_without = without_plans.at(concurrency)
    except NotPricedError as exc:
        raise NotPricedError(f"--speculative-config: the comparison without the drafter: {exc.message}") from None
    admitted = at_without.memory.engine.admitted_per_replica * at_without.deployment.replicas
    top = min(MAX_POINTS_USERS, max(2, 2 * admitted))
    curve, loses_from = [], None
    for users in [2**i for i in range(top.bit_length()) if 2**i <= top]:
        a, b = with_plans.at(users), without_plans.at(users)
        curve.append(
            SpeculativePoint(
                concurrency=users, itl_ms=a.itl_ms, itl_ms_without=b.itl_ms,
                output_tokens_per_s=a.output_tokens_per_s, output_tokens_per_s_without=b.output_tokens_per_s,
            )
        )  # fmt: skip
        if loses_from is None and a.output_tokens_per_s < b.output_tokens_per_s:
            loses_from = users
    return SpeculativeComparison(
        method=spec.method, num_speculative_tokens=spec.num_speculative_tokens,
        acceptance_length=spec.acceptance_length, acceptance_source=spec.acceptance_source,
        drafter_weight_bytes_per_device=drafter_weight_bytes(
            spec, at.memory.tp, deployment.weight_dtype, with_plans.experts
        ),
        kv_tokens_per_device=at.memory.max_tokens_per_device,
        kv_tokens_per_device_without=at_without.memory.max_tokens_per_device,
        itl_ms=at.itl_ms, itl_ms_without=at_without.itl_ms, output_tokens_per_s=at.output_tokens_per_s,
        output_tokens_per_s_without=at_without.output_tokens_per_s, speedup=at_without.itl_ms / at.itl_ms,
        pays=at.output_tokens_per_s >= at_without.output_tokens_per_s, loses_from=loses_from, curve=curve,
    )  # fmt: skip
