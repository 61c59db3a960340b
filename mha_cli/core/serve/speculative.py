"""The serving loop under speculative decoding: the tokens a decoding request keeps each step, and the slots it holds.

The simulator steps the engine as it is: each step's decodes verify k + 1 tokens each and the drafter runs for them
(``core.serve.step_cost``). A decoding request keeps T of them a step on average (the acceptance length), and its
cache, its context and its output grow by what it keeps, as the engine's do. ``AcceptedTokens`` deals them out in
whole tokens: after s decode steps a request has 1 + floor(s x T) tokens (its first came with its prompt), so each
step keeps floor(T) or ceil(T) of them, T on average.

A step's kept tokens reach the client as one chunk: ``vllm bench serve`` appends one gap per chunk (its streaming
clients, ``benchmarks/lib/endpoint_request_func.py``), so the simulated ITL is the step's time, about T x the TPOT;
TPOT is (e2e - TTFT) / (output tokens - 1) over the real tokens.

The slots a decode step holds: vLLM allocates its 1 + k scheduled tokens and ``num_lookahead_tokens`` more, k for
eagle, eagle3, mtp and draft_model, for a running request, the rejected ones kept to be written over
(``Scheduler.schedule``, ``allocate_slots(..., num_lookahead_tokens=...)``, ``v1/core/sched/scheduler.py`` 0.21.0),
and from 0.23.0 for a waiting one it admits too (``EngineState.admission_lookahead``; 0.21-0.22 gave it none); V0
appends k lookahead slots to its one token. SGLang and TensorRT-LLM are priced at the kept tokens (SGLang
frees a verification's rejected slots; TensorRT-LLM reserves a request's whole prompt and output at admission). A
preempted request's drafts are cleared (``Scheduler._preempt_request``): back as a decode, its first step keeps 1
token (``EngineState.undrafted``). Not modelled: vLLM's asynchronous scheduler (on by default for eagle, eagle3 and
mtp in 0.21.0) counts the previous step's 1 + k tokens computed before they are verified, so a request holds up to
k + 1 - T more slots (review 328 #2); a budget that cuts a decode's drafts still keeps T. Pure Python.
"""

from bisect import bisect_left

MILLI = 1000
"""T is kept in thousandths of a token, so that every count is integer arithmetic (and the same in every path)."""


class AcceptedTokens:
    """The tokens each decoding request keeps per step at acceptance length T: 1 + floor(s x T) after s steps."""

    def __init__(self, acceptance_length: float, requests: int) -> None:
        if acceptance_length < 1:
            raise ValueError(f"an acceptance length is at least 1 token a step, not {acceptance_length}")
        self.milli = round(acceptance_length * MILLI)
        """T in thousandths of a token."""
        self.steps = [0] * requests
        """Decode steps each request has run."""

    def after(self, request: int, steps: int, left: int) -> int:
        """Tokens ``request`` keeps over its next ``steps`` decode steps, at most the ``left`` it still needs."""
        done, milli = self.steps[request], self.milli
        return min(left, (done + steps) * milli // MILLI - done * milli // MILLI)

    def take(self, request: int, left: int) -> int:
        """``request`` runs one decode step: the tokens it keeps (at most ``left``)."""
        kept = self.after(request, 1, left)
        self.steps[request] += 1
        return kept

    def steps_to(self, request: int, left: int) -> int:
        """Decode steps ``request`` runs until it has kept the ``left`` tokens it still needs (at least 1)."""
        done, milli = self.steps[request], self.milli
        # the least s with (done + s) x T >= left + floor(done x T), in thousandths
        return max(1, -(-((left + done * milli // MILLI) * MILLI) // milli) - done)

    def residues(self, requests: list[int]) -> list[int]:
        """The thousandths of a token past a whole one each of ``requests`` has kept, sorted (``kept_together``)."""
        milli = self.milli
        return sorted(self.steps[r] * milli % MILLI for r in requests)

    def kept_together(self, residues: list[int], steps: int) -> int:
        """The tokens requests with these ``residues`` keep together over their next ``steps`` steps, none of them
        ending: each floor(steps x T), and one more where its residue and steps x T's part pass a whole token."""
        whole, part = divmod(steps * self.milli, MILLI)
        return len(residues) * whole + len(residues) - bisect_left(residues, MILLI - part)
