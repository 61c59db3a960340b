"""One disaggregated worker (``core.cost.disaggregated_layouts.WorkerLayout``: tp GPUs, or dp data-parallel attention
ranks of tp GPUs each): its engine plan and its steps, as a prefill worker and as a decode worker.

A worker is the engine ``mha plan --tp N`` (or ``--dp N``) sizes on its GPUs (``core.cost.plan.LayoutPlans``: its KV
pool, chunk budget, what it admits; over several nodes, its collectives between them priced by ``core.cost.nodes``),
timed on the device profile (``core.cost.stepper``). Under DP attention each of its dp ranks runs its own requests
and the ranks step together, so a step is one rank's at its share of the requests and the worker serves dp times
what one rank does:

- a *prefill worker* runs prompts only: one prompt alone takes its chunked prefill; at full load one step holds
  budget // prompt prompts (at most ``max_num_seqs``; 1 when the prompt is chunked) on each rank: its capacity is dp
  x those prompts over that step's time;
- a *decode worker* holds the cache and runs decode steps at its batch b (at most what its pool admits) at the mean
  context isl + osl / 2 (b on each rank), no prefill chunks among them: ITL = step(b), and it serves
  dp x b / (osl x step(b)) requests/s.
  Its goodput: the largest batch whose step is within ``--itl-ms``, at most ``MAX_LOAD`` of its capacity.

Pure Python.
"""

from __future__ import annotations

import math

from mha_cli.core.cost.goodput import MAX_LOAD
from mha_cli.core.cost.nodes import node_notes
from mha_cli.core.cost.plan import LayoutPlans, serving_case
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.stepper import Stepper, chunked_prefill
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec


class PrefillWorker(Record):
    """One prefill worker of tp x dp GPUs."""

    tp: int
    """GPUs of each data-parallel rank (the whole worker when ``dp`` is 1)."""
    dp: int
    """DP attention ranks (1: a tensor-parallel worker)."""
    gpus: int
    nodes: int
    """Nodes the worker spans."""
    weight_bytes_per_gpu: int
    prompt_ms: float
    """One prompt alone: its chunked prefill."""
    prompts_per_step: int
    """Prompts one step runs at full load: the chunk budget // the prompt, at most max_num_seqs (1 if it is chunked)."""
    capacity_rps: float
    """Prompts/s at full load, all its ranks: dp x prompts_per_step / that step's time."""
    chunk_tokens: int
    gpu_memory_utilization: float
    """The engine's memory fraction its pool was priced at (SGLang's default lowers it under DP attention)."""


class DecodeWorker(Record):
    """One decode worker of tp x dp GPUs: it holds the cache."""

    tp: int
    """GPUs of each data-parallel rank (the whole worker when ``dp`` is 1)."""
    admitted: int
    """Requests of isl + osl tokens one rank's KV pool (and max_num_seqs) admits at once."""
    capacity_rps: float
    """At ``admitted`` running on each rank: dp x admitted / (osl x step)."""
    goodput_batch: int
    """The largest batch (on each rank) whose step is within --itl-ms (0: not even one), at most the MAX_LOAD share
    of capacity."""
    goodput_rps: float
    step_ms: float
    """The decode step at ``goodput_batch`` (the ITL it serves at)."""
    dp: int
    """DP attention ranks (1: a tensor-parallel worker)."""
    gpus: int
    nodes: int
    weight_bytes_per_gpu: int
    """Weights one GPU holds (under DP attention: the attention whole, the routed experts split over every GPU)."""
    gpu_memory_utilization: float
    """The engine's memory fraction its pool was priced at (SGLang's default lowers it under DP attention)."""


class WorkerSteps:
    """One worker's engine plan and steps on its tp x dp devices (both roles share them: the same launch line but
    for the connector)."""

    def __init__(self, plans: LayoutPlans, deployment: DeploymentSpec, profile: DeviceProfile, isl: int, osl: int):
        first = plans.at(1)
        self.engine = first.memory.engine
        self.weight_bytes_per_gpu = first.memory.weight_bytes_per_device
        self.dp = plans.replicas if plans.experts is not None and plans.experts.dp_attention else 1
        self.nodes = plans.target.n_nodes
        case = serving_case(plans.model, deployment, first.memory, isl=isl, osl=osl, concurrency=1, pp=1,
                            replicas=self.dp, experts=plans.experts, nodes=plans.nodes)  # fmt: skip
        self.case, self.tp, self.isl, self.osl = case, plans.tp, isl, osl
        self.stepper = Stepper(case, profile)
        self.node_notes: list[str] = []
        """What its collectives between nodes were priced on (``core.cost.nodes.node_notes``); none inside a node."""
        if plans.nodes is not None and self.stepper.spans is not None:
            self.node_notes = node_notes(plans.nodes, self.stepper.spans, plans.tp, 1, plans.tp * self.dp)
        self._steps: dict[int, float] = {}
        self._prefills: dict[int, float] = {}

    def decode_step(self, batch: int) -> float:
        """One decode step of ``batch`` sequences at the mean context (s)."""
        if batch not in self._steps:
            context = self.isl + self.osl // 2
            self._steps[batch] = self.stepper.step(decode_shape(batch, context)).seconds
        return self._steps[batch]

    def decode_rps(self, batch: int) -> float:
        """Requests/s the worker serves with ``batch`` running on each rank."""
        return self.dp * batch / (self.osl * self.decode_step(batch))

    def batch_at(self, rps: float) -> int:
        """The fewest running requests on each rank that serve ``rps`` (Little's law: dp x b = rps x osl x step(b)),
        at most admitted. Requests/s is not monotone in the batch (the step jumps at each 16-row GEMM tile, so a
        batch just past a jump serves fewer than the one before it: no bisection); the step never shrinks as the batch
        grows, so no batch below rps x osl x step(b) / dp serves it once b does not: the walk jumps there."""
        admitted = self.engine.admitted_per_replica
        batch = 1
        while batch <= admitted:
            if self.decode_rps(batch) >= rps:
                return batch
            batch = max(batch + 1, math.ceil(rps * self.osl * self.decode_step(batch) / self.dp))
        return admitted

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
        return PrefillWorker(tp=self.tp, dp=self.dp, gpus=self.tp * self.dp, nodes=self.nodes,
                             weight_bytes_per_gpu=self.weight_bytes_per_gpu,
                             prompt_ms=self.prefill_seconds(1) * 1e3, prompts_per_step=per_step,
                             capacity_rps=self.dp * per_step / self.prefill_seconds(per_step),
                             chunk_tokens=self.engine.max_num_batched_tokens,
                             gpu_memory_utilization=self.engine.gpu_memory_utilization)  # fmt: skip

    def decode(self, itl_s: float | None) -> DecodeWorker:
        admitted = self.engine.admitted_per_replica
        capacity = self.decode_rps(admitted)
        batch = self.largest_batch_within(itl_s)
        if batch and self.decode_rps(batch) > MAX_LOAD * capacity:
            batch = self.batch_at(MAX_LOAD * capacity)
        goodput = min(self.decode_rps(batch), MAX_LOAD * capacity) if batch else 0.0
        return DecodeWorker(tp=self.tp, dp=self.dp, gpus=self.tp * self.dp, nodes=self.nodes,
                            weight_bytes_per_gpu=self.weight_bytes_per_gpu, admitted=admitted, capacity_rps=capacity,
                            goodput_batch=batch, goodput_rps=goodput,
                            step_ms=self.decode_step(max(batch, 1)) * 1e3,
                            gpu_memory_utilization=self.engine.gpu_memory_utilization)  # fmt: skip
