"""A step's seconds for the serving simulator: the cost model (``core.cost``), priced fast enough for thousands of
requests a second.

A step's operations split as ``core.cost.work`` writes them: ``layer_ops`` depend on the step's token count alone
(memoised per count, on a grid of 64 points an octave above ``EXACT_TOKENS`` and interpolated between them),
decode-only steps memoised every 32 tokens of context and interpolated,
``sequence_ops`` on each group's context and ``outside_ops`` on tokens and logits (both priced every step: a few
operations). The sum equals ``Stepper.step`` on the same shapes (tested), but for the grid's interpolation (within 0.5%: the
experts an MoE step touches bend most between two grid points).

Under pipeline parallelism ``stage_seconds`` splits a step into the host's part and each stage's (its layers, the
send to the next stage; the embedding, head and sampler on the last), for ``core.serve.pipelined``'s loop, which runs
up to pp batches at once; ``seconds`` is one batch through every stage in turn.

The decodes of a step are priced as one group at their mean context: exact for full attention, where a step's
cache reads and query-key pairs are linear in the contexts; for sliding-window layers it assumes the contexts lie
on one side of the window. Pure Python.
"""

from collections.abc import Callable
from typing import Any

from mha_cli.core.cost.speculative import decode_shapes, draft_seconds, draft_stepper
from mha_cli.core.cost.step import op_seconds
from mha_cli.core.cost.stepper import Stepper
from mha_cli.core.cost.work import (
    Op,
    layer_ops,
    outside_ops,
    prefill_shape,
    sequence_ops,
)

EXACT_TOKENS = 512
"""Token counts up to this are priced exactly; above it on a grid of ``GRID_PER_OCTAVE`` points an octave."""
GRID_PER_OCTAVE = 64
CONTEXT_GRID = 32
"""Decode-only steps are memoised every this many context tokens (``decode_seconds``)."""


