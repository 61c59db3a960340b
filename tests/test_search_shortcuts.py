"""The search's shortcuts answer as the long way does: a search run only to judge a way out (no bounds) picks what the
full search picks, a step timed with the priced operations and totals kept equals one timed afresh, and a layout's
memory plan made again at another load equals one planned afresh at it."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.priors import datasheet_profile, prior_profile
from mha_cli.core.cost.search import no_ways, search_deployments
from mha_cli.core.cost.step import op_totals, step_time
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import MemoryPlan, at_load, plan_memory
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.served_model import by_preset
from mha_cli.core.targets import resolve_target


def _search(bounds: bool, itl_ms: float):
    model, target = get_preset("llama-3-8b"), resolve_target("h100")
    profiles = (prior_profile(target.target), datasheet_profile(target.target))
    return search_deployments(
        model, by_preset("meta-llama/Meta-Llama-3-8B"), target, DeploymentSpec(target="h100"), profiles,
        isl=1024, osl=128, itl_ms=itl_ms, bounds=bounds, ways=no_ways,
    )  # fmt: skip


def test_a_search_without_bounds_picks_what_the_full_search_picks():
    for itl_ms in (20.0, 3.0):  # a pick and none (one H100 reads the 16 GB of weights in more than 3 ms)
        full, judged = _search(True, itl_ms), _search(False, itl_ms)
        assert judged.chosen == full.chosen
        assert (full.chosen is None) == (itl_ms == 3.0)
        assert all(c.bounds is not None for c in full.candidates)  # the control: the full search prices them
        assert all(c.bounds is None for c in judged.candidates)
        without = [c.model_dump(exclude={"bounds"}) for c in judged.candidates]
        assert without == [c.model_dump(exclude={"bounds"}) for c in full.candidates]  # every other figure equal


def test_a_step_timed_with_kept_prices_equals_one_timed_afresh():
    model = get_preset("llama-3-8b")
    case = ServingCase(model=model, isl=1024, osl=128, concurrency=8, tp=2)
    profile = prior_profile(resolve_target("h100").target)
    stepper = Stepper(case, profile)
    shapes = [(decode_shape(8, 1088),), (prefill_shape(1024, context=0), decode_shape(7, 1088))]
    for _ in range(2):  # the second pass reads the kept prices and totals
        for step in shapes:
            ops = stepper.ops(*step)
            host = profile.sequence_overhead_s * sum(shape.sequences for shape in step)
            assert stepper.step(*step) == step_time(ops, profile, tp=2, host_s=host)
    ceiling = datasheet_profile(resolve_target("h100").target)
    assert stepper.on(ceiling) is stepper.on(ceiling)  # one stepper a profile: its prices are kept
    host = ceiling.sequence_overhead_s * 8
    assert stepper.on(ceiling).step(*shapes[0]) == step_time(stepper.ops(*shapes[0]), ceiling, tp=2, host_s=host)
    ops = stepper.ops(*shapes[1])
    assert op_totals(ops) == (
        sum(op.count * op.bytes for op in ops), sum(op.count * op.flops for op in ops),
        sum(op.count * op.kernels for op in ops),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("preset", "target", "engine", "tp"),
    [
        ("llama-3-8b", "h100", None, 1),  # vLLM 0.21's pool, one group
        ("gemma-3-27b", "2xa100", "vllm@0.10", 2),  # V1's hybrid allocator: sliding and full groups
        ("jamba-mini-1.5", "4xh100", None, 4),  # Mamba state groups
        ("deepseek-v2-lite", "h100", "sglang", 1),  # MLA under SGLang's fraction
        ("llama-3-8b", "h100", "trtllm", 1),
    ],
)
def test_a_memory_plan_at_another_load_equals_one_planned_afresh(preset, target, engine, tp):
    model, resolved = get_preset(preset), resolve_target(target)
    deployment = merge_deployment(None, model=model, seq_len=4096, tp=tp, target=target, engine=engine)
    one = resolved.model_copy(update={"n_devices": tp})  # one replica, as a layout plans it

    def planned(batch: int) -> MemoryPlan:
        kv = kv_footprint(model, seq_len=4096, batch=batch, kv_dtype=deployment.kv_dtype, tp=tp)
        return plan_memory(one, model=model, kv=kv, weight_dtype=deployment.weight_dtype, deployment=deployment)

    first = planned(1)
    for batch in (3, 64, 100_000):  # fits, and (the last) more than the pool admits
        kv = kv_footprint(model, seq_len=4096, batch=batch, kv_dtype=deployment.kv_dtype, tp=tp)
        again = at_load(first, kv)
        assert again == planned(batch)
        assert again.kv_bytes_per_device != first.kv_bytes_per_device  # the control: the load moved something
        assert again.engine.notes is not first.engine.notes  # its own notes, to add to
    assert at_load(first, kv).fits is False and first.fits is True
