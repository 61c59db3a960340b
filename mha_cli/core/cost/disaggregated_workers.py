"""One disaggregated worker of ``tp`` GPUs: its engine plan and its steps, as a prefill worker and as a decode worker.

A worker is the engine ``mha plan --tp N`` sizes on N GPUs (``core.cost.plan.LayoutPlans``: its KV pool, chunk
budget, what it admits), timed on the device profile (``core.cost.stepper``):

- a *prefill worker* runs prompts only: one prompt alone takes its chunked prefill; at full load one step holds
  budget // prompt prompts (at most ``max_num_seqs``; 1 when the prompt is chunked): its capacity is those prompts
  over that step's time;
- a *decode worker* holds the cache and runs decode steps at its batch b (at most what its pool admits) at the mean
  context isl + osl / 2, no prefill chunks among them: ITL = step(b), and it serves b / (osl x step(b)) requests/s.
  Its goodput: the largest batch whose step is within ``--itl-ms``, at most ``MAX_LOAD`` of its capacity.

Pure Python.
"""

from __future__ import annotations

from mha_cli.core.cost.goodput import MAX_LOAD
from mha_cli.core.cost.plan import LayoutPlans, serving_case
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.stepper import Stepper, chunked_prefill
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.tensor_parallel import tp_shard_problem


class PrefillWorker(Record):
    """One prefill worker of ``tp`` GPUs."""

    tp: int
    prompt_ms: float
    """One prompt alone: its chunked prefill."""
    prompts_per_step: int
    """Prompts one step runs at full load: the chunk budget // the prompt, at most max_num_seqs (1 if it is chunked)."""
    capacity_rps: float
    """Prompts/s at full load: prompts_per_step / that step's time."""
    chunk_tokens: int


class DecodeWorker(Record):
    """One decode worker of ``tp`` GPUs: it holds the cache."""

    tp: int
    admitted: int
    """Requests of isl + osl tokens its KV pool (and max_num_seqs) admits at once."""
    capacity_rps: float
    """At ``admitted`` running: admitted / (osl x step)."""
    goodput_batch: int
    """The largest batch whose step is within --itl-ms (0: not even one), at most the MAX_LOAD share of capacity."""
    goodput_rps: float
    step_ms: float
    """The decode step at ``goodput_batch`` (the ITL it serves at)."""


class WorkerSteps:
    """One worker's engine plan and steps on ``tp`` devices (both roles share them: the same launch line but for
    the connector)."""

    def __init__(self, plans: LayoutPlans, deployment: DeploymentSpec, profile: DeviceProfile, isl: int, osl: int):
        first = plans.at(1)
        self.engine = first.memory.engine
        case = serving_case(plans.model, deployment, first.memory, isl=isl, osl=osl, concurrency=1, pp=1, replicas=1,
                            experts=plans.experts)  # fmt: skip
        self.case, self.tp, self.isl, self.osl = case, plans.tp, isl, osl
        self.stepper = Stepper(case, profile)
        self._steps: dict[int, float] = {}
        self._prefills: dict[int, float] = {}

    def decode_step(self, batch: int) -> float:
        """One decode step of ``batch`` sequences at the mean context (s)."""
        if batch not in self._steps:
            context = self.isl + self.osl // 2
            self._steps[batch] = self.stepper.step(decode_shape(batch, context)).seconds
        return self._steps[batch]

    def decode_rps(self, batch: int) -> float:
        return batch / (self.osl * self.decode_step(batch))

    def batch_at(self, rps: float) -> int:
        """The fewest running requests that serve ``rps`` (Little's law: b = rps x osl x step(b)), at most admitted."""
        low, high = 1, self.engine.admitted_per_replica
        if self.decode_rps(high) < rps:
            return high
        while low < high:
            middle = (low + high) // 2
            low, high = (middle + 1, high) if self.decode_rps(middle) < rps else (low, middle)
        return low

    def largest_batch_within(self, itl_s: float | None) -> int:
        """The largest batch whose step is within ``itl_s`` (all it admits without a target; 0 if not one)."""
        admitted = self.engine.admitted_per_replica
        if itl_s is None or self.decode_step(admitted) <= itl_s:
            return admitted
        if self.decode_step(1) > itl_s:
            return 0
        low, high = 1, admitted  # step(low) within, step(high) not
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self.decode_step(middle) <= itl_s else (low, middle)
        return low

    @property
    def prompts_per_step(self) -> int:
        """Prompts one prefill step holds: the chunk budget // the prompt, at most max_num_seqs (1 when chunked)."""
        budget, computed = self.engine.max_num_batched_tokens, self.case.isl - self.case.cached_prefix
        return max(1, min(budget // computed, self.engine.max_num_seqs)) if computed <= budget else 1

    def prefill_seconds(self, prompts: int) -> float:
        """One prefill step of ``prompts`` prompts together (at most ``prompts_per_step``), or one prompt's chunked
        prefill (s)."""
        if prompts not in self._prefills:
            case, budget = self.case, self.engine.max_num_batched_tokens
            computed = case.isl - case.cached_prefix
            if prompts == 1:
                seconds, _ = chunked_prefill(self.stepper, computed, budget, [], start=case.cached_prefix)
            else:
                shape = prefill_shape(computed, sequences=prompts, context=case.cached_prefix)
                seconds = self.stepper.step(shape).seconds
            self._prefills[prompts] = seconds
        return self._prefills[prompts]

    def prefill(self) -> PrefillWorker:
        per_step = self.prompts_per_step
        return PrefillWorker(tp=self.tp, prompt_ms=self.prefill_seconds(1) * 1e3, prompts_per_step=per_step,
                             capacity_rps=per_step / self.prefill_seconds(per_step),
                             chunk_tokens=self.engine.max_num_batched_tokens)  # fmt: skip

    def decode(self, itl_s: float | None) -> DecodeWorker:
        admitted = self.engine.admitted_per_replica
        capacity = self.decode_rps(admitted)
        batch = self.largest_batch_within(itl_s)
        if batch and self.decode_rps(batch) > MAX_LOAD * capacity:
            batch = self.batch_at(MAX_LOAD * capacity)
        goodput = min(self.decode_rps(batch), MAX_LOAD * capacity) if batch else 0.0
        return DecodeWorker(tp=self.tp, admitted=admitted, capacity_rps=capacity, goodput_batch=batch,
                            goodput_rps=goodput, step_ms=self.decode_step(max(batch, 1)) * 1e3)  # fmt: skip


def worker_tps(model: ModelSpec, n_devices: int) -> list[int]:
    """Tensor-parallel degrees a worker may take: 1 to the devices, those that shard the model's heads."""
    return [tp for tp in range(1, n_devices + 1) if tp_shard_problem(model, tp) is None]