class StepCost:
    """Seconds of one engine step of one replica (every pipeline stage, one step overhead) on a profile."""

    def __init__(self, stepper: Stepper) -> None:
        case = stepper.case
        self.stepper, self.profile, self.tp = stepper, stepper.profile, case.tp
        self.layouts = [stepper.layout(index) for index in range(len(stepper.stages))]
        self.absorbed_mla = case.model.attention.mla is not None and case.mla_cache == "absorbed"
        self._layers: dict[int, float] = {}
        self._layer_kernels: dict[int, float] = {}
        """Every stage's layer kernels at a token count priced by ``_layers_at`` (for a prefill's host launches)."""
        self._decodes: dict[tuple[int, int], float] = {}
        self._exact_decodes: dict[tuple[int, int], float] = {}
        """``seconds(rows, context, [])`` by (rows, context), exact: ``exact_decode_seconds``."""
        self.pp = case.pp
        self._stage_layers: dict[int, tuple[float, ...]] = {}
        """Each stage's layer operations and its send to the next, by token count (pipeline parallelism)."""
        self._decode_stages: dict[tuple[int, int], tuple[float, list[float]]] = {}
        spec = case.speculative
        self.per_decode = 1 if spec is None else spec.num_speculative_tokens + 1
        """Tokens a decoding sequence puts in a step: 1, or k + 1 to verify (``core.cost.speculative``)."""
        self._drafts: dict[tuple[int, int], float] = {}
        self._draft_cost: StepCost | None = None
        """The drafter's own step cost (prefill chunks), once needed."""

    def _price(self, ops: list[Op]) -> float:
        """Operations' time plus their kernels' fixed cost (``core.cost.step``'s engine execution)."""
        kernel = self.profile.kernel_overhead_s
        total = 0.0
        for op in self.stepper.placed(ops):
            seconds, _ = op_seconds(op, self.profile, self.tp, self.stepper.scale_out)
            total += op.count * (seconds + op.kernels * kernel)
        return total

    def _layers_at(self, tokens: int) -> float:
        cached = self._layers.get(tokens)
        if cached is None:
            case = self.stepper.case
            ops = [
                op
                for index, stage in enumerate(self.stepper.stages)
                for op in layer_ops(stage, tokens, tp=case.tp, weights=self.stepper.layer_weights(index))
            ]
            cached = self._layers[tokens] = self._price(ops) + self.stepper.send_seconds(tokens)
            self._layer_kernels[tokens] = sum(op.count * op.kernels for op in ops)
        return cached

    def layer_kernels(self, tokens: int) -> float:
        """Every stage's layer kernels at ``tokens`` rows: at the grid point ``layers`` prices from (a step's kernel
        count does not follow its rows, but for the experts an MoE step touches)."""
        if tokens > EXACT_TOKENS:
            spacing = max(1, (1 << (tokens.bit_length() - 1)) // GRID_PER_OCTAVE)
            tokens -= tokens % spacing
        self._layers_at(tokens)
        return self._layer_kernels[tokens]

    def layers(self, tokens: int) -> float:
        """Seconds of every stage's layer operations (and the sends between stages) at ``tokens`` rows."""
        around = _token_grid(tokens)
        if around is None:
            return self._layers_at(tokens)
        low, high, share = around
        below, above = self._layers_at(low), self._layers_at(high)
        return below + (above - below) * share

    def _stage_layers_at(self, tokens: int) -> tuple[float, ...]:
        cached = self._stage_layers.get(tokens)
        if cached is None:
            case, stages = self.stepper.case, self.stepper.stages
            boundary = self.stepper.send_seconds(tokens) / max(1, len(stages) - 1)
            cached = self._stage_layers[tokens] = tuple(
                self._price(layer_ops(stage, tokens, tp=case.tp, weights=self.stepper.layer_weights(index)))
                + (boundary if index < len(stages) - 1 else 0.0)
                for index, stage in enumerate(stages)
            )
        return cached

    def stage_layers(self, tokens: int) -> tuple[float, ...]:
        """``layers`` stage by stage: each stage's layer operations and its send to the next stage (the sends of
        ``Stepper.send_seconds`` shared evenly over the pp - 1 boundaries), on the same grid."""
        around = _token_grid(tokens)
        if around is None:
            return self._stage_layers_at(tokens)
        low, high, share = around
        below, above = self._stage_layers_at(low), self._stage_layers_at(high)
        return tuple(b + (a - b) * share for b, a in zip(below, above, strict=True))

    def stage_seconds(
        self, decodes: int, decode_context: int, chunks: list[tuple[int, int]]
    ) -> tuple[float, list[float]]:
        """One batch of ``seconds``' arguments split as a pipeline runs it: (the host's seconds: the engine's step and
        per-sequence overhead, each stage's device seconds). A stage's: its layers and its send to the next stage
        (``stage_layers``), its attention over the batch's contexts; the last stage's also the embedding, LM head and
        sampler (``outside_ops``, priced once as ``Stepper`` counts them) and the drafter. An eager prompt step's host
        launch floor is shared evenly over the stages (each launches its own layers' operators). Their sum and the host's
        equal ``seconds``, but for the launch floor taken stage by stage."""
        tokens = decodes * self.per_decode + sum(size for size, _ in chunks)
        stages = list(self.stage_layers(tokens))
        for index, layout in enumerate(self.layouts):
            ops: list[Op] = []
            if decodes:
                for shape in decode_shapes(self.stepper, decodes, decode_context):
                    ops += sequence_ops(layout, shape, self.absorbed_mla)
            for size, context in chunks:
                ops += sequence_ops(layout, prefill_shape(size, context=context), self.absorbed_mla and size == 1)
            stages[index] += self._price(ops)
        case = self.stepper.case
        stages[-1] += self._price(outside_ops(self.stepper.stages[0], tokens, decodes * self.per_decode + len(chunks),
                                              tp=case.tp, weight_dtype=case.weight_dtype))  # fmt: skip
        launch = self.stepper.prompt_launch_s(sum(size for size, _ in chunks)) if chunks else 0.0
        if launch:
            floor = self.stepper.eager_ops() * launch / len(stages)
            stages = [max(seconds, floor) for seconds in stages]
        stages[-1] += self.drafting(decodes, decode_context, chunks)
        host = self.profile.step_overhead_s + self.profile.sequence_overhead_s * (decodes + len(chunks))
        return host, stages

    def decode_stages(self, rows: int, context: int) -> tuple[float, list[float]]:
        """``stage_seconds(rows, context, [])``, memoised at every ``CONTEXT_GRID``-th context and interpolated
        between them (as ``decode_seconds``)."""
        below, above, share = _on_grid(self._decode_stages, rows, context, self._stages_of_decodes)
        if above is None:
            return below
        stages = [b + (a - b) * share for b, a in zip(below[1], above[1], strict=True)]
        return below[0] + (above[0] - below[0]) * share, stages

    def decode_seconds(self, rows: int, context: int) -> float:
        """``seconds(rows, context, [])``, memoised at every ``CONTEXT_GRID``-th context and interpolated between
        them (a decode step's time is linear in the context between two such points, but for the rate curves)."""
        below, above, share = _on_grid(self._decodes, rows, context, self._seconds_of_decodes)
        return below if above is None else below + (above - below) * share

    def exact_decode_seconds(self, rows: int, context: int) -> float:
        """``seconds(rows, context, [])`` itself, memoised (no grid): what a step-by-step run prices, to the bit."""
        key = (rows, context)
        cached = self._exact_decodes.get(key)
        if cached is None:
            cached = self._exact_decodes[key] = self.seconds(rows, context, [])
        return cached

    def _stages_of_decodes(self, rows: int, context: int) -> tuple[float, list[float]]:
        return self.stage_seconds(rows, context, [])

    def _seconds_of_decodes(self, rows: int, context: int) -> float:
        return self.seconds(rows, context, [])

    def seconds(self, decodes: int, decode_context: int, chunks: list[tuple[int, int]]) -> float:
        """One step: ``decodes`` sequences' next token each after ``decode_context`` cached tokens (their mean), and
        prefill ``chunks`` of (tokens, tokens cached before the chunk)."""
        tokens = decodes * self.per_decode + sum(size for size, _ in chunks)
        ops: list[Op] = []
        for layout in self.layouts:
            if decodes:
                for shape in decode_shapes(self.stepper, decodes, decode_context):
                    ops += sequence_ops(layout, shape, self.absorbed_mla)
            for size, context in chunks:
                ops += sequence_ops(layout, prefill_shape(size, context=context), self.absorbed_mla and size == 1)
        case = self.stepper.case
        ops += outside_ops(self.stepper.stages[0], tokens, decodes * self.per_decode + len(chunks), tp=case.tp,
                           weight_dtype=case.weight_dtype)  # fmt: skip
        host = self.profile.step_overhead_s + self.profile.sequence_overhead_s * (decodes + len(chunks))
        device = self.layers(tokens) + self._price(ops)
        launch = self.stepper.prompt_launch_s(sum(size for size, _ in chunks)) if chunks else 0.0
        if launch:  # a prompt step outside CUDA graphs waits for the host's launches (Stepper.step)
            device = max(device, self.stepper.eager_ops() * launch)
        return device + host + self.drafting(decodes, decode_context, chunks)

    def drafting(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        """The drafter's seconds (0 without speculative decoding): ``core.cost.speculative.draft_seconds``, memoised
        every ``CONTEXT_GRID`` tokens of context for decodes alone; with prefill ``chunks`` its first pass runs over
        them and the decodes' k + 1 tokens together, priced by the drafter's own ``StepCost``."""
        if self.per_decode == 1 or (not decodes and not chunks):
            return 0.0
        if not chunks:
            key = (decodes, context - context % CONTEXT_GRID)
            cached = self._drafts.get(key)
            if cached is None:
                cached = self._drafts[key] = draft_seconds(self.stepper, decodes, key[1])
            return cached
        if self._draft_cost is None:
            self._draft_cost = StepCost(draft_stepper(self.stepper))
        first = self._draft_cost.seconds(0, 0, [(self.per_decode, context)] * decodes + chunks)
        rest = self._draft_cost.seconds(decodes, context + self.per_decode, []) if decodes else 0.0
        return first + (self.per_decode - 2) * rest


def _on_grid(memo: dict, rows: int, context: int, price: Callable[[int, int], Any]) -> tuple[Any, Any, float]:
    """``price(rows, c)`` at the ``CONTEXT_GRID`` points around ``context``, each priced once into ``memo``: (the
    point at or below, the point above or None when ``context`` is on the grid, ``context``'s share of the way)."""
    low = context - context % CONTEXT_GRID
    below = memo.get((rows, low))
    if below is None:
        below = memo[(rows, low)] = price(rows, low)
    if low == context:
        return below, None, 0.0
    above = memo.get((rows, low + CONTEXT_GRID))
    if above is None:
        above = memo[(rows, low + CONTEXT_GRID)] = price(rows, low + CONTEXT_GRID)
    return below, above, (context - low) / CONTEXT_GRID


def _token_grid(tokens: int) -> tuple[int, int, float] | None:
    """The grid points around ``tokens`` rows (``GRID_PER_OCTAVE`` a power of two above ``EXACT_TOKENS``) and
    ``tokens``' share of the way between them; None where ``tokens`` is priced exactly (small, or on the grid)."""
    if tokens <= EXACT_TOKENS:
        return None
    spacing = max(1, (1 << (tokens.bit_length() - 1)) // GRID_PER_OCTAVE)
    low = tokens - tokens % spacing
    return None if low == tokens else (low, low + spacing, (tokens - low) / spacing)
