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
  own running batch (``running_mbs``); the loop schedules micro-batch k (``get_next_batch_to_run``), runs it, then
  receives and processes the output of micro-batch k + 1, the oldest in flight, which it schedules next. A request
  stays in the micro-batch whose prefill batch ran its prompt's last chunk (``scheduler.py``,
  ``get_next_batch_to_run``: a micro-batch's last prefill batch is merged into its own running batch) and decodes
  only in that micro-batch's turn (``MicroBatches``); the chunked request is the scheduler's one, whichever turn.
- **TensorRT-LLM**: a micro-batch scheduled for each ``microbatch_id`` in turn (``_torch/pyexecutor/py_executor.py``,
  ``PyExecutor._executor_loop_pp``, as ``core.cost.serving.micro_batch_steps`` reads it); not read further here, it
  is run as vLLM's is (a request free once its batch's output is back).

The timing: the engine's host part of a batch (its step overhead and per-sequence overhead) runs on the engine's
thread, one batch after another; then the batch goes through the stages in order, each stage running one batch at a
time in the order they came (``StepCost.stage_seconds``: a stage's layers, its send to the next stage). The tokens a
batch samples arrive when the engine takes its output (at its end at the earliest). With pp balanced batches of
b / pp decodes each, a request's token comes every host + all stages' time of b / pp rows: the closed form's step
(``core.cost.serving``). Pure Python.
"""

from collections import deque

from mha_cli.core.serve.in_flight import Batch, SimulatedRun, StageClock, send_batch
from mha_cli.core.serve.pipelined_groups import Groups
from mha_cli.core.serve.schedulers import EngineState, schedule


class MicroBatches:
    """SGLang's micro-batches (see the module docstring): which one each request decodes in, and whose turn it is."""

    def __init__(self, depth: int) -> None:
        self.depth, self.turn = depth, 0
        self.home: dict[int, int] = {}
        """Request -> the micro-batch it joined (its prompt's last chunk ran in that one's prefill batch)."""
        self.members: list[set[int]] = [set() for _ in range(depth)]
        """The requests each micro-batch was joined by (some since ended, retracted or gone elsewhere: ``scope``)."""
        self.prefilling: set[int] = set()
        """Requests a batch sent a chunk of that did not end their prompt (some since retracted)."""

    def scope(self, state: EngineState) -> list[int]:
        """The running requests whose turn it is, in the running order: those of this micro-batch and those still in
        their prompt's chunks (in none). Sought among the micro-batch's members and the prefilling requests, not
        over every running request: a turn costs its micro-batch's rows, not all pp micro-batches' (an SGLang plan of
        Llama-3-70B at pp 4 took 52 s)."""
        turn, home, computed, prompts, held = self.turn, self.home, state.computed, state.prompts, state.held
        members = self.members[turn] = {r for r in self.members[turn] if held[r] and home[r] == turn}
        self.prefilling = {r for r in self.prefilling if held[r]}
        ours = [
            r for r in members | self.prefilling
            if held[r] and (home.get(r, turn) == turn or computed[r] < prompts[r])
        ]  # fmt: skip
        return sorted(ours, key=state.order.__getitem__)

    def sent(self, batch: Batch, state: EngineState) -> None:
        """``batch`` went in this turn: the requests whose prompt it ends join this micro-batch; the next turn."""
        for request, reached in batch.chunks:
            if reached >= state.known(request):
                self.home[request] = batch.micro_batch
                self.members[batch.micro_batch].add(request)
                self.prefilling.discard(request)
            else:
                self.prefilling.add(request)
        self.turn = (self.turn + 1) % self.depth


def run_pipelined(run: SimulatedRun, keep_trace: bool, skip_repeated_steps: bool = True) -> None:
    """``run`` to its end with up to pp batches in flight (see the module docstring). ``skip_repeated_steps``:
    vLLM's decoding requests go as groups (``core.serve.pipelined_groups``) where the pool is not windowed."""
    state, cost, engine = run.state, run.cost, run.limits.engine
    depth = cost.pp
    clock = StageClock(depth)
    flight: deque[Batch] = deque()
    micro = MicroBatches(depth) if engine == "sglang" else None
    groups = Groups(run) if skip_repeated_steps and engine == "vllm" and not run.windowed else None
    run.client.send(run.now)
    while run.finished < len(run.prompts):
        run.admit()
        if len(flight) < depth and (state.running or state.waiting):
            batch = groups.send(clock) if groups is not None else None
            if batch is None:
                if groups is not None:
                    groups.leave(flight)
                decodes, chunks = _schedule_turn(run, micro)
                if decodes or chunks:
                    batch = _launch(run, clock, decodes, chunks, 0 if micro is None else micro.turn)
            sent = isinstance(batch, Batch)
            if sent:
                flight.append(batch)
            if micro is not None:  # SGLang's loop moves on to the next micro-batch, run or not
                micro.sent(flight[-1] if sent else Batch([], [], run.now, micro.turn), state)
            if sent and len(flight) < depth and flight[0].done > run.now:
                continue  # the queue is not full: schedule another batch before waiting on the oldest
        if flight:
            batch = flight.popleft()
            run.now = max(run.now, batch.done)
            if micro is not None:
                micro.turn = batch.micro_batch  # its output processed, it is scheduled next
            run.after_step(_land(run, batch) if groups is None else groups.land(batch, _land), keep_trace)
            continue
        run.idle_until_next_event(
            f"{engine} admits none of the waiting requests into an empty pool: give it more KV memory"
        )


def _schedule_turn(run: SimulatedRun, micro: MicroBatches | None) -> tuple[list[int], list[tuple[int, int]]]:
    """The engine's scheduler on the requests free to run: not in a batch in flight, and under SGLang of the
    micro-batch whose turn it is."""
    state = run.state
    if micro is None:
        return schedule(run.limits.engine, state)
    state.scope = micro.scope(state)
    state.scope_set = set(state.scope)
    try:
        return schedule(run.limits.engine, state)
    finally:
        state.scope = state.scope_set = None


def _launch(
    run: SimulatedRun, clock: StageClock, decodes: list[int], chunks: list[tuple[int, int]], micro_batch: int
) -> Batch:
    """Send one scheduled batch (``in_flight.send_batch``), its decodes at their mean context."""
    computed = run.state.computed
    context = sum(map(computed.__getitem__, decodes)) // len(decodes) if decodes else 0
    return send_batch(run, clock, len(decodes), context, decodes, chunks, micro_batch=micro_batch)


def _land(run: SimulatedRun, batch: Batch) -> list[int]:
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
