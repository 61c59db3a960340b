"""A batch in flight under pipeline parallelism, the clock of the stages it goes through, and what the pipelined
loops (``core.serve.pipelined``, ``core.serve.pipelined_groups``) read and drive of one simulation. Pure Python."""

from typing import Any, NamedTuple, Protocol

from mha_cli.core.serve.cohort import Cohort
from mha_cli.core.serve.recv_interval import RecvSkipper
from mha_cli.core.serve.schedulers import EngineState
from mha_cli.core.serve.step_cost import StepCost


class SimulatedRun(Protocol):
    """What the pipelined loop reads and drives of one simulation (``core.serve.simulate._Run``, which calls it: a
    protocol, so that the two modules do not import each other)."""

    prompts: list[int]
    outputs: list[int]
    limits: Any
    """``simulate.EngineLimits``: the loop reads its ``engine``."""
    cost: StepCost
    state: EngineState
    client: Any
    """``simulate._Client``: the loop asks it to ``send``."""
    now: float
    finished: int
    steps: int
    last: list[float]
    gaps: dict[float, int]
    recv: RecvSkipper
    """SGLang's receive interval: told of each batch sent."""
    windowed: bool
    """Whether the pool is counted in vLLM's windowed groups (``simulate.windowed``)."""

    def admit(self) -> None: ...

    def emit(self, request: int) -> bool: ...

    def after_step(self, ended: list[int], keep_trace: bool) -> None: ...

    def idle_until_next_event(self, why: str) -> None: ...


class Batch(NamedTuple):
    """One batch in flight: its decodes, its prefill chunks ((request, its tokens computed once the chunk is)) and
    when its last stage ends it."""

    decodes: list[int]
    chunks: list[tuple[int, int]]
    done: float
    micro_batch: int = 0
    """SGLang: the micro-batch it is (0 elsewhere)."""
    cohort: Cohort | None = None
    """vLLM's decoding requests sent as one group, beside ``decodes`` (``core.serve.pipelined_groups``)."""
    since: float = 0.0
    """When the group's members sampled their last token, seconds."""


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


def send_batch(
    run: SimulatedRun, clock: StageClock, rows: int, context: int, decodes: list[int], chunks: list[tuple[int, int]],
    *, micro_batch: int = 0, cohort: Cohort | None = None, since: float = 0.0,
) -> Batch:  # fmt: skip
    """Send one scheduled batch of ``rows`` decodes at mean ``context`` (those of ``decodes`` and a group's) and
    prefill ``chunks``: the host's part on the engine's thread, then the stages; the tokens of ``decodes`` and
    ``chunks`` counted as computed (vLLM's ``_update_after_schedule``), and those now waiting for a sample marked
    busy (a group's members are its ``Cohort``'s to count)."""
    state = run.state
    computed = state.computed
    if rows and not chunks:
        host, stages = run.cost.decode_stages(rows, context)
    else:
        host, stages = run.cost.stage_seconds(rows, context, [(tokens, computed[r]) for r, tokens in chunks])
    run.now += host + state.take_load()
    run.steps += 1
    run.recv.step(prompt=bool(chunks))
    for request in decodes:
        computed[request] += 1
    state.busy.update(decodes)
    reached = []
    for request, tokens in chunks:
        computed[request] += tokens
        reached.append((request, computed[request]))
        if computed[request] >= state.known(request):
            state.busy.add(request)
    return Batch(decodes, reached, clock.run(run.now, stages), micro_batch, cohort, since)
