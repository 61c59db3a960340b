"""The decoding requests of a vLLM replica advanced together, so that a step costs the simulator the requests that
start, end or change (a prefill chunk, a finish), not every running request.

Under vLLM's scheduler, a step whose running requests' tokens all fit the budget and the pool gives every running
request all it asks for, whatever their order: each decoding request one token. A member of the cohort is such a
request: what it has computed and generated is what it had when it joined plus the steps since (the cohort's
``clock``); it needs a new block in the steps where its computed tokens reach a multiple of the block size, which
the members' phases (their offsets modulo the block size) count in one lookup; it ends at a clock value known when
it joins (a heap). ``materialise`` writes a member's true state back into the engine's arrays, for a finish or for
a step the exact scheduler must run (the budget or the pool too small for everyone). Pure Python.
"""

import heapq

from mha_cli.core.serve.schedulers import EngineState, vllm_admit


class Cohort:
    """Decoding requests, each one token a step, tracked by when they joined (see the module docstring)."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self.clock = 0
        """Steps the cohort has advanced."""
        self.joined: dict[int, int] = {}
        """Member -> the clock when it joined (its computed and generated tokens were then the engine's arrays')."""
        self.phases = [0] * state.block_size
        """Members by (computed tokens - clock at join) modulo the block size."""
        self.offsets = 0
        """Sum over members of (computed tokens at join - clock at join): their contexts sum to this + n x clock."""
        self.ending: list[tuple[int, int]] = []
        """(clock after which the member has all its output, member): a heap; entries of left members are skipped."""

    def __len__(self) -> int:
        return len(self.joined)

    def __contains__(self, request: int) -> bool:
        return request in self.joined

    def join(self, request: int) -> None:
        """``request`` (decoding, its arrays current, holding the blocks of its computed tokens) joins."""
        state = self.state
        offset = state.computed[request] - self.clock
        self.joined[request] = self.clock
        self.phases[offset % state.block_size] += 1
        self.offsets += offset
        remaining = state.outputs[request] - state.generated[request]
        heapq.heappush(self.ending, (self.clock + remaining, request))

    def context_sum(self) -> int:
        """The members' computed tokens before this step, summed."""
        return self.offsets + len(self.joined) * self.clock

    def new_blocks(self) -> int:
        """Members whose next token starts a block: computed tokens a multiple of the block size."""
        return self.phases[-self.clock % self.state.block_size]

    def advance(self) -> list[int]:
        """One step: every member computed one token and sampled the next. The members that now have all their
        output, materialised and out of the cohort."""
        self.clock += 1
        ended = []
        while self.ending and self.ending[0][0] <= self.clock:
            _, request = heapq.heappop(self.ending)
            if request in self.joined:
                self.materialise(request)
                ended.append(request)
        return ended

    def materialise(self, request: int) -> None:
        """Write ``request``'s progress back into the engine's arrays and take it out of the cohort."""
        state = self.state
        since = self.clock - self.joined.pop(request)
        offset = state.computed[request] - (self.clock - since)
        self.phases[offset % state.block_size] -= 1
        self.offsets -= offset
        state.computed[request] += since
        state.generated[request] += since
        state.held[request] = state.blocks_for(state.computed[request])

    def materialise_all(self) -> None:
        for request in list(self.joined):
            self.materialise(request)
        self.ending.clear()


def schedule_together(state: EngineState, cohort: Cohort, loose: list[int]) -> list[tuple[int, int]] | None:
    """vLLM's step over ``cohort`` and the ``loose`` requests (running, outside it: a prompt in chunks, a decode),
    when every one's tokens fit the budget (a decode's draft tokens counted, as ``_vllm`` counts them) and the pool
    holds their blocks, so that their order does not matter: their blocks taken, then the waiting requests
    ``vllm_admit`` takes with the budget left. (request, tokens) of the loose and the admitted ones, the cohort's
    members each one token; None, having changed nothing, when they do not all fit, or when a member's new block
    would change the prefix cache (``recaches_at_allocation``: the exact scheduler's ``grow`` does that, the cohort
    counts blocks only)."""
    computed, prompts, generated, held = state.computed, state.prompts, state.generated, state.held
    needs = [(r, prompts[r] + generated[r] - computed[r]) for r in loose]
    per_decode = state.decode_tokens
    total = len(cohort) * per_decode + sum(
        per_decode if tokens == 1 and computed[r] >= prompts[r] else tokens for r, tokens in needs
    )  # fmt: skip
    if total > state.budget:
        return None
    new_blocks = cohort.new_blocks()
    if new_blocks and recaches_at_allocation(state):
        return None
    if new_blocks + sum(max(0, state.blocks_for(computed[r] + t) - held[r]) for r, t in needs) > state.free_blocks:
        return None
    state.free_blocks -= new_blocks
    state.evict_unreferenced()
    size = state.block_size
    for request, tokens in needs:
        if tokens == 1 and computed[request] >= prompts[request] and computed[request] % size:
            continue  # a decode inside its last block: ``_vllm`` skips it (vLLM's allocate_slots takes no block there
            # and caches none of the prefix's, cached already: review 317 #3)
        state.grow(request, computed[request] + tokens)
    return needs + vllm_admit(state, state.budget - total)


def recaches_at_allocation(state: EngineState) -> bool:
    """Whether a decoding request's new block can change the prefix cache: vLLM with a shared prefix caches at
    allocation (``EngineState.cache_prefix`` from ``grow``), which stores the request's prefix back in a host tier,
    or restores the one prefix's blocks evicted below its whole blocks."""
    if not state.cache_at_allocation:
        return False
    return state.tiers is not None or state.prefix_cached < state.prefix_len // state.block_size * state.block_size
