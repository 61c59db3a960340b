"""vLLM's pipelined loop with each batch's decoding requests advanced as a cohort, so that a batch costs the simulator
the requests that start, end or change, not every running request: the pipelined form of ``_Run.aggregate_step``.

Under pipeline parallelism vLLM runs up to pp batches at once (``core.serve.pipelined``). A request whose token is in
flight is skipped until it comes back, so the requests of the batch that just landed are those free to run, with any
prompt still in chunks: when their tokens all fit the step's budget and the pool, the scheduler gives each what it
asks, whatever their order, and they go out again together. Each batch's decoding requests are then one group, a
``core.serve.cohort.Cohort``: its clock advances when the batch lands (a member's computed and generated tokens, one
each a round trip), its new blocks are counted when it is sent, its members' last token came when it last landed
(their gaps are one figure), and a member ends at a clock value known when it joined. A turn where the order
matters (the budget or the pool too small: a truncation or a preemption) writes every group back into the engine's
arrays (``leave``) and the exact scheduler runs it. Pure Python.
"""

from collections import deque
from collections.abc import Callable

from mha_cli.core.serve.cohort import Cohort, schedule_together
from mha_cli.core.serve.in_flight import Batch, SimulatedRun, StageClock, send_batch

NOTHING_TO_SEND = "nothing to send"
"""What ``Groups.send`` returns for a turn with no request free to run and none admitted (nothing changed)."""


class Groups:
    """The groups of one pipelined vLLM run (see the module docstring)."""

    def __init__(self, run: SimulatedRun) -> None:
        self.run = run
        self.landed: Cohort | None = None
        """The group of the batch that landed last: free to run at the next turn."""
        self.landed_at = 0.0
        """When it landed (its members' last token), seconds."""
        self.loose: list[int] = []
        """The other requests free to run (a prompt still in chunks), in the running order."""
        self.resync = True
        """Whether ``loose`` must be read again from the engine's arrays (after an exact turn)."""

    def send(self, clock: StageClock) -> Batch | str | None:
        """The next batch, sent: the landed group and the loose requests, then the waiting ones ``vllm_admit``
        takes. ``NOTHING_TO_SEND`` when none is free or admitted; None, having changed nothing, when the exact
        scheduler must run the turn."""
        run = self.run
        state = run.state
        computed, prompts = state.computed, state.prompts
        if self.resync:  # every request in flight is ``busy``: no group is in flight after an exact turn
            landed = self.landed
            self.loose = [r for r in state.running if r not in state.busy and (landed is None or r not in landed)]
            self.resync = False
        cohort = self.landed if self.landed is not None else Cohort(state)
        needs = schedule_together(state, cohort, self.loose)
        if needs is None:
            return None
        if not needs and not len(cohort):
            return NOTHING_TO_SEND
        decodes = [r for r, tokens in needs if tokens == 1 and computed[r] >= prompts[r]]
        chunks = [(r, tokens) for r, tokens in needs if not (tokens == 1 and computed[r] >= prompts[r])]
        rows = len(cohort) + len(decodes)
        context = (cohort.context_sum() + sum(computed[r] for r in decodes)) // rows if rows else 0
        group = cohort if len(cohort) else None
        batch = send_batch(run, clock, rows, context, decodes, chunks, cohort=group, since=self.landed_at)
        # a prompt whose chunk did not end it is free: its next chunk may go in the next batch
        self.loose = [r for r, reached in batch.chunks if reached < state.known(r)]
        self.landed = None
        return batch

    def land(self, batch: Batch, land_exact: Callable[[SimulatedRun, Batch], list[int]]) -> list[int]:
        """The engine takes ``batch``'s output now: its group's members sample a token each; its other requests
        as ``land_exact`` (``pipelined._land``) lands them, then those decoding join the group, free to run. The
        requests it ended."""
        run, state = self.run, self.run.state
        now = run.now
        if self.landed is not None and len(self.landed):  # a group left unsent: its members run as loose ones
            self.loose += self._write_back(self.landed, self.landed_at)
        ended: list[int] = []
        cohort = batch.cohort
        if cohort is not None:
            gap = now - batch.since
            run.gaps[gap] = run.gaps.get(gap, 0) + len(cohort)
            for request in cohort.advance():
                run.last[request] = now
                ended.append(request)
        else:
            cohort = Cohort(state)
        prompt_ends = [r for r, reached in batch.chunks if reached >= state.known(r) and r in state.busy]
        exact_ended = land_exact(run, batch)
        ended += exact_ended
        gone = set(exact_ended)
        for request in batch.decodes + prompt_ends:
            if request not in gone:
                cohort.join(request)
        self.landed, self.landed_at = cohort, now
        return ended

    def leave(self, flight: deque[Batch]) -> None:
        """Back to the exact scheduler for a turn: every group's progress written back into the engine's arrays,
        a group in flight as the exact loop leaves a batch in flight (its token counted as computed, its blocks
        held, its members ``busy``)."""
        state = self.run.state
        if self.landed is not None:
            self._write_back(self.landed, self.landed_at)
            self.landed = None
        for index, batch in enumerate(flight):
            if batch.cohort is None:
                continue
            members = self._write_back(batch.cohort, batch.since)
            for request in members:
                state.computed[request] += 1  # the token in flight
                state.held[request] = state.blocks_for(state.computed[request])
            state.busy.update(members)
            flight[index] = batch._replace(decodes=batch.decodes + members, cohort=None)
        self.resync = True

    def _write_back(self, cohort: Cohort, last_token_at: float) -> list[int]:
        """``cohort``'s members' progress into the engine's arrays, each one's last token at ``last_token_at``; the
        members, now out of it."""
        members = list(cohort.joined)
        for request in members:
            self.run.last[request] = last_token_at
        cohort.materialise_all()
        return members
