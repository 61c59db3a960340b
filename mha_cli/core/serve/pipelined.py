"""The serving loop under pipeline parallelism: up to pp batches in flight, one on each stage, as the engines run
them.

Read in the engines' source:

- **vLLM V1** 0.11.0 (``vllm/v1/engine/core.py``, ``EngineCore.step_with_batch_queue``; the batch queue's size is
  the executor's ``max_concurrent_batches``, ``pipeline_parallel_size`` in ``v1/executor/multiproc_executor.py``):
  while the queue is not full the engine schedules a new batch and sends it without waiting; once it is full, or
  nothing more can be scheduled, it blocks on the oldest batch and updates the scheduler from its output. The
  scheduler advances a request's computed tokens when it schedules them (``Scheduler._update_after_schedule``), so
  a request whose batch is in flight has nothing left to compute and is skipped (``Scheduler.schedule``: "PP>1 and
  we have already scheduled all prompt tokens but they are not finished yet") until its token comes back, while a
  prompt's next chunk can go in the next batch.
- **SGLang** 0.5.5 (``srt/managers/scheduler_pp_mixin.py``, ``event_loop_pp``): ``pp_size`` micro-batches, each its
  own running batch; the loop schedules micro-batch k (``get_next_batch_to_run``), runs it, then receives and
  processes the output of micro-batch k + 1, the oldest in flight, which is scheduled next: the same order.
- **TensorRT-LLM** (``_torch/pyexecutor/py_executor.py``, ``PyExecutor._executor_loop_pp``): a micro-batch
  scheduled for each ``microbatch_id`` in turn, its requests out of the scheduler until its outputs return.

The timing: the engine's host part of a batch (its step overhead and per-sequence overhead) runs on the engine's
thread, one batch after another; then the batch goes through the stages in order, each stage running one batch at a
time in the order they came (``StepCost.stage_seconds``: a stage's layers, its send to the next stage). The tokens a
batch samples arrive when the engine takes its output (at its end at the earliest). With pp balanced batches of
b / pp decodes each, a request's token comes every host + all stages' time of b / pp rows: the closed form's step
(``core.cost.serving``). Pure Python.
"""

from collections import deque
from typing import TYPE_CHECKING, NamedTuple

from mha_cli.core.serve.schedulers import schedule

if TYPE_CHECKING:
    from mha_cli.core.serve.simulate import _Run


class Batch(NamedTuple):
    """One batch in flight: its decodes, its prefill chunks ((request, its tokens computed once the chunk is)) and
    when its last stage ends it."""

    decodes: list[int]
    chunks: list[tuple[int, int]]
    done: float


class StageClock:
    """When each pipeline stage is next free: batches go through the stages in order, one at a time on each."""

    def __init__(self, stages: int) -> None:
        self.free = [0.0] * stages

    def run(self, start: float, seconds: list[float]) -> float:
        """A batch sent at ``start`` that takes ``seconds`` on each stage: when its last stage ends it."""
        free, at = self.free, start
        for stage, spent in enumerate(seconds):
            at = max(at, free[stage]) + spent
            free[stage] = at
        return at


def run_pipelined(run: "_Run", keep_trace: bool) -> None:
    """``run`` to its end with up to pp batches in flight (see the module docstring)."""
    state, cost, engine = run.state, run.cost, run.limits.engine
    depth = cost.pp
    clock = StageClock(depth)
    flight: deque[Batch] = deque()
    run.client.send(run.now)
    while run.finished < len(run.prompts):
        run.admit()
        if len(flight) < depth and (state.running or state.waiting):
            decodes, chunks = schedule(engine, state)
            if decodes or chunks:
                flight.append(_launch(run, clock, decodes, chunks))
                if len(flight) < depth and flight[0].done > run.now:
                    continue  # the queue is not full: schedule another batch before waiting on the oldest
        if flight:
            batch = flight.popleft()
            run.now = max(run.now, batch.done)
            run.after_step(_land(run, batch), keep_trace)
            continue
        run.idle_until_next_event(
            f"{engine} admits none of the waiting requests into an empty pool: give it more KV memory"
        )


def _launch(run: "_Run", clock: StageClock, decodes: list[int], chunks: list[tuple[int, int]]) -> Batch:
    """Send one scheduled batch: the host's part on the engine's thread, then the stages; its requests' tokens
    counted as computed (vLLM's ``_update_after_schedule``), and those now waiting for a sample marked busy."""
    state = run.state
    computed = state.computed
    context = sum(computed[r] for r in decodes) // len(decodes) if decodes else 0
    shapes = [(tokens, computed[r]) for r, tokens in chunks]
    if decodes and not chunks:
        host, stages = run.cost.decode_stages(len(decodes), context)
    else:
        host, stages = run.cost.stage_seconds(len(decodes), context, shapes)
    run.now += host + state.take_load()
    run.steps += 1
    for request in decodes:
        computed[request] += 1
        state.busy.add(request)
    reached = []
    for request, tokens in chunks:
        computed[request] += tokens
        reached.append((request, computed[request]))
        if computed[request] >= state.known(request):
            state.busy.add(request)
    return Batch(decodes, reached, clock.run(run.now, stages))


def _land(run: "_Run", batch: Batch) -> list[int]:
    """The engine takes ``batch``'s output now: each request it ran to its last known token samples one. The
    requests it ended."""
    state, ended = run.state, []
    now, busy, generated, outputs, last, gaps = run.now, state.busy, state.generated, run.outputs, run.last, run.gaps
    for request in batch.decodes:  # ``_Run.emit`` for a decode (its first token came with its prompt), inlined
        busy.discard(request)
        generated[request] += 1
        gap = now - last[request]
        gaps[gap] = gaps.get(gap, 0) + 1
        last[request] = now
        if generated[request] >= outputs[request]:
            ended.append(request)
    for request, reached in batch.chunks:
        state.cache_prefix(reached, request)
        if reached >= state.known(request) and request in state.busy:  # a prompt's last chunk samples
            state.busy.discard(request)
            if run.emit(request):
                ended.append(request)
    return ended
